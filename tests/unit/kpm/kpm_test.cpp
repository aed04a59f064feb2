// KPM moments driver and Lanczos bounds against the dense LAPACK oracle.
#include <gtest/gtest.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "tests/support/trace_moments.hpp"
#include "numerics/base/counter_rng.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/lanczos/lanczos.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/dense_operator.hpp"
#include "tests/support/dense_oracle.hpp"

using namespace topokpm;
using namespace topokpm::numerics;
using SmallSystem = topokpm::testing::SmallDenseSystem;

TEST(KpmScaling, FollowsModelsSection4)
{
    const KpmScaling s = kpm_scaling({-5.0, 5.0}, 0.01);
    EXPECT_DOUBLE_EQ(s.a, 10.0 / 1.99);
    EXPECT_DOUBLE_EQ(s.b, 0.0);
    const KpmScaling t = kpm_scaling({-1.0, 3.0}, 0.0);
    EXPECT_DOUBLE_EQ(t.a, 2.0);
    EXPECT_DOUBLE_EQ(t.b, 1.0);
    EXPECT_THROW(kpm_scaling({1.0, 1.0}, 0.01), InputError);
    EXPECT_THROW(kpm_scaling({-1.0, 1.0}, 1.0), InputError);
}

TEST(KpmSweeps, TwoMomentsPerSweepPlusTheFirst)
{
    EXPECT_EQ(kpm_num_sweeps(2), 1);
    EXPECT_EQ(kpm_num_sweeps(3), 2);
    EXPECT_EQ(kpm_num_sweeps(4), 2);
    EXPECT_EQ(kpm_num_sweeps(1024), 512);
    EXPECT_EQ(kpm_num_sweeps(1025), 513);
}

TEST(StartVectors, RandomPhasesFollowTheSpecFormula)
{
    const global_index n = 11;
    BlockVector block(n, 3);
    fill_random_phase_vectors(block, 42, 0, n);
    const std::uint64_t sv = splitmix64(42, 2);
    for (global_index j = 0; j < n; ++j)
        for (int r = 0; r < 3; ++r) {
            // exp(i phase) with the cosine and sine of glibc's vector math library where it is
            // linked (start_vectors.cpp), documented within 4 ulp of the exact values (at most
            // 4 eps for values of modulus <= 1); libm's scalar ones are within 1 ulp, so the
            // two differ by at most 5 eps per part.
            const double phase = 2.0 * M_PI * uniform(sv, std::uint64_t(r * n + j));
            EXPECT_NEAR(block(j, r).real(), std::cos(phase), 5 * std::numeric_limits<double>::epsilon());
            EXPECT_NEAR(block(j, r).imag(), std::sin(phase), 5 * std::numeric_limits<double>::epsilon());
            EXPECT_NEAR(std::abs(block(j, r)), 1.0, 1e-15);
        }
    // A rank holding rows [5, 11) of vectors 1..2 gets exactly the same numbers.
    BlockVector part(6, 2);
    fill_random_phase_vectors(part, 42, 1, n, 5);
    for (global_index i = 0; i < 6; ++i)
        for (int c = 0; c < 2; ++c) EXPECT_EQ(part(i, c), block(i + 5, c + 1));
}

// Exact trace = (1/N) sum_i T_n(x_i) from LAPACK eigenvalues. Both sides are the same
// polynomial evaluated in different orders; the three-term recurrence is stable on
// [-1, 1] with errors growing ~ n eps, so 1e-12 covers M = 200 with margin.
TEST(KpmExactTrace, MatchesLapackEigenvalueMoments)
{
    for (const global_index n : {1, 2, 7, 40}) {
        SmallSystem sys(n);
        for (const int block : {1, 3, 8}) {
            for (const int m : {2, 3, 17, 200}) {
                const topokpm::testing::TraceMoments km = topokpm::testing::exact_trace(sys.op, m, block, sys.scaling);
                const std::vector<double> ref = topokpm::testing::exact_moments(sys.eigenvalues, m, sys.scaling.a, sys.scaling.b);
                ASSERT_EQ(km.moments.size(), size_t(m));
                for (int k = 0; k < m; ++k)
                    EXPECT_NEAR(km.moments[k], ref[k], 1e-12) << "n=" << n << " block=" << block << " M=" << m << " k=" << k;
            }
        }
    }
}

