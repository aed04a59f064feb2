// Damping kernels, DOS reconstruction (DCT grid, Clenshaw) and the integral checks of
// analysis/reconstruct.hpp against independent references: the formulas of models.md §4
// evaluated in long double, direct Chebyshev sums, and densities with closed-form moments.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "analysis/reconstruct.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::analysis {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr long double kPiL = 3.141592653589793238462643383279502884L;

/// Expects `f()` to throw InputError whose message contains every string in `mentions`.
template <typename F>
void expect_input_error(F f, const std::vector<std::string>& mentions)
{
    try {
        f();
        ADD_FAILURE() << "no InputError thrown";
    } catch (const InputError& e) {
        for (const std::string& m : mentions)
            EXPECT_NE(std::string(e.what()).find(m), std::string::npos) << "'" << e.what() << "' lacks '" << m << "'";
    }
}

/// Chebyshev coefficients c_0 = g_0 mu_0, c_n = 2 g_n mu_n in long double.
std::vector<long double> coefficients(const std::vector<double>& mu, const std::vector<double>& g)
{
    std::vector<long double> c(mu.size());
    for (size_t n = 0; n < mu.size(); ++n) c[n] = (n == 0 ? 1.0L : 2.0L) * g[n] * mu[n];
    return c;
}

/// The reference: the series summed term by term with T_n(x) = cos(n theta), x = cos(theta),
/// all in long double.
long double direct_sum(const std::vector<long double>& c, long double theta)
{
    long double s = 0.0L;
    for (size_t n = 0; n < c.size(); ++n) s += c[n] * std::cos(static_cast<long double>(n) * theta);
    return s;
}

double sum_abs(const std::vector<long double>& c)
{
    long double s = 0.0L;
    for (long double v : c) s += std::fabs(v);
    return static_cast<double>(s);
}

/// Moments of one eigenvalue at x0: mu_n = T_n(x0).
std::vector<double> single_level_moments(int M, double x0)
{
    std::vector<double> mu(M);
    for (int n = 0; n < M; ++n) mu[n] = std::cos(n * std::acos(static_cast<long double>(x0)));
    return mu;
}

/// Moments of the flat density rho(x) = 1/2 on [-1, 1]: mu_n = (1/2) int T_n dx
/// = (1 + (-1)^n) / (2 (1 - n^2)) for n != 1, i.e. 1/(1 - n^2) for even n, 0 for odd n.
std::vector<double> flat_moments(int M)
{
    std::vector<double> mu(M, 0.0);
    for (int n = 0; n < M; n += 2) mu[n] = 1.0 / (1.0 - static_cast<double>(n) * n);
    return mu;
}

/// Moments of the semicircle rho(x) = (2/pi) sqrt(1 - x^2): with x = cos(theta),
/// mu_n = (2/pi) int_0^pi cos(n theta) sin^2(theta) dtheta = delta_n0 - delta_n2 / 2.
std::vector<double> semicircle_moments(int M)
{
    std::vector<double> mu(M, 0.0);
    mu[0] = 1.0;
    mu[2] = -0.5;
    return mu;
}

// ---- damping factors -----------------------------------------------------------------------

// g_n of models.md §4 in long double. Each term of the double computation is at most M + 1
// in size and carries a few rounding errors of relative size eps (angle, cos/sin, cot,
// products); after the division by M + 1 the absolute error is a few tens of eps at most:
// 1e-14 (45 eps).
TEST(DampingFactors, JacksonMatchesFormula)
{
    for (int M : {1, 2, 3, 5, 8, 17, 64, 1000}) {
        const std::vector<double> g = damping_factors(DampingKernel::Jackson, M, 4.0);
        ASSERT_EQ(g.size(), static_cast<size_t>(M));
        const long double q = kPiL / (M + 1);
        for (int n = 0; n < M; ++n) {
            const long double ref =
                ((M - n + 1) * std::cos(q * n) + std::sin(q * n) * std::cos(q) / std::sin(q)) / (M + 1);
            EXPECT_NEAR(g[n], static_cast<double>(ref), 1e-14) << "M=" << M << " n=" << n;
        }
    }
}

