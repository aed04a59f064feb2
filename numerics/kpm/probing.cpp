/// @file probing.cpp
/// The probing plan of block_trace.hpp: colouring of the --ldos rows and its start vectors.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "numerics/base/counter_rng.hpp"
#include "numerics/base/dense_eigen.hpp"
#include "numerics/kpm/block_trace.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

/// The classes of one direction: members of a class are >= spacing sites apart (around the
/// ring when periodic).
struct DirectionClasses {
    int extent = 1;
    bool periodic = false;
    int spacing = 0;  ///< distance x reach; 0: one class (no hop changes this coordinate)
    int chunks = 1;   ///< periodic: the ring cut into this many chunks of >= spacing sites

    DirectionClasses(int l, bool p, int reach, int distance) : extent(l), periodic(p)
    {
        spacing = reach == 0 || l == 1 ? 0 : static_cast<int>(std::min<long long>(1LL * reach * distance, l));
        if (periodic && spacing > 0) chunks = std::max(1, l / spacing);
    }
    int count() const
    {
        if (spacing == 0) return 1;
        if (!periodic) return spacing;
        return chunks <= 1 ? extent : (extent + chunks - 1) / chunks;  // the longest chunk
    }
    int of(int x) const
    {
        if (spacing == 0) return 0;
        if (!periodic) return x % spacing;
        if (chunks <= 1) return x;
        // Chunk k starts at floor(k L / p): consecutive starts are >= floor(L / p) >= spacing
        // apart, also across the wrap, so equal offsets in two chunks are >= spacing apart.
        auto start = [&](long long k) { return static_cast<int>(k * extent / chunks); };
        long long k = 1LL * x * chunks / extent;
        while (k + 1 < chunks && start(k + 1) <= x) ++k;
        while (start(k) > x) --k;
        return x - start(k);
    }
};

class ProbingPlan final : public StartVectorPlan {
public:
    ProbingPlan(ProbingColours c, global_index n, int draws, int moments, std::uint64_t seed,
                std::vector<double> filter_weights)
        : colours_(std::move(c)), n_(n), draws_(draws), moments_(moments), stream_(splitmix64(seed, 7))
    {
        members_.resize(static_cast<size_t>(colours_.num_colours));
        for (size_t i = 0; i < colours_.rows.size(); ++i)
            members_[static_cast<size_t>(colours_.colour[i])].push_back({colours_.rows[i], static_cast<std::int64_t>(i)});
        if (!filter_weights.empty()) {
            filter_.emplace();
            filter_->weights = std::move(filter_weights);
            filter_->rows = colours_.rows;
            filter_->offset = colours_.rows.size() * static_cast<size_t>(probing_trace_moments(moments_));
        }
    }
    global_index num_columns() const override { return global_index(colours_.num_colours) * draws_; }
    std::int64_t num_slots() const override
    {
        const auto rows = static_cast<std::int64_t>(colours_.rows.size());
        return rows + (filter_ ? probing_filter_slots(rows, num_columns(), moments_) : 0);
    }
    const Filter* filter() const override { return filter_ ? &*filter_ : nullptr; }
    std::int64_t slot(global_index) const override { return 0; }
    double divisor() const override { return draws_; }
    int read_moments() const override { return moments_; }
    void fill(BlockVector& block, global_index first_column, global_index row_begin) const override
    {
        fill_columns(block, first_column, [&](int c, global_index col) {
            // A row repeated in the selection is set (not added) once per colour.
            for (const Read& r : reads(col)) set_entry(block, row_begin, r.row, c, r.phase);
        });
    }
    std::vector<Read> reads(global_index column) const override
    {
        const global_index draw = column / colours_.num_colours;
        std::vector<Read> out;
        for (const auto& [row, slot] : members_[static_cast<size_t>(column % colours_.num_colours)]) {
            const double angle = 2.0 * M_PI * uniform(stream_, static_cast<std::uint64_t>(draw * n_ + row));
            out.push_back({row, slot, complex_type(std::cos(angle), std::sin(angle))});
        }
        return out;
    }

private:
    ProbingColours colours_;
    global_index n_;
    int draws_;
    int moments_;
    std::uint64_t stream_;
    std::vector<std::vector<std::pair<global_index, std::int64_t>>> members_;  // (row, slot) per colour
    std::optional<Filter> filter_;
};

}  // namespace

