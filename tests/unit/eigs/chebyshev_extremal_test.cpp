// Block Chebyshev-filtered subspace iteration (numerics/eigs/chebyshev_extremal.hpp)
// against LAPACK (zheev of the dense matrix): the wanted end of the spectrum with every
// vector of a degenerate level (the count from select_eigenvalues on LAPACK's values, the
// rule of models.md §6), residuals measured within the tolerance, vectors orthonormal.
//
// Tolerances. For a Hermitian H and a unit vector v with Rayleigh quotient lambda and
// residual r = ||H v - lambda v||, some eigenvalue lies within r of lambda; LAPACK's values
// are exact to ~ n eps ||H||. So |lambda_i - lambda_i(LAPACK)| <= r_i + 100 n eps ||H||
// (the margin on LAPACK's error; ||H|| <= max |eigenvalue|). Orthonormality: the vectors
// are Ritz vectors of blocks orthonormalized by CholQR2 and projected twice against the
// locked ones, orthogonal to working precision: |V^H V - I| <= 1e-12.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/eigs/chebyshev_extremal.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/dense_operator.hpp"
#include "tests/support/dense_oracle.hpp"

using namespace topokpm;
using namespace topokpm::numerics;
using topokpm::testing::DenseOperator;
using topokpm::testing::RandomHermitianSource;

namespace {

double spectral_radius(const std::vector<double>& ev) { return std::max(std::abs(ev.front()), std::abs(ev.back())); }

/// The reference pairs the request selects (with the partners of a degenerate last level).
std::vector<double> expected(const std::vector<double>& reference, SpectrumEnd end, int count, double tolerance)
{
    EigenRequest r;
    r.kind = end == SpectrumEnd::Lowest ? EigenRequest::Kind::Lowest : EigenRequest::Kind::Highest;
    r.count = count;
    r.tolerance = tolerance;
    std::vector<double> out;
    for (int i : select_eigenvalues(reference, r)) out.push_back(reference[static_cast<std::size_t>(i)]);
    return out;
}

void expect_pairs_match(const EigenPairs& got, const std::vector<double>& want, double radius, double tolerance)
{
    ASSERT_EQ(got.values.size(), want.size());
    const std::size_t k = got.values.size();
    ASSERT_EQ(got.residuals.size(), k);
    ASSERT_EQ(got.vectors.size(), k * static_cast<std::size_t>(got.local_rows));
    const global_index n = got.local_rows;
    const double lapack_error = 100.0 * static_cast<double>(n) * std::numeric_limits<double>::epsilon() * radius;
    for (std::size_t i = 0; i < k; ++i) {
        EXPECT_LE(got.residuals[i], tolerance) << "pair " << i;
        EXPECT_NEAR(got.values[i], want[i], got.residuals[i] + lapack_error) << "pair " << i;
    }
    EXPECT_TRUE(std::is_sorted(got.values.begin(), got.values.end()));
    for (std::size_t a = 0; a < k; ++a)
        for (std::size_t b = 0; b <= a; ++b) {
            complex_double dot = 0.0;
            for (global_index r = 0; r < n; ++r) dot += std::conj(got.vectors[r + a * n]) * got.vectors[r + b * n];
            EXPECT_NEAR(std::abs(dot - (a == b ? 1.0 : 0.0)), 0.0, 1e-12) << "vectors " << a << ", " << b;
        }
}

/// A (+) A (+) .. (copies times) for a random Hermitian A of `n` rows: every level `copies`
/// times. Column-major.
std::vector<complex_type> repeated_random(int n, int copies, double fill, std::uint64_t seed)
{
    const std::vector<complex_type> a = topokpm::testing::dense_matrix(RandomHermitianSource(n, fill, seed));
    const int m = copies * n;
    std::vector<complex_type> d(static_cast<std::size_t>(m) * m, 0.0);
    for (int c = 0; c < copies; ++c)
        for (int j = 0; j < n; ++j)
            for (int i = 0; i < n; ++i) d[(i + c * n) + static_cast<std::size_t>(j + c * n) * m] = a[i + j * n];
    return d;
}

}  // namespace

TEST(ChebyshevExtremal, LowestAndHighestOfARandomHermitianMatrix)
{
    const RandomHermitianSource source(300, 0.3, 11);
    const std::vector<double> reference = topokpm::testing::dense_eigenvalues(source);
    const DenseOperator op(topokpm::testing::dense_matrix(source), 300);
    const double tol = 1e-9 * spectral_radius(reference);
    for (SpectrumEnd end : {SpectrumEnd::Lowest, SpectrumEnd::Highest}) {
        ChebyshevExtremalOptions o;
        o.end = end;
        o.count = 7;
        o.tolerance = tol;
        const EigenPairs got = chebyshev_extremal(op, o);
        EXPECT_GT(got.restarts, 1);  // the filter ran
        expect_pairs_match(got, expected(reference, end, 7, tol), spectral_radius(reference), tol);
    }
}