TEST(DampingFactors, JacksonStartsAtOneAndDecreasesPositively)
{
    for (int M : {2, 7, 64, 1024}) {
        const std::vector<double> g = damping_factors(DampingKernel::Jackson, M, 4.0);
        EXPECT_EQ(g[0], 1.0);
        for (int n = 1; n < M; ++n) {
            EXPECT_GT(g[n], 0.0) << "M=" << M << " n=" << n;
            EXPECT_LT(g[n], g[n - 1]) << "M=" << M << " n=" << n;
        }
    }
}

// Lorentz against sinh(lambda (1 - n/M)) / sinh(lambda) in long double. The double code
// rounds lambda n / M (absolute error ~ eps lambda), which exp turns into a relative error
// ~ eps lambda; plus a few eps from exp/expm1 and the division: 8 (1 + lambda) eps.
TEST(DampingFactors, LorentzMatchesFormula)
{
    for (double lambda : {0.1, 1.0, 4.0, 20.0, 100.0}) {
        for (int M : {1, 3, 16, 257}) {
            const std::vector<double> g = damping_factors(DampingKernel::Lorentz, M, lambda);
            ASSERT_EQ(g.size(), static_cast<size_t>(M));
            EXPECT_EQ(g[0], 1.0);
            for (int n = 0; n < M; ++n) {
                const long double l = lambda;
                const long double ref = std::sinh(l * (1.0L - static_cast<long double>(n) / M)) / std::sinh(l);
                EXPECT_NEAR(g[n], static_cast<double>(ref), 8.0 * (1.0 + lambda) * kEps * static_cast<double>(ref))
                    << "lambda=" << lambda << " M=" << M << " n=" << n;
                if (n > 0) {
                    EXPECT_LT(g[n], g[n - 1]);
                }
            }
        }
    }
}

// n = M (one past the stored factors) is where the Lorentz kernel reaches 0: the last stored
// factor g_{M-1} = sinh(lambda / M) / sinh(lambda) is the smallest and tends to 0 with M.
// A large lambda, whose sinh overflows a double, still gives finite factors in [0, 1].
TEST(DampingFactors, LorentzEndsNearZeroAndSurvivesLargeLambda)
{
    const std::vector<double> g = damping_factors(DampingKernel::Lorentz, 4096, 4.0);
    EXPECT_NEAR(g.back(), std::sinh(4.0 / 4096) / std::sinh(4.0), 1e-15);
    EXPECT_LT(g.back(), 1e-3);
    const std::vector<double> big = damping_factors(DampingKernel::Lorentz, 64, 1000.0);
    EXPECT_EQ(big[0], 1.0);
    for (double v : big) {
        EXPECT_TRUE(std::isfinite(v));
        EXPECT_GE(v, 0.0);
        EXPECT_LE(v, 1.0);
    }
}

TEST(DampingFactors, NoneIsOne)
{
    for (double v : damping_factors(DampingKernel::None, 33, 4.0)) EXPECT_EQ(v, 1.0);
}

TEST(DampingFactors, KernelNamesRoundTrip)
{
    for (DampingKernel k : {DampingKernel::Jackson, DampingKernel::Lorentz, DampingKernel::None})
        EXPECT_EQ(parse_damping_kernel(to_string(k)), k);
    EXPECT_EQ(to_string(DampingKernel::Jackson), "jackson");
    EXPECT_EQ(to_string(DampingKernel::Lorentz), "lorentz");
    EXPECT_EQ(to_string(DampingKernel::None), "none");
}

TEST(DampingFactors, BadInputIsRejected)
{
    for (const std::string name : {"foo", "Jackson", "", "lorentz "})
        expect_input_error([&] { parse_damping_kernel(name); }, {"{kernel}", "jackson", "lorentz", "none"});
    for (double lambda : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()})
        expect_input_error([&] { damping_factors(DampingKernel::Lorentz, 16, lambda); }, {"{lorentz_lambda}"});
    expect_input_error([] { damping_factors(DampingKernel::Jackson, 0, 4.0); }, {"{moments}"});
    // lambda is the Lorentz kernel's only: the others ignore it.
    EXPECT_NO_THROW(damping_factors(DampingKernel::Jackson, 8, std::nan("")));
    EXPECT_NO_THROW(damping_factors(DampingKernel::None, 8, -1.0));
}

// ---- reconstruction -------------------------------------------------------------------------

