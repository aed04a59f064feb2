#include "numerics/sparse_direct/sparse_lu.hpp"

#include <omp.h>

#include <algorithm>
#include <numeric>

#include "numerics/sparse_direct/ordering.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::sparse_direct {

CsrMatrix csr_from_rows(const RowSource& source)
{
    CsrMatrix a;
    a.n = source.num_rows();
    a.row_ptr.assign(a.n + 1, 0);
    std::vector<global_index> cols(source.max_row_length());
    std::vector<complex_double> vals(source.max_row_length());
    for (global_index i = 0; i < a.n; ++i) {
        const int len = source.row(i, cols.data(), vals.data());
        a.cols.insert(a.cols.end(), cols.begin(), cols.begin() + len);
        a.values.insert(a.values.end(), vals.begin(), vals.begin() + len);
        a.row_ptr[i + 1] = a.nnz();
    }
    return a;
}

// ------------------------------------------------------------------------------------------
// Analyse phase
// ------------------------------------------------------------------------------------------

SparseLU::SparseLU(const CsrMatrix& a, const AnalyseOptions& options) : n_(a.n), a_(a)
{
    TOPOKPM_USER_REQUIRE(options.max_supernode >= 1, "{max_supernode} = ", options.max_supernode, " must be >= 1");
    TOPOKPM_USER_REQUIRE(options.relax_columns >= 0 && options.relax_zero_fraction >= 0.0 &&
                             options.relax_zero_fraction <= 1.0,
                         "{relax_columns} = ", options.relax_columns, " must be >= 0 and {relax_zero_fraction} = ",
                         options.relax_zero_fraction, " in [0, 1]");
    TOPOKPM_USER_REQUIRE(options.parallel_chunk >= 1, "{parallel_chunk} = ", options.parallel_chunk, " must be >= 1");
    chunk_ = options.parallel_chunk;
    const Graph rows_graph = symmetric_graph(a_);
    // The symbolic phase runs on sites (`b` consecutive rows kept together by the ordering):
    // supernodes are unions of whole sites, so the orbitals of a site, which the etree of
    // the rows often leaves as separate single-column leaves, share one dense block.
    const int b = options.ordering == Ordering::LatticeNestedDissection && options.lattice
                      ? options.lattice->orbitals
                      : options.site_size;
    TOPOKPM_USER_REQUIRE(b >= 1 && n_ % b == 0, "{site_size} = ", b, " must be >= 1 and divide the matrix size ", n_);
    const std::vector<global_index> row_order = fill_reducing_ordering(rows_graph, options);
    TOPOKPM_REQUIRE(static_cast<global_index>(row_order.size()) == n_, "ordering of ", row_order.size(),
                    " rows for n = ", n_);
    const global_index N = n_ / b;
    std::vector<global_index> order(N), inv(N, -1);
    for (global_index p = 0; p < N; ++p) {
        order[p] = row_order[p * b] / b;
        TOPOKPM_REQUIRE(row_order[p * b] % b == 0 && order[p] < N && inv[order[p]] < 0,
                        "ordering is not a permutation of whole sites");
        inv[order[p]] = p;
        for (int o = 1; o < b; ++o)
            TOPOKPM_REQUIRE(row_order[p * b + o] == row_order[p * b] + o, "ordering splits site ", order[p]);
    }
    const Graph g0 = site_graph(rows_graph, b);

    // Elimination tree of the permuted pattern (Liu's algorithm with path compression).
    auto neighbours = [&](global_index p, auto&& visit) {  // in permuted numbering
        const global_index v = order[p];
        for (global_index q = g0.row_ptr[v]; q < g0.row_ptr[v + 1]; ++q) visit(inv[g0.cols[q]]);
    };
    std::vector<global_index> parent(N, -1), ancestor(N, -1);
    for (global_index j = 0; j < N; ++j)
        neighbours(j, [&](global_index i) {
            if (i >= j) return;
            global_index r = i;
            while (ancestor[r] != -1 && ancestor[r] != j) {
                const global_index next = ancestor[r];
                ancestor[r] = j;
                r = next;
            }
            if (ancestor[r] == -1) { ancestor[r] = j; parent[r] = j; }
        });

    // Postorder the tree (children in ascending order) so that every subtree, and so every
    // supernode, is a contiguous range of columns.
    std::vector<global_index> head(N, -1), next(N, -1), post;
    post.reserve(N);
    for (global_index j = N - 1; j >= 0; --j)
        if (parent[j] != -1) { next[j] = head[parent[j]]; head[parent[j]] = j; }
    std::vector<global_index> stack;
    for (global_index root = 0; root < N; ++root) {
        if (parent[root] != -1) continue;
        stack.push_back(root);
        while (!stack.empty()) {
            const global_index v = stack.back();
            if (head[v] != -1) {  // descend into the next unvisited child
                const global_index c = head[v];
                head[v] = next[c];
                stack.push_back(c);
            } else {
                post.push_back(v);
                stack.pop_back();
            }
        }
    }
    std::vector<global_index> post_inv(N);
    for (global_index k = 0; k < N; ++k) post_inv[post[k]] = k;
    perm_.resize(N);
    iperm_.resize(N);
    parent_.assign(N, -1);
    for (global_index k = 0; k < N; ++k) {
        perm_[k] = order[post[k]];
        iperm_[perm_[k]] = k;
        if (parent[post[k]] != -1) parent_[k] = post_inv[parent[post[k]]];
    }
    auto pneighbours = [&](global_index p, auto&& visit) {  // final permuted numbering
        const global_index v = perm_[p];
        for (global_index q = g0.row_ptr[v]; q < g0.row_ptr[v + 1]; ++q) visit(iperm_[g0.cols[q]]);
    };

    // Column counts of L (diagonal included) from the row subtrees: row i of L is the union of
    // the tree paths from each k < i with A_ik != 0 up to i.
    std::vector<global_index> colcount(N, 1), mark(N, -1);
    for (global_index i = 0; i < N; ++i) {
        mark[i] = i;
        pneighbours(i, [&](global_index k) {
            for (global_index j = k; j < i && mark[j] != i; j = parent_[j]) {
                mark[j] = i;
                ++colcount[j];
            }
        });
    }

    const global_index max_sites = std::max(1, options.max_supernode / b);
    const global_index relax_sites = options.relax_columns / b;
    // Fundamental supernodes: j+1 continues j's supernode when struct(L_j) = {j} ∪ struct(L_{j+1}).
    std::vector<global_index> fbegin;
    for (global_index j = 0; j < N; ++j)
        if (j == 0 || !(parent_[j - 1] == j && colcount[j - 1] == colcount[j] + 1 &&
                        j - fbegin.back() < max_sites))
            fbegin.push_back(j);
    const global_index nf = static_cast<global_index>(fbegin.size());
    fbegin.push_back(N);

    // Relaxed amalgamation: merge supernode s into its parent p when p directly follows s.
    std::vector<global_index> fsn(N);
    for (global_index s = 0; s < nf; ++s)
        for (global_index j = fbegin[s]; j < fbegin[s + 1]; ++j) fsn[j] = s;
    std::vector<global_index> first(fbegin.begin(), fbegin.end() - 1), ncols(nf), below(nf);
    std::vector<double> zeros(nf, 0.0);
    std::vector<char> alive(nf, 1);
    for (global_index s = 0; s < nf; ++s) {
        ncols[s] = fbegin[s + 1] - fbegin[s];
        below[s] = colcount[fbegin[s + 1] - 1] - 1;
    }
    for (global_index s = 0; s + 1 < nf; ++s) {
        const global_index last = fbegin[s + 1] - 1;
        if (parent_[last] == -1 || fsn[parent_[last]] != s + 1) continue;
        const global_index p = s + 1;
        const global_index nc = ncols[s] + ncols[p];
        if (nc > max_sites) continue;
        const double merged_zeros = zeros[s] + zeros[p] +
                                    static_cast<double>(ncols[s]) * static_cast<double>(ncols[p] + below[p] - below[s]);
        const double entries = 0.5 * static_cast<double>(nc) * static_cast<double>(nc + 1) +
                               static_cast<double>(nc) * static_cast<double>(below[p]);
        if (nc <= relax_sites || merged_zeros <= options.relax_zero_fraction * entries) {
            alive[s] = 0;
            first[p] = first[s];
            ncols[p] = nc;
            zeros[p] = merged_zeros;
        }
    }
    sn_begin_.clear();
    for (global_index s = 0; s < nf; ++s)
        if (alive[s]) sn_begin_.push_back(first[s]);
    const global_index ns = static_cast<global_index>(sn_begin_.size());
    sn_begin_.push_back(N);
    sn_of_.resize(N);
    for (global_index s = 0; s < ns; ++s)
        for (global_index j = sn_begin_[s]; j < sn_begin_[s + 1]; ++j) sn_of_[j] = s;

    // Row structure below each supernode: A's entries below it and its children's structures.
    sn_rows_.assign(ns, {});
    std::vector<std::vector<global_index>> children(ns);
    std::fill(mark.begin(), mark.end(), -1);
    for (global_index s = 0; s < ns; ++s) {
        const global_index end = sn_begin_[s + 1];
        auto& rows = sn_rows_[s];
        for (global_index j = sn_begin_[s]; j < end; ++j)
            pneighbours(j, [&](global_index i) {
                if (i >= end && mark[i] != s) { mark[i] = s; rows.push_back(i); }
            });
        for (global_index c : children[s])
            for (global_index i : sn_rows_[c])
                if (i >= end && mark[i] != s) { mark[i] = s; rows.push_back(i); }
        std::sort(rows.begin(), rows.end());
        TOPOKPM_REQUIRE(static_cast<global_index>(rows.size()) == colcount[end - 1] - 1, "supernode ", s, " has ",
                        rows.size(), " rows below, its last column count says ", colcount[end - 1] - 1);
        if (parent_[end - 1] != -1) children[sn_of_[parent_[end - 1]]].push_back(s);
    }

    // Expand sites to rows.
    {
        std::vector<global_index> site_perm = std::move(perm_);
        perm_.resize(n_);
        iperm_.resize(n_);
        for (global_index k = 0; k < N; ++k)
            for (int o = 0; o < b; ++o) {
                perm_[k * b + o] = site_perm[k] * b + o;
                iperm_[perm_[k * b + o]] = k * b + o;
            }
        for (auto& v : sn_begin_) v *= b;
        for (auto& rows : sn_rows_) {
            std::vector<global_index> expanded;
            expanded.reserve(rows.size() * b);
            for (global_index r : rows)
                for (int o = 0; o < b; ++o) expanded.push_back(r * b + o);
            rows = std::move(expanded);
        }
        sn_of_.resize(n_);
        for (std::size_t k = 0; k + 1 < sn_begin_.size(); ++k)
            for (global_index j = sn_begin_[k]; j < sn_begin_[k + 1]; ++j) sn_of_[j] = static_cast<global_index>(k);
    }

    // Where each entry of A lands in the panels (the same for every shift z).
    entry_sn_.resize(a_.nnz());
    entry_offset_.resize(a_.nnz());
    entry_in_u_.resize(a_.nnz());
    for (global_index i = 0; i < n_; ++i)
        for (global_index q = a_.row_ptr[i]; q < a_.row_ptr[i + 1]; ++q) {
            const global_index pi = iperm_[i], pj = iperm_[a_.cols[q]];
            const global_index ti = sn_of_[pi], tj = sn_of_[pj];
            if (ti >= tj) {  // L panel of tj (diagonal block included)
                const global_index nc = sn_begin_[tj + 1] - sn_begin_[tj];
                const auto& r = sn_rows_[tj];
                global_index row;
                if (pi < sn_begin_[tj + 1]) {
                    row = pi - sn_begin_[tj];
                } else {
                    const auto it = std::lower_bound(r.begin(), r.end(), pi);
                    TOPOKPM_REQUIRE(it != r.end() && *it == pi, "entry (", pi, ", ", pj, ") outside the structure of L");
                    row = nc + (it - r.begin());
                }
                entry_sn_[q] = tj;
                entry_in_u_[q] = 0;
                entry_offset_[q] = row + (pj - sn_begin_[tj]) * (nc + static_cast<global_index>(r.size()));
            } else {  // U panel of ti
                const global_index nc = sn_begin_[ti + 1] - sn_begin_[ti];
                const auto& r = sn_rows_[ti];
                const auto it = std::lower_bound(r.begin(), r.end(), pj);
                TOPOKPM_REQUIRE(it != r.end() && *it == pj, "entry (", pi, ", ", pj, ") outside the structure of U");
                entry_sn_[q] = ti;
                entry_in_u_[q] = 1;
                entry_offset_[q] = (pi - sn_begin_[ti]) + (it - r.begin()) * nc;
            }
        }
    compute_split_points();
}