// The stochastic estimate of (1/N) Tr T_n with random-phase vectors is unbiased with
// variance (1/(R N^2)) sum_{i != j} |T_n(Ht)_ij|^2 <= ||T_n||_F^2 / (R N^2) <= 1/(R N),
// since every eigenvalue of T_n(Ht) lies in [-1, 1]. 6 sigma: fails by chance < 1e-8.
TEST(KpmStochasticTrace, WithinItsStatisticalError)
{
    const global_index n = 60;
    SmallSystem sys(n, 11);
    const int m = 64, r = 32;
    const topokpm::testing::TraceMoments km = topokpm::testing::stochastic_trace(sys.op, m, r, 5, sys.scaling);
    const std::vector<double> ref = topokpm::testing::exact_moments(sys.eigenvalues, m, sys.scaling.a, sys.scaling.b);
    const double sigma = 1.0 / std::sqrt(double(r) * n);
    EXPECT_NEAR(km.moments[0], 1.0, 1e-14);  // <r|r> = N up to rounding
    for (int k = 1; k < m; ++k) EXPECT_NEAR(km.moments[k], ref[k], 6.0 * sigma) << "k=" << k;
    // per-vector moments average to the moments
    for (int k = 0; k < m; ++k) {
        double sum = 0.0;
        for (int c = 0; c < r; ++c) sum += km.per_vector[size_t(c) * m + k];
        EXPECT_NEAR(sum / r, km.moments[k], 1e-14);
    }
    // Same seed, same moments; another seed, other moments.
    const topokpm::testing::TraceMoments again = topokpm::testing::stochastic_trace(sys.op, m, r, 5, sys.scaling);
    EXPECT_EQ(again.moments, km.moments);
    const topokpm::testing::TraceMoments other = topokpm::testing::stochastic_trace(sys.op, m, r, 6, sys.scaling);
    EXPECT_NE(other.moments[1], km.moments[1]);
}

// Vector r of a block of R equals the same vector run alone: columns do not mix.
TEST(KpmStochasticTrace, ColumnsAreIndependentOfBlockWidth)
{
    SmallSystem sys(25, 3);
    const topokpm::testing::TraceMoments wide = topokpm::testing::stochastic_trace(sys.op, 20, 4, 9, sys.scaling);
    const topokpm::testing::TraceMoments one = topokpm::testing::stochastic_trace(sys.op, 20, 1, 9, sys.scaling);
    for (int k = 0; k < 20; ++k) EXPECT_NEAR(wide.per_vector[k], one.per_vector[k], 1e-14);
}

TEST(KpmMoments, BoundednessCheckCatchesTooTightBounds)
{
    SmallSystem sys(30, 4);
    // Bounds that cut off the spectrum: |x| > 1 for some eigenvalues, T_n grows like cosh.
    const KpmScaling tight = kpm_scaling({sys.eigenvalues.front() * 0.5, sys.eigenvalues.back() * 0.5}, 0.0);
    const topokpm::testing::TraceMoments km = topokpm::testing::exact_trace(sys.op, 100, 4, tight);
    EXPECT_THROW(check_moments_bounded(km.moments), NumericalError);
    const topokpm::testing::TraceMoments ok = topokpm::testing::exact_trace(sys.op, 100, 4, sys.scaling);
    EXPECT_NO_THROW(check_moments_bounded(ok.moments));
}

