// The shared subspace algebra (numerics/eigs/subspace.hpp) against naive loops and LAPACK.
//
// Tolerances. Classical Gram-Schmidt with the DGKS second pass leaves x orthogonal to the
// basis to a few eps relative to what is left of x (Giraud, Langou, Rozloznik 2005:
// "twice is enough"); 1e-13 allows for n = 200 rows. Rayleigh-Ritz on an invariant
// subspace spanned by LAPACK eigenvectors returns their eigenvalues to O(n eps ||H||) and
// residuals of the same order (LAPACK's vectors are orthonormal and accurate to that).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "numerics/base/dense_eigen.hpp"
#include "numerics/eigs/subspace.hpp"
#include "tests/support/dense_operator.hpp"
#include "tests/support/dense_oracle.hpp"

using namespace topokpm;
using namespace topokpm::numerics;
using topokpm::testing::DenseOperator;
using topokpm::testing::RandomHermitianSource;

namespace {

constexpr int kRows = 200;

Columns random_columns(int n, int k, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::normal_distribution<double> g;
    Columns x(n, k);
    for (auto& v : x.data) v = complex_double(g(gen), g(gen));
    return x;
}

complex_double dot(const complex_double* a, const complex_double* b, int n)
{
    complex_double s = 0.0;
    for (int i = 0; i < n; ++i) s += std::conj(a[i]) * b[i];
    return s;
}

double norm(const complex_double* a, int n) { return std::sqrt(std::real(dot(a, a, n))); }

}  // namespace

// Coefficients equal the naive B^H x; the result is orthogonal to B; a vector almost in
// span(B) (1e-9 outside) takes the second pass and is still orthogonal relative to what is left.
TEST(Subspace, ProjectOutMatchesNaiveAndTakesTheSecondPassWhenAsked)
{
    const DenseOperator op(topokpm::testing::dense_matrix(RandomHermitianSource(kRows, 0.3, 3)), kRows);
    Columns b = random_columns(kRows, 12, 1);
    ASSERT_TRUE(orthonormalize_by_columns(op, kRows, b.data.data(), b.cols, 1e-8).empty());
    Columns x = random_columns(kRows, 3, 2);
    // Column 2: a combination of B plus 1e-9 of a random vector.
    for (int i = 0; i < kRows; ++i) {
        complex_double v = 1e-9 * x.col(2)[i];
        for (int c = 0; c < b.cols; ++c) v += complex_double(0.3 * c, -0.1) * b.col(c)[i];
        x.col(2)[i] = v;
    }
    const Columns original = x;
    // Columns 0 and 1 alone: a random vector keeps most of its norm, one pass.
    Columns first_two(kRows, 2);
    std::copy_n(x.data.begin(), 2 * kRows, first_two.data.begin());
    std::vector<complex_double> c2;
    EXPECT_EQ(project_out(op, kRows, {{b.data.data(), b.cols}}, first_two.data.data(), 2, &c2), 1);
    std::vector<complex_double> coef;
    EXPECT_EQ(project_out(op, kRows, {{b.data.data(), 5}, {b.col(5), 7}}, x.data.data(), 3, &coef), 2);
    for (int j = 0; j < 3; ++j) {
        const double left = norm(x.col(j), kRows);
        for (int c = 0; c < b.cols; ++c) {
            EXPECT_NEAR(std::abs(coef[c + j * 12] - dot(b.col(c), original.col(j), kRows)), 0.0,
                        1e-12 * norm(original.col(j), kRows));
            EXPECT_LE(std::abs(dot(b.col(c), x.col(j), kRows)), 1e-13 * left) << "column " << j << " against " << c;
        }
    }
}