// A (+) A (+) A (+) A: every level four times, and a count (6) ending inside the second
// level: all 8 vectors of the two levels, as the ti slab's 8-fold levels need.
TEST(ChebyshevExtremal, FindsEveryVectorOfFourfoldLevels)
{
    const int n = 4 * 80;
    const std::vector<complex_type> a = repeated_random(80, 4, 0.3, 5);
    const std::vector<double> reference = topokpm::testing::dense_eigenvalues(a, n);
    const DenseOperator op(a, n);
    for (SpectrumEnd end : {SpectrumEnd::Lowest, SpectrumEnd::Highest}) {
        ChebyshevExtremalOptions o;
        o.end = end;
        o.count = 6;
        o.tolerance = 1e-9 * spectral_radius(reference);
        const EigenPairs got = chebyshev_extremal(op, o);
        ASSERT_EQ(got.values.size(), 8u);
        expect_pairs_match(got, expected(reference, end, 6, o.tolerance), spectral_radius(reference), o.tolerance);
    }
}

// A block barely above the count (p = k + 1) still returns every partner: the block grows
// to the pending pairs plus a guard.
TEST(ChebyshevExtremal, SmallBlockStillFindsThePartners)
{
    const int n = 2 * 100;
    const std::vector<complex_type> a = repeated_random(100, 2, 0.4, 9);
    const std::vector<double> reference = topokpm::testing::dense_eigenvalues(a, n);
    const DenseOperator op(a, n);
    ChebyshevExtremalOptions o;
    o.count = 3;
    o.block = 4;
    o.tolerance = 1e-9 * spectral_radius(reference);
    const EigenPairs got = chebyshev_extremal(op, o);
    ASSERT_EQ(got.values.size(), 4u);
    expect_pairs_match(got, expected(reference, SpectrumEnd::Lowest, 3, o.tolerance), spectral_radius(reference),
                       o.tolerance);
    EXPECT_GT(got.block, o.block);  // the block reported is the grown one, not the one asked for
}

// The clean ti slab: Kramers pairs and the higher degeneracies of a clean lattice, through
// the production stencil operator; and with disorder through SELL.
TEST(ChebyshevExtremal, DegenerateLevelsOfTheTiSlab)
{
    for (double disorder : {0.0, 0.5}) {
        hamiltonians::ModelParams p;
        p.name = "ti";
        p.nx = 4;
        p.ny = 4;
        p.nz = 5;
        p.disorder = disorder;
        const auto model = hamiltonians::make_model(p);
        const std::vector<double> reference = topokpm::testing::dense_eigenvalues(*model);
        OperatorSpec spec;
        if (disorder > 0.0) spec.sell = {8, 32};
        else spec.kind = OperatorKind::Free;
        const BuiltOperator built = make_operator(spec, hamiltonians::operator_source(*model));
        ChebyshevExtremalOptions o;
        o.count = 10;
        o.tolerance = 1e-9 * spectral_radius(reference);
        const EigenPairs got = chebyshev_extremal(*built.op, o);
        const std::vector<double> want = expected(reference, SpectrumEnd::Lowest, 10, o.tolerance);
        EXPECT_GE(want.size(), 10u);
        expect_pairs_match(got, want, spectral_radius(reference), o.tolerance);
    }
}

// count = N: the block spans the whole space and the answer is the whole spectrum.
TEST(ChebyshevExtremal, WholeSpectrumOfATinyMatrix)
{
    const RandomHermitianSource source(9, 0.5, 3);
    const std::vector<double> reference = topokpm::testing::dense_eigenvalues(source);
    const DenseOperator op(topokpm::testing::dense_matrix(source), 9);
    ChebyshevExtremalOptions o;
    o.count = 9;
    o.tolerance = 1e-10;
    const EigenPairs got = chebyshev_extremal(op, o);
    expect_pairs_match(got, expected(reference, SpectrumEnd::Lowest, 9, o.tolerance), spectral_radius(reference),
                       o.tolerance);
}

TEST(ChebyshevExtremal, RefusesImpossibleRequests)
{
    const RandomHermitianSource source(20, 0.5, 3);
    const DenseOperator op(topokpm::testing::dense_matrix(source), 20);
    ChebyshevExtremalOptions o;
    o.count = 0;
    EXPECT_THROW(chebyshev_extremal(op, o), InputError);
    o.count = 21;
    EXPECT_THROW(chebyshev_extremal(op, o), InputError);
    o.count = 3;
    o.tolerance = 0.0;
    EXPECT_THROW(chebyshev_extremal(op, o), InputError);
    o.tolerance = 1e-8;
    o.block = 3;
    EXPECT_THROW(chebyshev_extremal(op, o), InputError);
}