TEST(KpmMoments, BoundToleranceIsThreeDotRoundingsOfTheOperatorContract)
{
    // operator.hpp's single-precision dot bound, (kSingleDotRun + 1) eps_f, is the one home of
    // the number; mu_2k = 2 <v|v> - mu_0 carries three such roundings.
    const double eps_f = std::numeric_limits<float>::epsilon();
    EXPECT_EQ(dot_rounding_bound(Precision::Double), 0.0);
    EXPECT_EQ(dot_rounding_bound(Precision::Single), (kSingleDotRun + 1) * eps_f);
    EXPECT_EQ(moments_bound_tolerance(Precision::Single), 3.0 * dot_rounding_bound(Precision::Single));
    EXPECT_EQ(moments_bound_tolerance(Precision::Double), 1e-8);
}

TEST(Lanczos, BoundsContainTheSpectrumTightly)
{
    for (const global_index n : {3, 50, 120}) {
        SmallSystem sys(n, 21);
        const LanczosBounds lb = lanczos_bounds(sys.op, 200, 1, 0.005, 1e-10);
        const double width = sys.eigenvalues.back() - sys.eigenvalues.front();
        EXPECT_LE(lb.bounds.lower, sys.eigenvalues.front()) << n;
        EXPECT_GE(lb.bounds.upper, sys.eigenvalues.back()) << n;
        // Converged extremal Ritz values: within the margin (0.5 %) plus 1e-8 of the width.
        EXPECT_NEAR(lb.lowest_ritz, sys.eigenvalues.front(), 1e-8 * width) << n;
        EXPECT_NEAR(lb.highest_ritz, sys.eigenvalues.back(), 1e-8 * width) << n;
        EXPECT_GE(lb.bounds.lower, sys.eigenvalues.front() - 0.006 * width - 1e-8);
        EXPECT_LE(lb.bounds.upper, sys.eigenvalues.back() + 0.006 * width + 1e-8);
    }
    // The default tolerance (1e-4 of the width) stops earlier; the bounds still hold.
    SmallSystem big(150, 8);
    const LanczosBounds fast = lanczos_bounds(big.op, 200, 1, 0.005);
    EXPECT_LE(fast.bounds.lower, big.eigenvalues.front());
    EXPECT_GE(fast.bounds.upper, big.eigenvalues.back());
    SmallSystem sys(10);
    EXPECT_THROW(lanczos_bounds(sys.op, 1, 1, 0.005), InputError);
}

TEST(Lanczos, StopsOnceTheResidualsFitTheMarginAndTheBoundsStillHold)
{
    // tolerance = margin: the residuals (each an upper bound of the distance from the Ritz
    // value to an eigenvalue) are at most margin w, far fewer steps than converging.
    for (const std::uint64_t seed : {8u, 21u}) {
        SmallSystem sys(200, seed);
        const LanczosBounds converged = lanczos_bounds(sys.op, 200, 1, 0.005, 1e-10);
        const LanczosBounds quick = lanczos_bounds(sys.op, 200, 1, 0.005, 0.005);
        const double width = quick.highest_ritz - quick.lowest_ritz;
        EXPECT_LT(quick.iterations, converged.iterations) << seed;
        EXPECT_LE(std::max(quick.residual_low, quick.residual_high), 0.005 * width) << seed;
        EXPECT_LE(quick.bounds.lower, sys.eigenvalues.front()) << seed;
        EXPECT_GE(quick.bounds.upper, sys.eigenvalues.back()) << seed;
        EXPECT_FALSE(quick.enclosure_taken);
    }
}