TEST(Reconstruct, EnergyPointsFewerThanMomentsAreRejected)
{
    const std::vector<double> mu = flat_moments(64), g(64, 1.0);
    expect_input_error([&] { reconstruct_chebyshev_grid(mu, g, 63, 1.0, 0.0); },
                       {"{energy_points}", "must be >= {moments}"});
    EXPECT_NO_THROW(reconstruct_chebyshev_grid(mu, g, 64, 1.0, 0.0));
}

TEST(Reconstruct, GridIsTheChebyshevGridInAscendingEnergy)
{
    const double a = 1.7, b = -0.3;
    const int K = 37;
    const Spectrum s = reconstruct_chebyshev_grid(flat_moments(8), std::vector<double>(8, 1.0), K, a, b);
    ASSERT_EQ(s.energy.size(), static_cast<size_t>(K));
    ASSERT_EQ(s.rho.size(), static_cast<size_t>(K));
    for (int k = 0; k < K; ++k) {
        const double x = std::cos(M_PI * (k + 0.5) / K);
        EXPECT_NEAR(s.energy[K - 1 - k], a * x + b, 4 * kEps * (a + std::abs(b))) << "k=" << k;
    }
    for (int i = 1; i < K; ++i) EXPECT_LT(s.energy[i - 1], s.energy[i]);
}

// The FFTW DCT against the long double direct sum at the exact grid angles theta_k: an FFT's
// rounding error is ~ eps log2(K) sum|c_n| per output; 64 eps sum|c_n| (~1.4e-14) bounds it
// for K <= 1000. The numerator is compared (rho times a pi sqrt(1 - x_k^2)) so that the
// denominator, identical in both, does not enter.
TEST(Reconstruct, DctEqualsDirectSum)
{
    for (DampingKernel kernel : {DampingKernel::None, DampingKernel::Jackson}) {
        for (auto [M, K] : {std::pair{1, 1}, {2, 3}, {64, 64}, {128, 256}, {100, 1000}}) {
            const std::vector<double> mu = single_level_moments(M, 0.3217);
            const std::vector<double> g = damping_factors(kernel, M, 4.0);
            const std::vector<long double> c = coefficients(mu, g);
            const double a = 2.0, b = 0.0;
            const Spectrum s = reconstruct_chebyshev_grid(mu, g, K, a, b);
            const double tol = 64 * kEps * sum_abs(c);
            for (int k = 0; k < K; ++k) {
                const double x = std::cos(M_PI * (k + 0.5) / K);
                const double numerator = s.rho[K - 1 - k] * a * M_PI * std::sqrt((1 - x) * (1 + x));
                const long double ref = direct_sum(c, kPiL * (k + 0.5L) / K);
                EXPECT_NEAR(numerator, static_cast<double>(ref), tol)
                    << to_string(kernel) << " M=" << M << " K=" << K << " k=" << k;
            }
        }
    }
}

// Clenshaw against the long double direct sum at the same double x = (E - b)/a. Clenshaw's
// forward error is ~ eps M sum|c_n| (a few eps per step, M steps, terms bounded by
// sum|c_n|); 4 eps M sum|c_n| bounds it. Energies outside [b - a, b + a] give 0.
TEST(Reconstruct, ClenshawEqualsDirectSum)
{
    const int M = 200;
    const double a = 1.3, b = -0.4;
    const std::vector<double> mu = single_level_moments(M, -0.71);
    const std::vector<double> g = damping_factors(DampingKernel::Jackson, M, 4.0);
    const std::vector<long double> c = coefficients(mu, g);
    std::vector<double> energies;
    for (int i = 0; i <= 400; ++i) energies.push_back(b - 1.2 * a + 2.4 * a * i / 400);
    const std::vector<double> rho = reconstruct_at(mu, g, energies, a, b);
    ASSERT_EQ(rho.size(), energies.size());
    for (size_t i = 0; i < energies.size(); ++i) {
        const double x = (energies[i] - b) / a;
        if (std::abs(x) >= 1.0) {
            EXPECT_EQ(rho[i], 0.0) << "E=" << energies[i];
            continue;
        }
        const long double ref = direct_sum(c, std::acos(static_cast<long double>(x)));
        const double numerator = rho[i] * a * M_PI * std::sqrt((1 - x) * (1 + x));
        EXPECT_NEAR(numerator, static_cast<double>(ref), 4 * kEps * M * sum_abs(c)) << "x=" << x;
    }
}