// A column that is the sum of two earlier ones is reported dependent and zeroed; the others
// are orthonormal and X_old = Q R on them.
TEST(Subspace, OrthonormalizeByColumnsReportsDependentColumns)
{
    const DenseOperator op(topokpm::testing::dense_matrix(RandomHermitianSource(kRows, 0.3, 3)), kRows);
    Columns x = random_columns(kRows, 4, 7);
    for (int i = 0; i < kRows; ++i) x.col(2)[i] = x.col(0)[i] + complex_double(0.0, 2.0) * x.col(1)[i];
    const Columns original = x;
    std::vector<complex_double> r;
    const std::vector<int> dependent = orthonormalize_by_columns(op, kRows, x.data.data(), 4, 1e-8, &r);
    ASSERT_EQ(dependent, std::vector<int>{2});
    EXPECT_EQ(norm(x.col(2), kRows), 0.0);
    for (int a : {0, 1, 3})
        for (int c : {0, 1, 3})
            EXPECT_NEAR(std::abs(dot(x.col(a), x.col(c), kRows) - (a == c ? 1.0 : 0.0)), 0.0, 1e-13);
    for (int j : {0, 1, 3})
        for (int i = 0; i < kRows; ++i) {
            complex_double v = 0.0;
            for (int k = 0; k <= j; ++k) v += x.col(k)[i] * r[k + j * 4];
            EXPECT_NEAR(std::abs(v - original.col(j)[i]), 0.0, 1e-12 * norm(original.col(j), kRows));
        }
}

// Rayleigh-Ritz on a basis of an invariant subspace (6 LAPACK eigenvectors, rotated by a
// random unitary) returns their eigenvalues with residuals at rounding level.
TEST(Subspace, RayleighRitzOnAnInvariantSubspaceGivesItsEigenpairs)
{
    const std::vector<complex_type> a = topokpm::testing::dense_matrix(RandomHermitianSource(kRows, 0.3, 5));
    const DenseOperator op(a, kRows);
    const HermitianEigensystem es = hermitian_eigensystem(a, kRows, 'L');
    const int picks[6] = {0, 1, 50, 51, 120, 199};
    Columns q(kRows, 6);
    const Columns mix = random_columns(6, 6, 9);
    for (int c = 0; c < 6; ++c)
        for (int i = 0; i < kRows; ++i) {
            complex_double v = 0.0;
            for (int k = 0; k < 6; ++k) v += es.vectors[i + static_cast<std::size_t>(picks[k]) * kRows] * mix.col(c)[k];
            q.col(c)[i] = v;
        }
    ASSERT_TRUE(orthonormalize_by_columns(op, kRows, q.data.data(), 6, 1e-8).empty());
    Columns hq(kRows, 6);
    apply_columns(op, q, hq);
    const RitzPairs rr = rayleigh_ritz(op, q, hq, true);
    const double scale = std::max(std::abs(es.values.front()), std::abs(es.values.back()));
    ASSERT_EQ(rr.values.size(), 6u);
    for (int k = 0; k < 6; ++k) {
        EXPECT_NEAR(rr.values[k], es.values[picks[k]], 100 * kRows * 2.2e-16 * scale);
        EXPECT_LE(rr.residuals[k], 100 * kRows * 2.2e-16 * scale);
    }
}

