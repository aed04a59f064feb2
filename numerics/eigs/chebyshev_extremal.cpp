#include "numerics/eigs/chebyshev_extremal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "numerics/base/counter_rng.hpp"
#include "numerics/eigs/columns.hpp"
#include "numerics/eigs/subspace.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/lanczos/lanczos.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

/// X := T_d((H - center) / half) X, strip by strip (registered widths): v_1 = Ht v_0,
/// v_{j+1} = 2 Ht v_j - v_{j-1}, one augmented sweep per degree.
void chebyshev_filter(const Operator& op, double center, double half, int degree, Columns& x, std::int64_t& matvecs)
{
    op.for_each_strip(x.cols, [&](int first, int w) {
        BlockVector a(x.n, w), b(x.n, w);
        to_block(x, first, a);
        op.apply(a, b, AugmentedOps{1.0 / half, center, 0.0, false}, nullptr);
        for (int j = 2; j <= degree; ++j) {
            op.apply(b, a, AugmentedOps{2.0 / half, center, -1.0, false}, nullptr);
            a.swap(b);
        }
        from_block(b, x, first);
        matvecs += static_cast<std::int64_t>(degree) * w;
    });
}

/// Every column to unit norm: the filter scales the columns by factors up to ~1e4 apart,
/// which CholQR2's Gram matrix would see as ill-conditioning.
void normalize_columns(const Operator& op, Columns& x)
{
    std::vector<double> norms(static_cast<std::size_t>(x.cols), 0.0);
    for (int c = 0; c < x.cols; ++c) {
        const complex_double* v = x.col(c);
        double s = 0.0;
#pragma omp parallel for reduction(+ : s) schedule(static)
        for (int i = 0; i < x.n; ++i) s += std::norm(v[i]);
        norms[static_cast<std::size_t>(c)] = s;
    }
    op.sum_over_ranks(norms.data(), norms.size());
    for (int c = 0; c < x.cols; ++c) {
        const double s = norms[static_cast<std::size_t>(c)];
        if (!(s > 0.0)) continue;
        const double f = 1.0 / std::sqrt(s);
        complex_double* v = x.col(c);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < x.n; ++i) v[i] *= f;
    }
}

}  // namespace

