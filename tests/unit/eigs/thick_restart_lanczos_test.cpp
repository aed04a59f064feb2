// Thick-restart Lanczos against LAPACK (zheev of the dense matrix): the returned values are
// the wanted end of the spectrum, degenerate levels with every vector, residuals measured
// within the tolerance, vectors orthonormal.
//
// Tolerances. For a Hermitian H and a unit vector v with Rayleigh quotient lambda and
// residual r = ||H v - lambda v||, some eigenvalue lies within r of lambda; LAPACK's values
// are exact to ~ n eps ||H||. So |lambda_i - lambda_i(LAPACK)| <= r_i + 100 n eps ||H||
// (the margin on LAPACK's error; ||H|| <= max |eigenvalue|). Orthonormality: the vectors
// come from CGS2-orthogonalized bases, orthogonal to working precision: |V^H V - I| <= 1e-12.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/eigs/thick_restart_lanczos.hpp"
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

/// The wanted end of `reference` (ascending), the same length as `got`.
std::vector<double> wanted_end(const std::vector<double>& reference, SpectrumEnd end, std::size_t count)
{
    if (end == SpectrumEnd::Lowest) return {reference.begin(), reference.begin() + count};
    return {reference.end() - count, reference.end()};
}

void expect_pairs_match(const EigenPairs& got, const std::vector<double>& reference, SpectrumEnd end, double tolerance)
{
    const std::size_t k = got.values.size();
    ASSERT_EQ(got.residuals.size(), k);
    ASSERT_EQ(got.vectors.size(), k * static_cast<std::size_t>(got.local_rows));
    const std::vector<double> want = wanted_end(reference, end, k);
    const double lapack_error = 100.0 * reference.size() * std::numeric_limits<double>::epsilon() *
                                spectral_radius(reference);
    for (std::size_t i = 0; i < k; ++i) {
        EXPECT_LE(got.residuals[i], tolerance) << "pair " << i;
        EXPECT_NEAR(got.values[i], want[i], got.residuals[i] + lapack_error) << "pair " << i;
    }
    EXPECT_TRUE(std::is_sorted(got.values.begin(), got.values.end()));
    const global_index n = got.local_rows;
    for (std::size_t a = 0; a < k; ++a)
        for (std::size_t b = 0; b <= a; ++b) {
            complex_double dot = 0.0;
            for (global_index r = 0; r < n; ++r)
                dot += std::conj(got.vectors[r + a * n]) * got.vectors[r + b * n];
            EXPECT_NEAR(std::abs(dot - (a == b ? 1.0 : 0.0)), 0.0, 1e-12) << "vectors " << a << ", " << b;
        }
}

/// A (+) A for a random Hermitian A of `n` rows: every level exactly twice. Column-major 2n x 2n.
std::vector<complex_type> doubled_random(int n, double fill, std::uint64_t seed)
{
    const std::vector<complex_type> a = topokpm::testing::dense_matrix(RandomHermitianSource(n, fill, seed));
    const int m = 2 * n;
    std::vector<complex_type> d(static_cast<std::size_t>(m) * m, 0.0);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
            d[i + j * m] = a[i + j * n];
            d[(i + n) + (j + n) * m] = a[i + j * n];
        }
    return d;
}

}  // namespace

TEST(ThickRestartLanczos, LowestAndHighestOfARandomHermitianMatrix)
{
    const RandomHermitianSource source(300, 0.3, 11);
    const std::vector<double> reference = topokpm::testing::dense_eigenvalues(source);
    const DenseOperator op(topokpm::testing::dense_matrix(source), 300);
    const double tol = 1e-9 * spectral_radius(reference);
    for (SpectrumEnd end : {SpectrumEnd::Lowest, SpectrumEnd::Highest}) {
        ThickRestartOptions o;
        o.end = end;
        o.count = 7;
        o.tolerance = tol;
        o.basis_size = 24;  // small: several thick restarts happen
        const EigenPairs got = thick_restart_lanczos(op, o);
        ASSERT_EQ(got.values.size(), 7u);
        EXPECT_GT(got.restarts, 0);
        expect_pairs_match(got, reference, end, tol);
    }
}