namespace {

/// A = Q diag(sigma) W with Q orthonormal (CGS2 of random columns), sigma_c = kappa^(-c/(k-1))
/// (so ||A||_2 = 1 and kappa2(A) = kappa) and W = I - 2 w w^H / (w^H w) unitary.
Columns conditioned_columns(const Operator& op, int n, int k, double kappa, unsigned seed)
{
    Columns q = random_columns(n, k, seed);
    EXPECT_TRUE(orthonormalize_by_columns(op, n, q.data.data(), k, 1e-8).empty());
    const Columns w = random_columns(k, 1, seed + 1);
    double ww = 0.0;
    for (int c = 0; c < k; ++c) ww += std::norm(w.col(0)[c]);
    Columns a(n, k);
    for (int c = 0; c < k; ++c)
        for (int j = 0; j < k; ++j) {
            const complex_double wjc = (j == c ? 1.0 : 0.0) - 2.0 * w.col(0)[j] * std::conj(w.col(0)[c]) / ww;
            const double sigma = std::pow(kappa, -double(j) / (k - 1));
            for (int i = 0; i < n; ++i) a.col(c)[i] += q.col(j)[i] * sigma * wjc;
        }
    return a;
}

/// ||Q^H Q - I||_F and ||A - Q Q^H A||_F for the orthonormalized block q of a.
std::pair<double, double> orthogonality_and_span(const Columns& a, const Columns& q)
{
    const int n = a.n, k = a.cols;
    double orth = 0.0, span = 0.0;
    for (int x = 0; x < k; ++x)
        for (int y = 0; y < k; ++y) orth += std::norm(dot(q.col(x), q.col(y), n) - (x == y ? 1.0 : 0.0));
    for (int c = 0; c < k; ++c) {
        std::vector<complex_double> v(a.col(c), a.col(c) + n);
        for (int x = 0; x < k; ++x) {
            const complex_double p = dot(q.col(x), a.col(c), n);
            for (int i = 0; i < n; ++i) v[i] -= q.col(x)[i] * p;
        }
        span += std::pow(norm(v.data(), n), 2);
    }
    return {std::sqrt(orth), std::sqrt(span)};
}

}  // namespace

// CholQR2 on one rank, in place (the one CholQR2 of the code base). Bounds: Yamamoto et al.
// (ETNA 44, 2015, Thms 3.3/3.4) give ||Q^H Q - I||_F <= 6 (N k + k(k+1)) u and
// ||A - Q R||_F <= 5 k^2 sqrt(k) u ||A||_2 when kappa2(A) is below the fallback limit; with
// Q^H A = (Q^H Q) R + Q^H E, ||A - Q Q^H A|| <= 2 ||E|| + ||Q^H Q - I|| ||R|| (||R|| = ||A|| = 1).
TEST(Subspace, OrthonormalizeIsCholQr2OnAWellConditionedBlock)
{
    const int k = 12;
    const DenseOperator op(topokpm::testing::dense_matrix(RandomHermitianSource(kRows, 0.3, 3)), kRows);
    const Columns a = conditioned_columns(op, kRows, k, 4.0, 21);
    Columns q = a;
    EXPECT_FALSE(orthonormalize(op, q)) << "a block of condition 4 took the TSQR fallback";
    const double u = 1.1102230246251565e-16;
    const double orth_bound = 6 * (double(kRows) * k + double(k) * (k + 1)) * u;
    const double res_bound = 5.0 * k * k * std::sqrt(double(k)) * u;
    const auto [orth, span] = orthogonality_and_span(a, q);
    EXPECT_LE(orth, orth_bound);
    EXPECT_LE(span, 2 * res_bound + orth_bound);
}

// kappa2(A) = 1e10 (not a column scaling) puts kappa2(G) = 1e20 far beyond 1 / (64 (N k +
// k(k+1)) u) ~ 5.5e10: plain CholQR2 is rejected, and shifted passes (s = 11 (N k + k(k+1))
// u ||A D||_F^2) must bring it within the rule without TSQR. The last two passes are plain
// ones that met the rule, so CholQR2's bound holds: ||Q^H Q - I||_F <= 6 (N k + k(k+1)) u.
// Span: each pass is a triangular solve, backward stable row by row (Higham Thm 8.5):
// X_i = X_{i+1} R_i + dX_i, ||dX_i||_F <= gamma_k ||X_{i+1}||_F ||R_i||_F <= gamma_k sqrt(k)
// ||R_i||_F, with ||R_0||_F ~ ||A D||_F <= 2 sqrt(k) and the later R's norm <= sqrt(k); the
// errors carried back through the R's add up to <= 5 k^1.5 gamma_k ||A D||_F, plus
// ||Q^H Q - I|| ||R|| as in the CholQR2 test.
TEST(Subspace, OrthonormalizeTakesShiftedPassesForAnIllConditionedBlock)
{
    const int k = 12;
    const DenseOperator op(topokpm::testing::dense_matrix(RandomHermitianSource(kRows, 0.3, 3)), kRows);
    const Columns a = conditioned_columns(op, kRows, k, 1e10, 22);
    Columns q = a;
    EXPECT_FALSE(orthonormalize(op, q)) << "a block of condition 1e10 took the TSQR fallback";
    const double u = 1.1102230246251565e-16, gamma_k = k * u / (1 - k * u);
    const double orth_bound = 6 * (double(kRows) * k + double(k) * (k + 1)) * u;
    const double ad_norm = 2.0 * std::sqrt(double(k));
    const auto [orth, span] = orthogonality_and_span(a, q);
    EXPECT_LE(orth, orth_bound);
    EXPECT_LE(span, (5 * std::pow(double(k), 1.5) * gamma_k + orth_bound) * ad_norm * ad_norm);
}