// DCT grid == Clenshaw at the grid's energies. With a = 2, b = 0 the energies give back
// exactly the double x_k the grid used, so the two differ only by their rounding (bounds of
// the two tests above) and by the DCT summing at the exact angle theta_k while Clenshaw sums
// at the rounded x_k: |f'(x)| <= sum n^2 |c_n| times |dx| <= eps/2.
TEST(Reconstruct, DctEqualsClenshawOnTheGrid)
{
    for (auto [M, K] : {std::pair{16, 16}, {128, 256}, {100, 333}}) {
        const std::vector<double> mu = single_level_moments(M, 0.55);
        const std::vector<double> g = damping_factors(DampingKernel::Jackson, M, 4.0);
        const std::vector<long double> c = coefficients(mu, g);
        long double slope = 0.0L;
        for (size_t n = 0; n < c.size(); ++n) slope += static_cast<long double>(n) * n * std::fabs(c[n]);
        const double a = 2.0, b = 0.0;
        const Spectrum s = reconstruct_chebyshev_grid(mu, g, K, a, b);
        const std::vector<double> rho = reconstruct_at(mu, g, s.energy, a, b);
        for (int i = 0; i < K; ++i) {
            const double x = s.energy[i] / a;
            const double scale = a * M_PI * std::sqrt((1 - x) * (1 + x));
            const double tol = (64 * kEps + 4 * kEps * M) * sum_abs(c) + 0.5 * kEps * static_cast<double>(slope);
            EXPECT_NEAR(s.rho[i] * scale, rho[i] * scale, tol) << "M=" << M << " K=" << K << " i=" << i;
            EXPECT_NEAR(s.rho[i], rho[i], 1e-13 * std::abs(rho[i]) + tol / scale);
        }
    }
}

// FFTW planning is serialised inside: concurrent reconstructions (as from several
// threads of a tool) all give the single-threaded result, bit for bit.
TEST(Reconstruct, ConcurrentCallsAgree)
{
    const int M = 256;
    const std::vector<double> mu = single_level_moments(M, 0.4);
    const std::vector<double> g = damping_factors(DampingKernel::Jackson, M, 4.0);
    const Spectrum ref = reconstruct_chebyshev_grid(mu, g, 2 * M, 1.5, 0.1);
    std::vector<Spectrum> results(8);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < results.size(); ++t)
        threads.emplace_back([&, t] {
            for (int repeat = 0; repeat < 20; ++repeat)
                results[t] = reconstruct_chebyshev_grid(mu, g, 2 * M, 1.5, 0.1);
        });
    for (std::thread& th : threads) th.join();
    for (const Spectrum& s : results) {
        EXPECT_EQ(s.energy, ref.energy);
        EXPECT_EQ(s.rho, ref.rho);
    }
}

// One level: with kernel none the M-term reconstruction is the Dirichlet sum
// [1 + 2 sum_{n>=1} T_n(x0) T_n(x)] / (a pi sqrt(1 - x^2)); compared through the grid.
TEST(Reconstruct, SingleLevelWithoutKernelIsTheDirichletSum)
{
    const int M = 48, K = 96;
    const double a = 3.0, b = 0.5, x0 = -0.2;
    const std::vector<double> mu = single_level_moments(M, x0);
    const Spectrum s = reconstruct_chebyshev_grid(mu, damping_factors(DampingKernel::None, M, 4.0), K, a, b);
    const long double theta0 = std::acos(static_cast<long double>(x0));
    for (int k = 0; k < K; ++k) {
        const long double theta = kPiL * (k + 0.5L) / K;
        long double sum = 1.0L;
        for (int n = 1; n < M; ++n) sum += 2.0L * std::cos(n * theta0) * std::cos(n * theta);
        const long double ref = sum / (a * kPiL * std::sin(theta));
        // Numerator error 64 eps * (2M) (see DctEqualsDirectSum); the denominator from the
        // rounded x_k differs from sin(theta_k) by ~ eps / (1 - x_k^2) relative.
        const double x = std::cos(M_PI * (k + 0.5) / K);
        const double tol = 64 * kEps * 2 * M / (a * M_PI * std::sin(static_cast<double>(theta))) +
                           2 * kEps / ((1 - x) * (1 + x)) * std::abs(static_cast<double>(ref));
        EXPECT_NEAR(s.rho[K - 1 - k], static_cast<double>(ref), tol) << "k=" << k;
    }
}