TEST(Lanczos, TakesARigorousEnclosureOnlyWhenItIsWithinTheMargin)
{
    SmallSystem sys(200, 5);
    const double lo = sys.eigenvalues.front(), hi = sys.eigenvalues.back(), width = hi - lo;
    // The exact spectrum edges are an enclosure no Lanczos bound can beat: taken, early.
    const SpectralBounds exact{lo, hi};
    const LanczosBounds with_exact = lanczos_bounds(sys.op, 200, 1, 0.005, 1e-10, &exact);
    EXPECT_TRUE(with_exact.enclosure_taken);
    EXPECT_EQ(with_exact.bounds.lower, lo);
    EXPECT_EQ(with_exact.bounds.upper, hi);
    // ... as soon as the Ritz values come within the margin of it.
    EXPECT_GE(lo, with_exact.lowest_ritz - 0.005 * (with_exact.highest_ritz - with_exact.lowest_ritz));
    EXPECT_LT(with_exact.iterations, 200);
    // An enclosure wider than the margin (Gershgorin of a dense random matrix is) is not.
    const SpectralBounds wide{lo - 0.1 * width, hi + 0.1 * width};
    const LanczosBounds with_wide = lanczos_bounds(sys.op, 200, 1, 0.005, 0.005, &wide);
    EXPECT_FALSE(with_wide.enclosure_taken);
    EXPECT_GT(with_wide.bounds.lower, wide.lower);
    EXPECT_LE(with_wide.bounds.lower, lo);
    EXPECT_GE(with_wide.bounds.upper, hi);
}

/// The wrapped operator, counting passes over memory; with `pair`, it says it fuses two
/// sweeps per pass and makes them as the two apply() calls of the wrapped one: the
/// moment-form Lanczos then takes the paired path with exactly the arithmetic of the
/// one-sweep loop.
class PairingOperator final : public Operator {
public:
    PairingOperator(const Operator& inner, bool pair) : inner_(inner), pair_(pair) {}
    global_index num_rows() const override { return inner_.num_rows(); }
    std::string name() const override { return "pairing(" + inner_.name() + ")"; }
    OperatorCost cost() const override { return inner_.cost(); }
    int fused_steps(int num_cols) const override { return pair_ && num_cols == 1 ? 2 : 1; }
    mutable int passes = 0;

protected:
    void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override
    {
        ++passes;
        inner_.apply(x, y, ops, dots);
    }
    void do_apply_two_steps(BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* first,
                            DotSums* second) const override
    {
        ++passes;
        inner_.apply(x, y, ops, first);
        inner_.apply(y, x, ops, second);
    }

private:
    const Operator& inner_;
    bool pair_;
};

// Paired sweeps (an operator with fused_steps(1) == 2) are judged one after the other, so
// every outcome of the one-sweep loop comes out identical (the same arithmetic here: equal
// doubles): the enclosure taken after an odd or an even number of sweeps, the residual test,
// the hand-over to the recurrence; sweep 0 runs alone, then one pass per pair.
TEST(Lanczos, PairedSweepsGiveTheOneSweepAnswer)
{
    SmallSystem sys(200, 5);
    const double lo = sys.eigenvalues.front(), hi = sys.eigenvalues.back(), width = hi - lo;
    const SpectralBounds exact{lo, hi}, near{lo - 0.002 * width, hi + 0.002 * width},
        wide{lo - 0.1 * width, hi + 0.1 * width};
    std::set<int> parities;
    for (const int seed : {1, 2, 3, 4}) {
        for (const SpectralBounds& enc : {exact, near, wide})
            for (const double tol : {0.005, 1e-10}) {
                if (&enc == &wide && tol < 0.005) continue;  // 200 recurrence steps: nothing new
                PairingOperator single(sys.op, false), paired(sys.op, true);
                const LanczosBounds one = lanczos_bounds(single, 200, seed, 0.005, tol, &enc);
                const LanczosBounds two = lanczos_bounds(paired, 200, seed, 0.005, tol, &enc);
                EXPECT_EQ(two.enclosure_taken, one.enclosure_taken);
                EXPECT_EQ(two.iterations, one.iterations);
                EXPECT_EQ(two.bounds.lower, one.bounds.lower);
                EXPECT_EQ(two.bounds.upper, one.bounds.upper);
                EXPECT_EQ(two.lowest_ritz, one.lowest_ritz);
                EXPECT_EQ(two.highest_ritz, one.highest_ritz);
                EXPECT_EQ(two.residual_low, one.residual_low);
                EXPECT_EQ(two.residual_high, one.residual_high);
                EXPECT_LE(paired.passes, single.passes);
                if (single.passes == one.iterations) {  // the moment form answered: sweep 0, then pairs
                    EXPECT_EQ(paired.passes, 1 + one.iterations / 2) << "iterations " << one.iterations;
                    parities.insert(one.iterations % 2);
                }
            }
    }
    EXPECT_EQ(parities.size(), 2u) << "answers after both the first and the second sweep of a pair";
}

