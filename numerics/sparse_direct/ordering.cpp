#include "numerics/sparse_direct/ordering.hpp"

#include <metis.h>

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>

#include "runtime/base/error.hpp"

namespace topokpm::sparse_direct {

Graph symmetric_graph(const CsrMatrix& a)
{
    const global_index n = a.n;
    TOPOKPM_REQUIRE(n >= 0 && static_cast<global_index>(a.row_ptr.size()) == n + 1, "row_ptr has ",
                    a.row_ptr.size(), " entries for n = ", n);
    TOPOKPM_REQUIRE(a.row_ptr[0] == 0 && a.row_ptr[n] == a.nnz() &&
                        static_cast<global_index>(a.values.size()) == a.nnz(),
                    "row_ptr/cols/values sizes disagree");
    std::vector<global_index> degree(n, 0);
    for (global_index i = 0; i < n; ++i) {
        TOPOKPM_REQUIRE(a.row_ptr[i] <= a.row_ptr[i + 1], "row_ptr decreases at row ", i);
        for (global_index p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
            const global_index j = a.cols[p];
            TOPOKPM_REQUIRE(j >= 0 && j < n, "column ", j, " of row ", i, " outside [0, ", n, ")");
            TOPOKPM_REQUIRE(p == a.row_ptr[i] || a.cols[p - 1] < j, "columns of row ", i, " not ascending");
            if (j != i) { ++degree[i]; ++degree[j]; }
        }
    }
    // Both directions of every entry, then sort and deduplicate each list.
    Graph g;
    g.n = n;
    g.row_ptr.assign(n + 1, 0);
    for (global_index i = 0; i < n; ++i) g.row_ptr[i + 1] = g.row_ptr[i] + degree[i];
    g.cols.resize(g.row_ptr[n]);
    std::vector<global_index> fill(g.row_ptr.begin(), g.row_ptr.end() - 1);
    for (global_index i = 0; i < n; ++i)
        for (global_index p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
            const global_index j = a.cols[p];
            if (j != i) { g.cols[fill[i]++] = j; g.cols[fill[j]++] = i; }
        }
    global_index out = 0;
    std::vector<global_index> row_ptr(n + 1, 0);
    for (global_index v = 0; v < n; ++v) {
        auto b = g.cols.begin() + g.row_ptr[v], e = g.cols.begin() + g.row_ptr[v + 1];
        std::sort(b, e);
        e = std::unique(b, e);
        for (auto it = b; it != e; ++it) g.cols[out++] = *it;
        row_ptr[v + 1] = out;
    }
    g.cols.resize(out);
    g.row_ptr = std::move(row_ptr);
    return g;
}

Graph site_graph(const Graph& g, int b)
{
    TOPOKPM_REQUIRE(b >= 1 && g.n % b == 0, "site size ", b, " does not divide ", g.n);
    Graph q;
    q.n = g.n / b;
    q.row_ptr.assign(q.n + 1, 0);
    std::vector<global_index> mark(q.n, -1);
    for (global_index s = 0; s < q.n; ++s) {
        mark[s] = s;
        for (global_index v = s * b; v < (s + 1) * b; ++v)
            for (global_index p = g.row_ptr[v]; p < g.row_ptr[v + 1]; ++p) {
                const global_index t = g.cols[p] / b;
                if (mark[t] != s) { mark[t] = s; q.cols.push_back(t); }
            }
        std::sort(q.cols.begin() + q.row_ptr[s], q.cols.end());
        q.row_ptr[s + 1] = static_cast<global_index>(q.cols.size());
    }
    return q;
}

namespace {

std::vector<global_index> metis_ordering(const Graph& g, int site_size)
{
    TOPOKPM_USER_REQUIRE(site_size >= 1 && g.n % site_size == 0, "{site_size} = ", site_size,
                         " must be >= 1 and divide the matrix size ", g.n);
    // METIS sees the graph of the sites: orbitals of a site stay together and the graph is
    // site_size times smaller.
    const Graph sites = site_graph(g, site_size);
    const global_index ns = sites.n;
    if (ns == 0) return {};
    TOPOKPM_USER_REQUIRE(ns < std::numeric_limits<idx_t>::max() / 64 &&
                             sites.row_ptr[ns] < std::numeric_limits<idx_t>::max(),
                         "matrix size ", g.n, " exceeds METIS's 32-bit index range");
    std::vector<idx_t> xadj(sites.row_ptr.begin(), sites.row_ptr.end()), adj(sites.cols.begin(), sites.cols.end());
    std::vector<idx_t> order(ns), inverse(ns);
    idx_t nv = static_cast<idx_t>(ns);
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_NUMBERING] = 0;
    if (adj.empty()) adj.push_back(0);  // METIS reads adjncy[0] even for an edgeless graph
    const int status = METIS_NodeND(&nv, xadj.data(), adj.data(), nullptr, options, order.data(), inverse.data());
    if (status != METIS_OK)
        throw ResourceError(detail::concat("METIS_NodeND failed (status ", status, ") on a graph of ", ns, " sites"));
    // METIS: row i of the permuted matrix is row order[i] of the original.
    std::vector<global_index> perm(g.n);
    for (global_index i = 0; i < ns; ++i)
        for (int o = 0; o < site_size; ++o) perm[i * site_size + o] = static_cast<global_index>(order[i]) * site_size + o;
    return perm;
}

struct Box {
    std::array<int, 3> lo, hi;   // sites lo <= c < hi per direction
    std::array<bool, 3> wraps;   // the box spans a periodic direction whole (no cut yet)
};

void dissect(const LatticeGeometry& L, const Box& box, std::vector<global_index>& sites)
{
    const std::array<int, 3> ext = {box.hi[0] - box.lo[0], box.hi[1] - box.lo[1], box.hi[2] - box.lo[2]};
    auto site_of = [&](int x, int y, int z) {
        return static_cast<global_index>(z) + L.nz * (static_cast<global_index>(y) + static_cast<global_index>(L.ny) * x);
    };
    auto emit = [&](const Box& b) {
        for (int x = b.lo[0]; x < b.hi[0]; ++x)
            for (int y = b.lo[1]; y < b.hi[1]; ++y)
                for (int z = b.lo[2]; z < b.hi[2]; ++z) sites.push_back(site_of(x, y, z));
    };
    // Cut where the separator is smallest (one plane, two across a direction that still wraps;
    // ties to the longest direction); a box too small to gain from a cut is a leaf.
    int d = -1;
    long best = 0;
    for (int k = 0; k < 3; ++k) {
        if (ext[k] < 3 || (box.wraps[k] && ext[k] < 4)) continue;
        const long sep_sites = (box.wraps[k] ? 2L : 1L) * ext[(k + 1) % 3] * ext[(k + 2) % 3];
        if (d < 0 || sep_sites < best || (sep_sites == best && ext[k] > ext[d])) { d = k; best = sep_sites; }
    }
    const long volume = static_cast<long>(ext[0]) * ext[1] * ext[2];
    if (d < 0 || volume <= 8) { emit(box); return; }
    const int mid = box.lo[d] + ext[d] / 2;
    Box left = box, right = box, sep = box;
    left.wraps[d] = right.wraps[d] = false;
    if (box.wraps[d] && ext[d] >= 4) {
        // Periodic: the planes lo and mid together cut the ring into two halves.
        left.lo[d] = box.lo[d] + 1; left.hi[d] = mid;
        right.lo[d] = mid + 1;
        dissect(L, left, sites);
        dissect(L, right, sites);
        Box s0 = box; s0.hi[d] = box.lo[d] + 1;
        Box s1 = box; s1.lo[d] = mid; s1.hi[d] = mid + 1;
        emit(s0);
        emit(s1);
        return;
    }
    left.hi[d] = mid;
    right.lo[d] = mid + 1;
    sep.lo[d] = mid; sep.hi[d] = mid + 1;
    dissect(L, left, sites);
    dissect(L, right, sites);
    emit(sep);
}

}  // namespace