// mu = (1, 0, 0, ...) is the arcsine density: rho(E) = 1 / (a pi sqrt(1 - x^2)) for every
// kernel (g_0 = 1), up to a few roundings of the same expression (8 eps relative).
TEST(Reconstruct, ArcsineDensityIsExact)
{
    const int M = 32;
    const double a = 1.7, b = 0.3;
    std::vector<double> mu(M, 0.0);
    mu[0] = 1.0;
    for (DampingKernel kernel : {DampingKernel::Jackson, DampingKernel::Lorentz, DampingKernel::None}) {
        const std::vector<double> g = damping_factors(kernel, M, 4.0);
        const Spectrum s = reconstruct_chebyshev_grid(mu, g, 2 * M, a, b);
        const std::vector<double> rho = reconstruct_at(mu, g, s.energy, a, b);
        for (int i = 0; i < 2 * M; ++i) {
            const double x = (s.energy[i] - b) / a;
            const double ref = 1.0 / (a * M_PI * std::sqrt((1 - x) * (1 + x)));
            EXPECT_NEAR(rho[i], ref, 8 * kEps * ref) << to_string(kernel) << " i=" << i;
            // The grid's own x_k differs from (E - b)/a by ~ eps (1 + |b|/a), which moves
            // 1/sqrt(1 - x^2) by that times |x| / (1 - x^2) relative.
            EXPECT_NEAR(s.rho[i], ref, (8 * kEps + 2 * kEps * (1 + b / a) / ((1 - x) * (1 + x))) * ref)
                << to_string(kernel) << " i=" << i;
        }
    }
}

// The semicircle (2/pi) sqrt(1 - x^2) has the two moments mu_0 = 1, mu_2 = -1/2: without a
// kernel any M >= 3 reconstructs it exactly (rounding: a few eps of rho's scale 2/(a pi)).
TEST(Reconstruct, SemicircleIsExactWithoutKernel)
{
    const int M = 16;
    const double a = 2.5, b = 1.0;
    const std::vector<double> mu = semicircle_moments(M);
    const std::vector<double> g = damping_factors(DampingKernel::None, M, 4.0);
    const Spectrum s = reconstruct_chebyshev_grid(mu, g, 40, a, b);
    const double tol = 32 * kEps * 2 / (a * M_PI);
    for (size_t i = 0; i < s.energy.size(); ++i) {
        const double x = (s.energy[i] - b) / a;
        EXPECT_NEAR(s.rho[i], 2 / (a * M_PI) * std::sqrt((1 - x) * (1 + x)), tol) << "i=" << i;
    }
    const std::vector<double> energies = {b - 2 * a, b - a, b - 0.999 * a, b - 0.3 * a, b, b + 0.77 * a, b + a, b + 5 * a};
    const std::vector<double> rho = reconstruct_at(mu, g, energies, a, b);
    for (size_t i = 0; i < energies.size(); ++i) {
        const double x = (energies[i] - b) / a;
        const double ref = std::abs(x) < 1 ? 2 / (a * M_PI) * std::sqrt((1 - x) * (1 + x)) : 0.0;
        EXPECT_NEAR(rho[i], ref, tol) << "E=" << energies[i];
    }
}

// The flat density 1/2 on [-1, 1] with Jackson damping converges to 1/2 away from the
// edges. In theta (x = cos theta) Jackson is close to a Gaussian of width sigma = pi/M
// acting on f(theta) = pi sin(theta) rho = (pi/2) sin(theta): it changes f by about
// sigma^2 |f''| / 2 <= sigma^2 f / 2 relative (|f''/f| = 1), plus the kernel's tails from the
// jumps at the edges, ~ 1 / (M d)^3 relative for an edge d away in theta (d >= 0.64 for
// |x| <= 0.8). Tolerance: sigma^2 relative; the error must shrink with M as 1/M^2.
TEST(Reconstruct, FlatDensityConvergesWithJackson)
{
    double previous_error = 1.0;
    for (int M : {32, 128, 512, 2048}) {
        const std::vector<double> mu = flat_moments(M);
        const std::vector<double> g = damping_factors(DampingKernel::Jackson, M, 4.0);
        const Spectrum s = reconstruct_chebyshev_grid(mu, g, 2 * M, 1.0, 0.0);
        double max_error = 0.0;
        for (size_t i = 0; i < s.energy.size(); ++i)
            if (std::abs(s.energy[i]) <= 0.8) max_error = std::max(max_error, std::abs(s.rho[i] - 0.5));
        const double sigma = M_PI / M;
        EXPECT_LT(max_error, sigma * sigma * 0.5) << "M=" << M;
        EXPECT_LT(max_error, previous_error / 8) << "M=" << M << ": no 1/M^2 convergence";
        previous_error = max_error;
    }
}