EigenPairs chebyshev_extremal(const Operator& op, const ChebyshevExtremalOptions& o)
{
    const global_index big_n = op.global_rows();
    validate(extremal_request(o.end == SpectrumEnd::Lowest, o.count, o.tolerance), big_n);
    TOPOKPM_USER_REQUIRE(o.block == 0 || o.block > o.count, "{eig_block} ", o.block,
                         ": must be 0 (automatic) or > count = ", o.count);
    TOPOKPM_REQUIRE(op.num_rows() < std::numeric_limits<int>::max(), "local rows ", op.num_rows(),
                    " beyond the BLAS index range");
    const int n = static_cast<int>(op.num_rows());
    const int k = o.count;
    const double tol = o.tolerance;
    const bool lowest = o.end == SpectrumEnd::Lowest;
    // g = sigma E: the wanted end is the lowest g at both ends.
    const double sigma = lowest ? 1.0 : -1.0;
    const int p = static_cast<int>(std::min<global_index>(o.block > 0 ? o.block : k + std::max(8, k / 2), big_n));

    int largest_block = p;
    std::int64_t matvecs = 0;
    const LanczosBounds lb = lanczos_bounds(op, 200, o.seed, 0.005, 0.005);
    matvecs += lb.iterations;
    const double near_g = lowest ? lb.bounds.lower : -lb.bounds.upper;  // the wanted end's bound
    const double far_g = lowest ? lb.bounds.upper : -lb.bounds.lower;   // the filter's upper edge
    const double width = far_g - near_g;

    Columns locked(n, 0);
    std::vector<double> locked_g;  // sigma * value of each locked column
    // The k-th lowest locked g (+infinity while fewer than k): the boundary of the answer.
    auto boundary = [&]() {
        if (static_cast<int>(locked_g.size()) < k) return std::numeric_limits<double>::infinity();
        std::vector<double> s = locked_g;
        std::nth_element(s.begin(), s.begin() + (k - 1), s.end());
        return s[static_cast<std::size_t>(k - 1)] + 2.0 * tol;
    };

    const std::uint64_t stream = splitmix64(o.seed, 6);
    std::int64_t next_random = 0;  // next random-phase column of the stream
    auto random_columns = [&](Columns& x, int first, int count) {
        if (count <= 0) return;
        BlockVector r(n, count);
        fill_random_phase_vectors(r, stream, next_random, big_n, op.row_begin());
        next_random += count;
        Columns tmp(n, count);
        from_block(r, tmp, 0);
        std::copy(tmp.data.begin(), tmp.data.end(), x.col(first));
    };
    Columns x(n, p);
    random_columns(x, 0, p);

    int degree = 0;  // no filter before the first Rayleigh-Ritz: it places the cut
    int last_degree = 16;
    double center_g = 0.0, half = 1.0;
    double predicted_growth = 0.0, last_residual = 0.0;  // of the slowest pending pair by the last filter
    for (int pass = 0;; ++pass) {
        if (pass > o.max_passes)
            throw NumericalError(topokpm::detail::concat("Chebyshev subspace iteration did not converge in ",
                                                         o.max_passes, " passes (block ", p, ", ", locked.cols, " of ",
                                                         k, " locked)"));
        if (degree > 0) chebyshev_filter(op, sigma * center_g, sigma * half, degree, x, matvecs);
        normalize_columns(op, x);
        project_out_twice(op, locked, x);
        if (orthonormalize(op, x)) {
            // TSQR of a (numerically) rank-deficient block may leave the span of X: once more.
            project_out_twice(op, locked, x);
            orthonormalize(op, x);
        }
        Columns hx(n, x.cols);
        apply_columns(op, x, hx);
        matvecs += x.cols;
        const RitzPairs rr = rayleigh_ritz(op, x, hx, true);
        const int m = x.cols;
        auto at = [&](int i) { return lowest ? i : m - 1 - i; };  // i-th Ritz pair from the wanted end
        auto g_of = [&](int i) { return sigma * rr.values[static_cast<std::size_t>(at(i))]; };
        auto res_of = [&](int i) { return rr.residuals[static_cast<std::size_t>(at(i))]; };

        // Lock (at half the tolerance: measured_pairs re-measures) every converged pair among
        // the first k - locked from the wanted end, then the converged run after them as far
        // as it lies within the boundary (partners of a degenerate last level).
        const int need = std::max(0, k - locked.cols);
        std::vector<char> is_locked(static_cast<std::size_t>(m), 0);
        auto lock = [&](int i) {
            locked.data.insert(locked.data.end(), rr.vectors.col(at(i)), rr.vectors.col(at(i)) + n);
            ++locked.cols;
            locked_g.push_back(g_of(i));
            is_locked[static_cast<std::size_t>(i)] = 1;
        };
        int locked_now = 0;
        for (int i = 0; i < std::min(need, m); ++i)
            if (res_of(i) <= 0.5 * tol) lock(i), ++locked_now;
        if (locked_now == std::min(need, m))
            for (int i = std::min(need, m); i < m && res_of(i) <= 0.5 * tol && g_of(i) <= boundary(); ++i) lock(i);
        std::vector<int> open;  // unlocked positions from the wanted end
        for (int i = 0; i < m; ++i)
            if (!is_locked[static_cast<std::size_t>(i)]) open.push_back(i);
        const int left = static_cast<int>(open.size());
        // Unlocked pairs that may still belong to the answer: before k are locked, the next
        // k - locked; then the run of lowest ones with g - r at or below the boundary (a
        // missing partner of the last level converges with its locked copies, as the lowest
        // unlocked Ritz pair, mixed with higher eigenvectors while r is large).
        const double limit = boundary();
        int pending = std::max(0, k - locked.cols);
        if (pending == 0)
            while (pending < left && g_of(open[pending]) - res_of(open[pending]) <= limit) ++pending;
        pending = std::min(pending, left);
        if (o.progress) {
            ThickRestartProgress pr;
            pr.locked = locked.cols;
            pr.converged = locked.cols;
            pr.wanted = k;
            pr.matvecs = matvecs;
            pr.next_residual = left > 0 ? res_of(open[0]) : 0.0;
            o.progress(pr);
        }
        const global_index free_dim = big_n - locked.cols;
        if ((locked.cols >= k && pending == 0) || free_dim == 0) {
            std::vector<int> pick;
            for (int c = 0; c < locked.cols; ++c)
                if (locked_g[static_cast<std::size_t>(c)] <= limit) pick.push_back(c);
            std::vector<complex_double> vectors(static_cast<std::size_t>(n) * pick.size());
            for (std::size_t c = 0; c < pick.size(); ++c)
                std::copy_n(locked.col(pick[c]), n, vectors.begin() + static_cast<std::ptrdiff_t>(c) * n);
            EigenPairs out = measured_pairs(op, vectors, static_cast<int>(pick.size()));
            out.matvecs += matvecs;
            out.restarts = pass;
            out.searches = 1;
            out.block = largest_block;
            return out;
        }

        // The next block: the unlocked Ritz vectors from the wanted end, topped up with fresh
        // random vectors when locking left fewer than the block needs; at least the pending
        // pairs plus a guard of max(p - k, 8) (a level more degenerate than the guard, or a
        // block given too small, would leave the cut inside the level, and no gap).
        const int active = static_cast<int>(
            std::min<global_index>(free_dim, std::max(p - locked.cols, pending + std::max(p - k, 8))));
        const int reuse = std::min(active, left);
        Columns next(n, active);
        for (int i = 0; i < reuse; ++i) std::copy_n(rr.vectors.col(at(open[i])), n, next.col(i));
        random_columns(next, reuse, active - reuse);
        x = std::move(next);
        largest_block = std::max(largest_block, locked.cols + active);

        // The filter: unwanted interval [cut, far] with cut = the largest g of the space.
        // The degree grows the slowest pending Ritz value by 1e4 over the cut, or, once the
        // last pass reduced the slowest residual by at least 1 % of what its filter
        // predicted (the cut has settled near the block's eigenvalue), by as much as brings
        // that residual to tolerance / 32 (the prediction is good to a few: a miss costs a pass).
        if (left == 0) {  // the whole block locked: Rayleigh-Ritz of the fresh one places the cut
            degree = 0;
            predicted_growth = 0.0;
            continue;
        }
        const double cut_g = g_of(m - 1);
        half = std::max(0.5 * (far_g - cut_g), 1e-3 * width);
        center_g = far_g - half;
        const int slow = open[std::max(pending, 1) - 1];
        double slow_residual = 0.0;
        for (int i = 0; i < std::max(pending, 1); ++i) slow_residual = std::max(slow_residual, res_of(open[i]));
        const double x_slow = std::abs(g_of(slow) - center_g) / half;
        const double x_near = std::abs(near_g - center_g) / half;
        const bool settled = predicted_growth > 0.0 && last_residual / slow_residual >= 0.01 * predicted_growth;
        const double growth = settled ? std::clamp(slow_residual / (tol / 32.0), 1e4, 1e14) : 1e4;
        int d = x_slow > 1.0 + 1e-12 ? static_cast<int>(std::ceil(std::acosh(growth) / std::acosh(x_slow))) : 4 * last_degree;
        d = std::clamp(d, 8, std::min(600, 4 * last_degree));
        // T_d at the wanted end's bound stays below ~1e250 (no overflow in the recurrence).
        if (x_near > 1.0) d = std::max(1, std::min(d, static_cast<int>(575.0 / std::acosh(x_near))));
        degree = d;
        last_degree = d;
        predicted_growth = x_slow > 1.0 ? std::cosh(d * std::acosh(x_slow)) : 0.0;
        last_residual = slow_residual;
    }
}

}  // namespace topokpm::numerics