ProbingColours colour_rows(const BlockStencil& lattice, std::vector<global_index> rows, int distance)
{
    TOPOKPM_USER_REQUIRE(distance >= 1 && distance <= kMaxProbingDistance, "{probing_distance} ", distance,
                         ": must be from 1 to ", kMaxProbingDistance, " (hops of H between rows of one colour)");
    TOPOKPM_USER_REQUIRE(!rows.empty(), "{ldos}: the selection holds no rows");
    const global_index n = lattice.num_rows();
    for (const global_index j : rows)
        TOPOKPM_USER_REQUIRE(j >= 0 && j < n, "{ldos}: row ", j, " outside the allowed range 0 .. ", n - 1, " (N = ", n, ")");
    int reach[3] = {0, 0, 0};
    for (const StencilTerm& t : lattice.terms) {
        reach[0] = std::max(reach[0], std::abs(t.dx));
        reach[1] = std::max(reach[1], std::abs(t.dy));
        reach[2] = std::max(reach[2], std::abs(t.dz));
    }
    const DirectionClasses cx(lattice.nx, lattice.periodic[0], reach[0], distance);
    const DirectionClasses cy(lattice.ny, lattice.periodic[1], reach[1], distance);
    const DirectionClasses cz(lattice.nz, lattice.periodic[2], reach[2], distance);
    const global_index b = lattice.orbitals;
    std::vector<global_index> raw(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        const global_index site = rows[i] / b, o = rows[i] % b;
        const int z = static_cast<int>(site % lattice.nz);
        const int y = static_cast<int>((site / lattice.nz) % lattice.ny);
        const int x = static_cast<int>(site / (global_index(lattice.nz) * lattice.ny));
        raw[i] = o + b * (cx.of(x) + global_index(cx.count()) * (cy.of(y) + global_index(cy.count()) * cz.of(z)));
    }
    // Number the colours in use, in the order of their raw index.
    std::vector<global_index> used = raw;
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    ProbingColours out;
    out.num_colours = static_cast<int>(used.size());
    out.distance = distance;
    out.colour.resize(rows.size());
    for (size_t i = 0; i < rows.size(); ++i)
        out.colour[i] = static_cast<std::int32_t>(std::lower_bound(used.begin(), used.end(), raw[i]) - used.begin());
    // Distinct rows per colour (a row repeated in the selection is one entry of its vector).
    std::vector<size_t> order(rows.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&](size_t a, size_t c) { return rows[a] < rows[c]; });
    std::vector<global_index> per_colour(used.size(), 0);
    for (size_t k = 0; k < order.size(); ++k)
        if (k == 0 || rows[order[k]] != rows[order[k - 1]])
            out.max_rows_per_colour = std::max(out.max_rows_per_colour, ++per_colour[size_t(out.colour[order[k]])]);
    out.one_row_per_colour = out.max_rows_per_colour == 1;
    out.rows = std::move(rows);
    return out;
}

std::unique_ptr<StartVectorPlan> probing_plan(ProbingColours colours, global_index num_rows, int draws,
                                              int num_moments, std::uint64_t vector_seed,
                                              std::vector<double> filter_weights)
{
    TOPOKPM_USER_REQUIRE(filter_weights.empty() || filter_weights.size() == static_cast<size_t>(num_moments),
                         "probing filter of ", filter_weights.size(), " weights for {moments} ", num_moments);
    TOPOKPM_USER_REQUIRE(draws >= 1 && draws <= 1000, "{probing_draws} ", draws, ": must be from 1 to 1000");
    TOPOKPM_USER_REQUIRE(num_moments >= 2, "{moments} ", num_moments, ": must be >= 2");
    TOPOKPM_REQUIRE(colours.num_colours >= 1 && colours.colour.size() == colours.rows.size(),
                    "probing plan without coloured rows");
    return std::make_unique<ProbingPlan>(std::move(colours), num_rows, draws, num_moments, vector_seed,
                                         std::move(filter_weights));
}

std::int64_t probing_filter_slots(std::int64_t rows, global_index columns, int num_moments)
{
    const std::int64_t per_slot = probing_trace_moments(num_moments);
    return (2 * rows * columns + per_slot - 1) / per_slot;
}