// A zero column cannot be equilibrated (nor shifted into a basis vector): the fallback
// (Householder TSQR) must be taken. Its Q is orthonormal independently of cond(A): Higham
// Thm 19.4 gives ||Q^H Q - I||_F <= sqrt(k) gamma_{c N k}; c = 10 covers the tree's extra
// levels. A is in span(Q) to the same order (backward stability).
TEST(Subspace, OrthonormalizeFallsBackToTsqrForADependentBlock)
{
    const int k = 12;
    const DenseOperator op(topokpm::testing::dense_matrix(RandomHermitianSource(kRows, 0.3, 3)), kRows);
    Columns a = conditioned_columns(op, kRows, k, 1e3, 22);
    std::fill_n(a.col(5), kRows, complex_double(0.0, 0.0));
    Columns q = a;
    EXPECT_TRUE(orthonormalize(op, q)) << "a block with a zero column stayed with CholQR";
    const double bound = std::sqrt(double(k)) * 10.0 * kRows * k * 1.1102230246251565e-16;
    const auto [orth, span] = orthogonality_and_span(a, q);
    EXPECT_LE(orth, bound);
    EXPECT_LE(span, bound);
}

// Column c of a condition-4 block scaled by 10^(-10 c / (k - 1)): kappa2(A) ~ 1e10, but the
// pass's power-of-two column scaling D (d_j^2 ||a_j||^2 in [1, 4)) is exact, so it is CholQR2
// of A D, kappa2(A D) <= 2 x 4 (the scaled columns of the condition-4 block), well inside the
// limit: no fallback (the unscaled Gram matrix, kappa ~ 1e20, would fall back), and Yamamoto's
// bounds hold for A D: ||Q^H Q - I||_F <= 6 (N k + k(k+1)) u, and per column
// ||a_j d_j - Q (Q^H a_j d_j)|| <= 2 ||E|| + ||Q^H Q - I|| ||R|| with ||E|| <= 5 k^2 sqrt(k) u
// ||A D||_2 and ||R|| = ||A D||_2 <= 2 sqrt(k); divided by d_j ||a_j|| >= 1 it bounds the
// column's relative distance to span(Q).
TEST(Subspace, OrthonormalizeEquilibratesAColumnScaledBlock)
{
    const int k = 12;
    const DenseOperator op(topokpm::testing::dense_matrix(RandomHermitianSource(kRows, 0.3, 3)), kRows);
    Columns a = conditioned_columns(op, kRows, k, 4.0, 23);
    for (int c = 0; c < k; ++c)
        for (int i = 0; i < kRows; ++i) a.col(c)[i] *= std::pow(10.0, -10.0 * c / (k - 1));
    Columns q = a;
    EXPECT_FALSE(orthonormalize(op, q)) << "a column-scaled block of condition 1e10 took the TSQR fallback";
    const double u = 1.1102230246251565e-16;
    const double orth_bound = 6 * (double(kRows) * k + double(k) * (k + 1)) * u;
    const double ad_norm = 2.0 * std::sqrt(double(k));
    const double col_bound = 2 * 5.0 * k * k * std::sqrt(double(k)) * u * ad_norm + orth_bound * ad_norm;
    EXPECT_LE(orthogonality_and_span(a, q).first, orth_bound);
    for (int c = 0; c < k; ++c) {
        std::vector<complex_double> v(a.col(c), a.col(c) + kRows);
        for (int x = 0; x < k; ++x) {
            const complex_double p = dot(q.col(x), a.col(c), kRows);
            for (int i = 0; i < kRows; ++i) v[i] -= q.col(x)[i] * p;
        }
        EXPECT_LE(norm(v.data(), kRows), col_bound * norm(a.col(c), kRows)) << "column " << c;
    }
}