// ---- integrals ------------------------------------------------------------------------------

// K-point Gauss-Chebyshev quadrature of the grid is exact for the degree M-1 series: the
// integral equals g_0 mu_0 up to the DCT's rounding averaged over K points,
// <= 64 eps sum|c_n| (see DctEqualsDirectSum).
TEST(Integral, ChebyshevGridGivesG0Mu0)
{
    for (DampingKernel kernel : {DampingKernel::Jackson, DampingKernel::Lorentz, DampingKernel::None}) {
        for (auto [M, K] : {std::pair{1, 1}, {64, 64}, {64, 128}, {256, 1000}}) {
            for (double scale : {1.0, 0.75}) {  // mu_0 = 0.75: the integral follows g_0 mu_0
                std::vector<double> mu = single_level_moments(M, 0.123);
                for (double& v : mu) v *= scale;
                const std::vector<double> g = damping_factors(kernel, M, 4.0);
                const double a = 4.2, b = -1.1;
                const Spectrum s = reconstruct_chebyshev_grid(mu, g, K, a, b);
                EXPECT_NEAR(integral_chebyshev_grid(s, a, b), g[0] * mu[0],
                            64 * kEps * sum_abs(coefficients(mu, g)))
                    << to_string(kernel) << " M=" << M << " K=" << K;
            }
        }
    }
    // A flat density, not a delta: still exactly 1.
    const std::vector<double> mu = flat_moments(128);
    const Spectrum s = reconstruct_chebyshev_grid(mu, damping_factors(DampingKernel::Jackson, 128, 4.0), 256, 2.0, 1.0);
    EXPECT_NEAR(integral_chebyshev_grid(s, 2.0, 1.0), 1.0, 1e-14);
}

// f(E) = E^2 on [0, 1] with spacing h: the trapezoid error is exactly (b - a) h^2 f'' / 12 = h^2 / 6.
TEST(Integral, TrapezoidOfAParabola)
{
    const int n = 101;
    const double h = 1.0 / (n - 1);
    std::vector<double> e(n), f(n);
    for (int i = 0; i < n; ++i) {
        e[i] = i * h;
        f[i] = e[i] * e[i];
    }
    EXPECT_NEAR(integral_trapezoid(e, f), 1.0 / 3.0 + h * h / 6.0, 1e-15);
    EXPECT_EQ(integral_trapezoid({}, {}), 0.0);
    EXPECT_EQ(integral_trapezoid({1.0}, {5.0}), 0.0);
}

// The semicircle reconstructed at a fine uniform grid over [b - a, b + a]: near each edge
// rho ~ (2/pi) sqrt(2 t), and the trapezoid rule on a square-root endpoint errs by
// |zeta(-1/2)| (2/pi) sqrt(2) h^{3/2} ~ 0.19 h^{3/2} (h in units of x); the interior adds
// O(h^2). Tolerance: h^{3/2} (two edges, with margin).
TEST(Integral, TrapezoidOfAReconstructedDensityIsCloseToOne)
{
    const int M = 8, n = 20001;
    const double a = 3.0, b = -0.5;
    std::vector<double> e(n);
    for (int i = 0; i < n; ++i) e[i] = (b - a) + 2 * a * i / (n - 1);
    const std::vector<double> rho =
        reconstruct_at(semicircle_moments(M), damping_factors(DampingKernel::None, M, 4.0), e, a, b);
    const double h = 2.0 / (n - 1);
    EXPECT_NEAR(integral_trapezoid(e, rho), 1.0, std::pow(h, 1.5));
}

}  // namespace
}  // namespace topokpm::analysis