ProbingNystrom probing_nystrom(const StartVectorPlan& plan, const std::vector<double>& slot_moments)
{
    const StartVectorPlan::Filter* f = plan.filter();
    TOPOKPM_REQUIRE(f != nullptr, "probing_nystrom of a plan without a filter");
    const size_t rows = f->rows.size();
    const auto c = static_cast<size_t>(plan.num_columns());
    TOPOKPM_REQUIRE(slot_moments.size() >= f->offset + 2 * rows * c, "probing_nystrom: ", slot_moments.size(),
                    " slot moments hold no filtered block of ", rows, " x ", c);
    // F (undivided: divisor() scales F and V^H F alike, the estimate by 1 / divisor).
    const double scale = plan.divisor();
    auto filtered = [&](size_t i, size_t col) {
        const double* z = slot_moments.data() + f->offset + 2 * (i * c + col);
        return complex_type(scale * z[0], scale * z[1]);
    };
    // A = V^H F, column-major: A(a, b) = sum over the rows i of column a of conj(s_i) F(i, b).
    std::vector<complex_type> a(c * c, complex_type(0.0, 0.0));
    for (size_t col = 0; col < c; ++col)
        for (const StartVectorPlan::Read& r : plan.reads(static_cast<global_index>(col)))
            for (size_t b = 0; b < c; ++b) a[b * c + col] += std::conj(r.phase) * filtered(static_cast<size_t>(r.slot), b);
    for (size_t i = 0; i < c; ++i)  // Hermitian part (A is Hermitian up to rounding)
        for (size_t j = 0; j <= i; ++j) {
            const complex_type h = 0.5 * (a[j * c + i] + std::conj(a[i * c + j]));
            a[j * c + i] = h;
            a[i * c + j] = std::conj(h);
        }
    const HermitianEigensystem e = hermitian_eigensystem(a, static_cast<int>(c));
    const double largest = e.values.empty() ? 0.0 : std::max(e.values.back(), 0.0);
    ProbingNystrom out;
    out.columns = static_cast<int>(c);
    std::vector<size_t> kept;
    for (size_t k = 0; k < c; ++k) {
        if (e.values[k] > 1e-10 * largest) kept.push_back(k);
        if (e.values[k] > 1e-3 * largest) ++out.rank;
    }
    out.spans = largest > 0.0 && 2 * out.rank <= out.columns;
    out.diagonal.assign(rows, 0.0);
    for (size_t i = 0; i < rows; ++i) {
        double d = 0.0;
        for (const size_t k : kept) {
            complex_type z(0.0, 0.0);  // (F_i u_k) / sqrt(lambda_k)
            for (size_t b = 0; b < c; ++b) z += filtered(i, b) * e.vectors[k * c + b];
            d += std::norm(z) / e.values[k];
        }
        out.diagonal[i] = d;
    }
    double trace = 0.0, kept_sum = 0.0;
    for (const double lambda : e.values) trace += lambda;
    for (const double d : out.diagonal) kept_sum += d;
    if (trace > 0.0) out.trace_defect = 1.0 - kept_sum / (trace / scale);
    return out;
}

double probing_filter_rank_estimate(const std::vector<double>& damping, global_index rows)
{
    TOPOKPM_REQUIRE(!damping.empty() && rows >= 0, "probing_filter_rank_estimate of ", damping.size(), " moments");
    const int m = static_cast<int>(damping.size());
    // f at x = cos(pi / 2 + phi) = -sin(phi): only the even n count (T_n(0) = 0 for odd n),
    // and there T_n(0) T_n(x) = cos(n phi); f is even in phi. Cells of pi / (16 M) in phi,
    // well inside the kernel's resolution (~pi / M), from the peak outwards; each cell whose
    // centre is above the threshold adds its width in x. Jackson's tail has ripples about
    // the threshold, so the scan ends only after 256 cells (16 pi / M) below it in a row.
    auto f = [&](double phi) {
        double s = damping[0];
        for (int n = 2; n < m; n += 2) s += 2.0 * damping[static_cast<size_t>(n)] * std::cos(n * phi);
        return s;
    };
    const double peak = f(0.0), step = M_PI / (16.0 * m);
    double share = 0.0;  // of [-1, 1]: one side's width in x
    for (int k = 0, below = 0; (k + 1) * step <= M_PI / 2 && below < 256; ++k) {
        const double phi = (k + 0.5) * step;
        if (f(phi) > 1e-3 * peak) {
            share += std::sin(phi + step / 2) - std::sin(phi - step / 2);
            below = 0;
        } else {
            ++below;
        }
    }
    return static_cast<double>(rows) * share;
}

int smallest_probing_distance(const BlockStencil& lattice, const std::vector<global_index>& rows, global_index colours)
{
    int hi = std::min(kMaxProbingDistance, std::max({lattice.nx, lattice.ny, lattice.nz, 1}));
    auto enough = [&](int d) { return colour_rows(lattice, rows, d).num_colours >= colours; };
    if (!enough(hi)) return hi;
    int lo = 0;  // invariant: enough(hi), and lo == 0 or !enough(lo)
    while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        (enough(mid) ? hi : lo) = mid;
    }
    return hi;
}

int probing_trace_moments(int num_moments) { return std::max(2, 2 * num_moments - 2); }

}  // namespace topokpm::numerics