// The Chebyshev measure dt / (pi sqrt(1 - t^2)) has mu_0 = 1, mu_l = 0 and the monic Chebyshev
// recurrence: alpha_k = 0, beta_1 = 1/2, beta_k = 1/4 (exact in binary; the algorithm adds and
// halves O(1) numbers, so a few ulp).
TEST(JacobiFromChebyshevMoments, ChebyshevMeasureGivesTheChebyshevRecurrence)
{
    std::vector<double> mu(41, 0.0);
    mu[0] = 1.0;
    const JacobiMatrix j = jacobi_from_chebyshev_moments(mu, 1e-14);
    ASSERT_EQ(j.alpha.size(), 20u);
    ASSERT_EQ(j.beta.size(), 21u);  // odd L: beta_m too
    EXPECT_FALSE(j.exhausted);
    for (double a : j.alpha) EXPECT_NEAR(a, 0.0, 1e-15);
    EXPECT_NEAR(j.beta[1], 0.5, 1e-15);
    for (size_t k = 2; k < j.beta.size(); ++k) EXPECT_NEAR(j.beta[k], 0.25, 1e-15) << k;
}

// A discrete measure sum_i w_i delta(t - x_i): the reference is the Stieltjes procedure on
// the points themselves (the three-term recurrence of the orthogonal polynomials, evaluated
// at the x_i in long double), independent of the moments. The modified Chebyshev algorithm
// is well conditioned for measures on [-1, 1]: errors of a few hundred ulp at 12 steps are
// generous, 1e-12 absolute (alpha, beta are O(1)). (Nearer P steps the map from moments to
// coefficients of a P-point measure becomes ill-conditioned: lanczos_bounds stops the moment
// form at N / 4 steps; 12 of 30 here.)
TEST(JacobiFromChebyshevMoments, MatchesTheStieltjesProcedureOnADiscreteMeasure)
{
    const int p = 30;
    std::vector<long double> x(p), w(p);
    for (int i = 0; i < p; ++i) {
        x[i] = 0.95L * std::cos(3.0L * i + 0.4L) * (i % 3 == 0 ? 1.0L : 0.8L);
        w[i] = (1.0L + 0.5L * std::sin(1.7L * i)) / p;
    }
    auto moments = [&](int count) {
        std::vector<double> mu(count);
        for (int l = 0; l < count; ++l) {
            long double s = 0;
            for (int i = 0; i < p; ++i) s += w[i] * std::cos(l * std::acos(x[i]));
            mu[l] = static_cast<double>(s);
        }
        return mu;
    };
    // Stieltjes: pi_{k+1} = (t - alpha_k) pi_k - beta_k pi_{k-1} on the points.
    std::vector<long double> pk(p, 1.0L), pkm(p, 0.0L);
    std::vector<double> alpha, beta;
    long double norm_prev = 1.0L;
    for (int k = 0; k < 12; ++k) {
        long double norm = 0, tnorm = 0;
        for (int i = 0; i < p; ++i) {
            norm += w[i] * pk[i] * pk[i];
            tnorm += w[i] * x[i] * pk[i] * pk[i];
        }
        alpha.push_back(static_cast<double>(tnorm / norm));
        beta.push_back(static_cast<double>(k == 0 ? norm : norm / norm_prev));
        for (int i = 0; i < p; ++i) {
            const long double next = (x[i] - alpha[k]) * pk[i] - (k == 0 ? 0.0L : beta[k]) * pkm[i];
            pkm[i] = pk[i];
            pk[i] = next;
        }
        norm_prev = norm;
    }
    const JacobiMatrix j = jacobi_from_chebyshev_moments(moments(24), 1e-13);
    ASSERT_EQ(j.alpha.size(), 12u);
    ASSERT_FALSE(j.exhausted);
    for (int k = 0; k < 12; ++k) {
        EXPECT_NEAR(j.alpha[k], alpha[k], 1e-12) << k;
        EXPECT_NEAR(j.beta[k], beta[k], 1e-12 * beta[0]) << k;
    }
}