std::vector<global_index> lattice_nested_dissection(const LatticeGeometry& L)
{
    TOPOKPM_USER_REQUIRE(L.nx >= 1 && L.ny >= 1 && L.nz >= 1 && L.orbitals >= 1, "{lattice} ", L.nx, "x", L.ny,
                         "x", L.nz, " with ", L.orbitals, " orbitals: every extent must be >= 1");
    Box box;
    box.lo = {0, 0, 0};
    box.hi = {L.nx, L.ny, L.nz};
    for (int k = 0; k < 3; ++k) box.wraps[k] = L.periodic[k] && box.hi[k] > 2;
    std::vector<global_index> sites;
    sites.reserve(static_cast<std::size_t>(L.nx) * L.ny * L.nz);
    dissect(L, box, sites);
    std::vector<global_index> perm;
    perm.reserve(sites.size() * L.orbitals);
    for (global_index s : sites)
        for (int o = 0; o < L.orbitals; ++o) perm.push_back(s * L.orbitals + o);
    return perm;
}

std::vector<global_index> fill_reducing_ordering(const Graph& g, const AnalyseOptions& options)
{
    switch (options.ordering) {
    case Ordering::Natural: {
        std::vector<global_index> perm(g.n);
        std::iota(perm.begin(), perm.end(), global_index{0});
        return perm;
    }
    case Ordering::Metis:
        return metis_ordering(g, options.site_size);
    case Ordering::LatticeNestedDissection: {
        TOPOKPM_USER_REQUIRE(options.lattice.has_value(), "{lattice} is required by the lattice nested-dissection ordering");
        const LatticeGeometry& L = *options.lattice;
        const global_index rows = static_cast<global_index>(L.nx) * L.ny * L.nz * L.orbitals;
        TOPOKPM_USER_REQUIRE(rows == g.n, "{lattice} ", L.nx, "x", L.ny, "x", L.nz, " x ", L.orbitals,
                             " orbitals has ", rows, " rows, the matrix ", g.n);
        return lattice_nested_dissection(L);
    }
    }
    throw InputError("{ordering}: unknown value");
}

}  // namespace topokpm::sparse_direct