// A ⊕ A: every level exactly twice. One Krylov space holds one vector of each pair; the
// searches from fresh vectors must find the partners.
TEST(ThickRestartLanczos, FindsEveryVectorOfDegenerateLevels)
{
    const int n = 240;
    const std::vector<complex_type> doubled = doubled_random(120, 0.3, 5);
    const std::vector<double> reference = topokpm::testing::dense_eigenvalues(doubled, n);
    const DenseOperator op(doubled, n);
    ThickRestartOptions o;
    o.count = 6;
    o.tolerance = 1e-9 * spectral_radius(reference);
    const EigenPairs got = thick_restart_lanczos(op, o);
    ASSERT_EQ(got.values.size(), 6u);  // three levels, each twice
    EXPECT_GT(got.searches, 1);
    expect_pairs_match(got, reference, SpectrumEnd::Lowest, o.tolerance);
    for (int i = 0; i < 6; i += 2) EXPECT_NEAR(got.values[i], got.values[i + 1], 2 * o.tolerance);
}

// A count ending inside a degenerate level returns the partner too (models.md §6).
TEST(ThickRestartLanczos, ReturnsThePartnerOfADegenerateLastLevel)
{
    const int n = 120;
    const std::vector<complex_type> doubled = doubled_random(60, 0.4, 9);
    const std::vector<double> reference = topokpm::testing::dense_eigenvalues(doubled, n);
    const DenseOperator op(doubled, n);
    ThickRestartOptions o;
    o.end = SpectrumEnd::Highest;
    o.count = 3;
    o.tolerance = 1e-9 * spectral_radius(reference);
    const EigenPairs got = thick_restart_lanczos(op, o);
    ASSERT_EQ(got.values.size(), 4u);
    expect_pairs_match(got, reference, SpectrumEnd::Highest, o.tolerance);
}

// The ti slab is Kramers-degenerate (time-reversal symmetry without disorder breaking it:
// the Anderson potential is spin-independent), through the production SELL operator.
TEST(ThickRestartLanczos, KramersPairsOfTheTiSlab)
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = 4;
    p.ny = 4;
    p.nz = 5;
    p.disorder = 0.5;
    const auto model = hamiltonians::make_model(p);
    const std::vector<double> reference = topokpm::testing::dense_eigenvalues(*model);
    OperatorSpec spec;
    spec.sell = {8, 32};
    const BuiltOperator built = make_operator(spec, hamiltonians::operator_source(*model));
    ThickRestartOptions o;
    o.count = 8;
    o.tolerance = 1e-8 * spectral_radius(reference);
    const EigenPairs got = thick_restart_lanczos(*built.op, o);
    ASSERT_EQ(got.values.size(), 8u);
    expect_pairs_match(got, reference, SpectrumEnd::Lowest, o.tolerance);
    for (int i = 0; i < 8; i += 2) EXPECT_NEAR(got.values[i], got.values[i + 1], 2 * o.tolerance) << "Kramers pair " << i;
}

// count = N: the basis spans the whole space and the answer is the whole spectrum.
TEST(ThickRestartLanczos, WholeSpectrumOfATinyMatrix)
{
    const RandomHermitianSource source(9, 0.5, 3);
    const std::vector<double> reference = topokpm::testing::dense_eigenvalues(source);
    const DenseOperator op(topokpm::testing::dense_matrix(source), 9);
    ThickRestartOptions o;
    o.count = 9;
    o.tolerance = 1e-10;
    const EigenPairs got = thick_restart_lanczos(op, o);
    ASSERT_EQ(got.values.size(), 9u);
    expect_pairs_match(got, reference, SpectrumEnd::Lowest, o.tolerance);
}

TEST(ThickRestartLanczos, RefusesImpossibleRequests)
{
    const RandomHermitianSource source(20, 0.5, 3);
    const DenseOperator op(topokpm::testing::dense_matrix(source), 20);
    ThickRestartOptions o;
    o.count = 0;
    EXPECT_THROW(thick_restart_lanczos(op, o), InputError);
    o.count = 21;
    EXPECT_THROW(thick_restart_lanczos(op, o), InputError);
    o.count = 3;
    o.tolerance = 0.0;
    EXPECT_THROW(thick_restart_lanczos(op, o), InputError);
    o.tolerance = 1e-8;
    o.basis_size = 4;
    EXPECT_THROW(thick_restart_lanczos(op, o), InputError);
}
