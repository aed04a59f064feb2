// Error bars (analysis/statistics.hpp) and band eigenvalues (analysis/bands.hpp) on
// hand-checkable inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/bands.hpp"
#include "analysis/reconstruct.hpp"
#include "analysis/statistics.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::analysis {

// Samples {1, 2, 6} and {0, 0, 0}: mean 3, sd sqrt(((-2)^2 + (-1)^2 + 3^2)/2) = sqrt(7),
// stderr sqrt(7/3); a constant column has no spread.
TEST(SampleStatistics, MeanStddevAndStandardErrorByHand)
{
    const std::vector<double> samples = {1.0, 0.0, 2.0, 0.0, 6.0, 0.0};  // [3, 2]
    const SampleStatistics st = sample_statistics(samples, 3, 2);
    EXPECT_DOUBLE_EQ(st.mean[0], 3.0);
    EXPECT_DOUBLE_EQ(st.stddev[0], std::sqrt(7.0));
    EXPECT_DOUBLE_EQ(st.stderr_[0], std::sqrt(7.0 / 3.0));
    EXPECT_EQ(st.mean[1], 0.0);
    EXPECT_EQ(st.stddev[1], 0.0);
    EXPECT_THROW(sample_statistics({1.0, 2.0}, 1, 2), DimensionMismatch);
}

// The reconstruction is linear in the moments, so the mean of per-sample reconstructions
// is the reconstruction of the mean (rounding: 1e-12 of the largest rho), and the standard
// error of rho(E) is a property of the per-sample curves.
TEST(SampleStatistics, ReconstructionOfTheMeanIsTheMeanOfReconstructions)
{
    const int m = 16, k = 32;
    const std::vector<double> g = damping_factors(DampingKernel::Jackson, m, 4.0);
    std::vector<double> samples;
    for (int s = 0; s < 4; ++s)
        for (int n = 0; n < m; ++n) samples.push_back(n == 0 ? 1.0 : 0.3 * std::cos(0.7 * n + s) / (1 + n));
    const SampleStatistics mu = sample_statistics(samples, 4, m);
    std::vector<double> rhos;
    for (int s = 0; s < 4; ++s) {
        const std::vector<double> one(samples.begin() + s * m, samples.begin() + (s + 1) * m);
        const Spectrum sp = reconstruct_chebyshev_grid(one, g, k, 2.0, 0.5);
        rhos.insert(rhos.end(), sp.rho.begin(), sp.rho.end());
    }
    const SampleStatistics rho = sample_statistics(rhos, 4, k);
    const Spectrum of_mean = reconstruct_chebyshev_grid(mu.mean, g, k, 2.0, 0.5);
    for (int e = 0; e < k; ++e) {
        EXPECT_NEAR(rho.mean[e], of_mean.rho[e], 1e-12);
        EXPECT_GT(rho.stderr_[e], 0.0);
    }
}

// [[1, i], [-i, 1]] has eigenvalues 0 and 2; a diagonal matrix its diagonal, sorted.
TEST(HermitianEigenvalues, TwoByTwoByHand)
{
    const std::vector<complex_type> a = {{1.0, 0.0}, {0.0, -1.0}, {0.0, 1.0}, {1.0, 0.0}};  // column-major
    const std::vector<double> e = hermitian_eigenvalues(a, 2);
    EXPECT_NEAR(e[0], 0.0, 1e-15);
    EXPECT_NEAR(e[1], 2.0, 1e-15);
    const std::vector<double> d = hermitian_eigenvalues({{3.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}, {-1.0, 0.0}}, 2);
    EXPECT_EQ(d, (std::vector<double>{-1.0, 3.0}));
}

}  // namespace topokpm::analysis
