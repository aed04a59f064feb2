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