global_index SparseLU::factor_nonzeros() const
{
    global_index total = 0;
    for (std::size_t s = 0; s + 1 < sn_begin_.size(); ++s) {
        const global_index nc = sn_begin_[s + 1] - sn_begin_[s], m = sn_rows_[s].size();
        total += nc * nc + 2 * nc * m;
    }
    return total;
}

double SparseLU::factor_memory_bytes() const
{
    // The layout of factorize()'s arena: L panel (nc + m) x nc, U panel nc x m; a work array
    // of m x chunk per thread.
    double entries = 0.0;
    for (std::size_t s = 0; s + 1 < sn_begin_.size(); ++s) {
        const double nc = static_cast<double>(sn_begin_[s + 1] - sn_begin_[s]);
        const double m = static_cast<double>(sn_rows_[s].size());
        entries += (nc + m) * nc + nc * m;
    }
    return 16.0 * (entries + static_cast<double>(omp_get_max_threads()) * static_cast<double>(update_work_size()));
}

double SparseLU::factor_flops() const
{
    double flops = 0.0;
    for (std::size_t s = 0; s + 1 < sn_begin_.size(); ++s) {
        const double nc = static_cast<double>(sn_begin_[s + 1] - sn_begin_[s]);
        const double m = static_cast<double>(sn_rows_[s].size());
        // complex multiply-adds: diagonal LU nc^3/3, two triangular solves m nc^2, update m^2 nc
        flops += 8.0 * (nc * nc * nc / 3.0 + m * nc * nc + m * m * nc);
    }
    return flops;
}
}  // namespace topokpm::sparse_direct