// reorthonormalize() on an orthonormal block perturbed by 1e-8: kappa2 <= 1 + 1e-7, inside
// the premise of CholQR2's second pass (||Q1^H Q1 - I|| <= 5/64, Yamamoto et al.), so one
// CholQR pass gives CholQR2's bound 6 (N k + k(k+1)) u, and the span moves by no more than
// the perturbation. A block it cannot take goes to orthonormalize() (a zero column: TSQR).
TEST(Subspace, ReorthonormalizeIsOneCholQrPassOnANearlyOrthonormalBlock)
{
    const int k = 12;
    const DenseOperator op(topokpm::testing::dense_matrix(RandomHermitianSource(kRows, 0.3, 3)), kRows);
    Columns a = conditioned_columns(op, kRows, k, 1.0, 24);
    const Columns e = random_columns(kRows, k, 25);
    for (std::size_t i = 0; i < a.data.size(); ++i) a.data[i] += 1e-8 * e.data[i];
    Columns q = a;
    EXPECT_FALSE(reorthonormalize(op, q)) << "a nearly orthonormal block took the TSQR fallback";
    const double u = 1.1102230246251565e-16;
    const auto [orth, span] = orthogonality_and_span(a, q);
    EXPECT_LE(orth, 6 * (double(kRows) * k + double(k) * (k + 1)) * u);
    EXPECT_LE(span, 1e-13);  // the column space of A itself: rounding of O(k u) per column
    Columns b = conditioned_columns(op, kRows, k, 1e3, 22);
    std::fill_n(b.col(5), kRows, complex_double(0.0, 0.0));
    Columns qb = b;
    EXPECT_TRUE(reorthonormalize(op, qb)) << "a block with a zero column stayed with CholQR";
    EXPECT_LE(orthogonality_and_span(b, qb).first, std::sqrt(double(k)) * 10.0 * kRows * k * u);
}

// Q := Q Y in place equals the naive product into a separate block, for n not a multiple
// of the row chunk (5000 = 2 x 2048 + 904) and m < k; the columns past m are dropped.
// Each entry is a k-term sum of O(1) products: |error| <= k eps max|q||y| ~ 1e-14.
TEST(Subspace, RotateInPlaceMatchesTheNaiveProduct)
{
    const int n = 5000, k = 24, m = 17;
    Columns q = random_columns(n, k, 7);
    const Columns y = random_columns(k, m, 8);  // k x m, column-major, ld k
    std::vector<complex_double> want(static_cast<std::size_t>(n) * m, 0.0);
    for (int c = 0; c < m; ++c)
        for (int j = 0; j < k; ++j)
            for (int r = 0; r < n; ++r) want[r + static_cast<std::size_t>(c) * n] += q.col(j)[r] * y.col(c)[j];
    rotate_in_place(q, y.data.data(), m);
    ASSERT_EQ(q.cols, m);
    ASSERT_EQ(q.data.size(), static_cast<std::size_t>(n) * m);
    double worst = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(q.data[i] - want[i]));
    EXPECT_LT(worst, 1e-12);
}
