#include "numerics/kpm/kpm.hpp"

#include <algorithm>
#include <cmath>

#include "numerics/kpm/start_vectors.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {

KpmScaling kpm_scaling(const SpectralBounds& bounds, double epsilon)
{
    TOPOKPM_USER_REQUIRE(std::isfinite(bounds.lower) && std::isfinite(bounds.upper) &&
                             bounds.upper > bounds.lower,
                         "--energy-range ", bounds.lower, ":", bounds.upper,
                         ": need finite Emin < Emax (energy units of t)");
    TOPOKPM_USER_REQUIRE(epsilon >= 0.0 && epsilon < 1.0, "--epsilon ", epsilon,
                         ": allowed range is [0, 1)");
    return {(bounds.upper - bounds.lower) / (2.0 - epsilon), (bounds.upper + bounds.lower) / 2.0};
}

int kpm_num_sweeps(int num_moments) { return 1 + (num_moments - 1) / 2; }

std::vector<double> chebyshev_moments(const Operator& op, BlockVector& start, int num_moments,
                                      const KpmScaling& scaling, const KpmProgress& progress)
{
    TOPOKPM_USER_REQUIRE(num_moments >= 2, "--moments ", num_moments, ": must be >= 2");
    TOPOKPM_REQUIRE(start.num_rows() == op.num_rows(), "start vectors have ", start.num_rows(),
                    " rows, operator ", op.num_rows());
    const int m = num_moments;
    const int r = start.num_cols();
    std::vector<double> raw(static_cast<size_t>(r) * m, 0.0);
    auto at = [&](int col, int n) -> double& { return raw[static_cast<size_t>(col) * m + n]; };

    // v_0 = start, v_1 = Ht v_0; this first sweep yields mu_0 = <v0|v0> and mu_1 = Re<v1|v0>.
    BlockVector* x = &start;
    BlockVector other(start.num_rows(), r);
    BlockVector* y = &other;
    DotSums dots;
    op.apply(*x, *y, AugmentedOps{1.0 / scaling.a, scaling.b, 0.0, true}, &dots);
    for (int c = 0; c < r; ++c) {
        at(c, 0) = dots.xx[c];
        at(c, 1) = dots.yx[c].real();
    }
    if (progress) progress(2, m);
    std::swap(x, y);  // x = v_1, y = v_0

    // Sweep k: y <- 2 Ht x - y turns (v_k, v_{k-1}) into v_{k+1}, with <v_k|v_k> and
    // <v_{k+1}|v_k> on the fly: two moments per pass over H (seed 004, Fig. 5).
    const AugmentedOps step{2.0 / scaling.a, scaling.b, -1.0, true};
    for (int k = 1; 2 * k < m; ++k) {
        op.apply(*x, *y, step, &dots);
        for (int c = 0; c < r; ++c) {
            at(c, 2 * k) = 2.0 * dots.xx[c] - at(c, 0);
            if (2 * k + 1 < m) at(c, 2 * k + 1) = 2.0 * dots.yx[c].real() - at(c, 1);
        }
        std::swap(x, y);
        if (progress) progress(std::min(2 * k + 2, m), m);
    }
    return raw;
}

KpmMoments kpm_stochastic_trace(const Operator& op, int num_moments, int num_vectors,
                                std::uint64_t vector_seed, const KpmScaling& scaling,
                                const KpmProgress& progress)
{
    TOPOKPM_USER_REQUIRE(num_vectors >= 1, "--vectors ", num_vectors, ": must be >= 1");
    const global_index n = op.num_rows();
    BlockVector start(n, num_vectors);
    fill_random_phase_vectors(start, vector_seed, 0, n);
    KpmMoments result;
    result.per_vector = chebyshev_moments(op, start, num_moments, scaling, progress);
    result.moments.assign(num_moments, 0.0);
    const double inv_n = 1.0 / static_cast<double>(n);
    for (int c = 0; c < num_vectors; ++c)
        for (int k = 0; k < num_moments; ++k) {
            double& v = result.per_vector[static_cast<size_t>(c) * num_moments + k];
            v *= inv_n;
            result.moments[k] += v;
        }
    for (double& v : result.moments) v /= num_vectors;
    result.num_vectors = num_vectors;
    result.num_sweeps = kpm_num_sweeps(num_moments);
    result.block_width = num_vectors;
    return result;
}

KpmMoments kpm_exact_trace(const Operator& op, int num_moments, int block_width,
                           const KpmScaling& scaling, const KpmProgress& progress)
{
    TOPOKPM_USER_REQUIRE(block_width >= 1, "--vectors ", block_width,
                         ": the exact trace uses it as block width and needs >= 1");
    const global_index n = op.num_rows();
    const int width = static_cast<int>(std::min<global_index>(block_width, n));
    const global_index num_blocks = (n + width - 1) / width;
    KpmMoments result;
    result.moments.assign(num_moments, 0.0);
    BlockVector start(n, width);
    for (global_index blk = 0; blk < num_blocks; ++blk) {
        fill_unit_vectors(start, blk * width);
        // Progress over the whole trace: block-local moments scaled to the total.
        KpmProgress block_progress;
        if (progress)
            block_progress = [&](int done, int total) {
                progress(static_cast<int>((blk * total + done) / num_blocks), total);
            };
        const std::vector<double> raw = chebyshev_moments(op, start, num_moments, scaling, block_progress);
        const int cols = static_cast<int>(std::min<global_index>(width, n - blk * width));
        for (int c = 0; c < cols; ++c)
            for (int k = 0; k < num_moments; ++k)
                result.moments[k] += raw[static_cast<size_t>(c) * num_moments + k];
    }
    for (double& v : result.moments) v /= static_cast<double>(n);
    result.num_vectors = n;
    result.num_sweeps = num_blocks * kpm_num_sweeps(num_moments);
    result.block_width = width;
    return result;
}

void check_moments_bounded(const std::vector<double>& moments, double tolerance)
{
    for (size_t k = 0; k < moments.size(); ++k)
        if (!(std::abs(moments[k]) <= 1.0 + tolerance))
            throw NumericalError(detail::concat(
                "Chebyshev moment mu_", k, " = ", moments[k],
                " exceeds 1 in magnitude: the spectrum extends beyond the scaling interval "
                "(bounds too tight). Use --bounds gershgorin, widen --energy-range, or raise "
                "--epsilon"));
}

}  // namespace topokpm::numerics