// The moment form (taken with an enclosure) and the three-term recurrence (without) build the
// same tridiagonal from the same start vector: after 8 steps, before the recurrence loses
// orthogonality, their Ritz values and residuals agree to rounding (1e-9 of the width covers
// the recurrence's growth of rounding over 8 steps; the quantities are O(w)). The enclosure
// is 1 % wider than the spectrum on each side, so it is not taken (the moments determine the
// coefficients well only when the spectrum nearly fills the enclosure; a wider one hands over
// to the recurrence, as TakesARigorousEnclosureOnlyWhenItIsWithinTheMargin's `wide` does).
TEST(Lanczos, MomentFormMatchesTheThreeTermRecurrence)
{
    SmallSystem sys(120, 13);
    const double lo = sys.eigenvalues.front(), hi = sys.eigenvalues.back(), width = hi - lo;
    const SpectralBounds wide{lo - 0.01 * width, hi + 0.01 * width};
    const LanczosBounds recurrence = lanczos_bounds(sys.op, 8, 3, 0.005, 0.0);
    const LanczosBounds moments = lanczos_bounds(sys.op, 8, 3, 0.005, 0.0, &wide);  // 9 sweeps: 8 pairs + residual
    ASSERT_EQ(recurrence.iterations, 8);
    ASSERT_EQ(moments.iterations, 9);
    EXPECT_FALSE(moments.enclosure_taken);
    EXPECT_NEAR(moments.lowest_ritz, recurrence.lowest_ritz, 1e-9 * width);
    EXPECT_NEAR(moments.highest_ritz, recurrence.highest_ritz, 1e-9 * width);
    EXPECT_NEAR(moments.residual_low, recurrence.residual_low, 1e-9 * width);
    EXPECT_NEAR(moments.residual_high, recurrence.residual_high, 1e-9 * width);
    // Run to the margin: the bounds contain the LAPACK spectrum and stay inside the enclosure.
    const LanczosBounds quick = lanczos_bounds(sys.op, 200, 3, 0.005, 0.005, &wide);
    EXPECT_LE(quick.bounds.lower, lo);
    EXPECT_GE(quick.bounds.upper, hi);
    EXPECT_GE(quick.bounds.lower, wide.lower);
    EXPECT_LE(quick.bounds.upper, wide.upper);
    EXPECT_LE(std::max(quick.residual_low, quick.residual_high), 0.005 * (quick.highest_ritz - quick.lowest_ritz));
    // A 3 x 3 system is below the moment form's size (N >= 16): the three-term recurrence
    // terminates after 3 steps with the eigenvalues, and the bounds hold.
    SmallSystem tiny(3, 2);
    const SpectralBounds tiny_wide{tiny.eigenvalues.front() - 1.0, tiny.eigenvalues.back() + 1.0};
    const LanczosBounds t = lanczos_bounds(tiny.op, 200, 1, 0.005, 1e-10, &tiny_wide);
    EXPECT_NEAR(t.lowest_ritz, tiny.eigenvalues.front(), 1e-6);
    EXPECT_NEAR(t.highest_ritz, tiny.eigenvalues.back(), 1e-6);
    EXPECT_LE(t.bounds.lower, tiny.eigenvalues.front());
    EXPECT_GE(t.bounds.upper, tiny.eigenvalues.back());
}
