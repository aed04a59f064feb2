// Chebyshev filter diagonalization (numerics/eigs/chebfd) against LAPACK's eigenvalues of
// the RowSource's matrix (tests/support/dense_oracle, zheev): ti slabs with dots and
// disorder, the clean (Kramers- and lattice-degenerate) slab, a graphene superlattice, an
// empty window, refusals.
//
// Bounds. Every returned pair has residual r_i <= tol (checked), and for a Hermitian H a
// Rayleigh quotient lies within r_i of an eigenvalue; with the count equal and both lists
// ascending, |lambda_i - lambda_i(LAPACK)| <= r_i + (LAPACK's own error, ~ n eps ||H||).
// tol = 1e-10 max|E| therefore gives the 1e-9 max|E| with room for LAPACK.
// Windows are cut halfway between consecutive reference eigenvalues, so no eigenvalue
// lies within rounding of an edge and the count is unambiguous. Orthonormality: the
// locked vectors come from orthonormalizations twice against everything locked before,
// so V^H V = I to a few eps sqrt(n k); 1e-12 is the bound.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "analysis/reconstruct.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/eigs/chebfd.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/dense_oracle.hpp"

using namespace topokpm;
using namespace topokpm::numerics;

namespace {

std::unique_ptr<hamiltonians::Model> ti(int nx, int ny, int nz, double dots, double disorder)
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = nx;
    p.ny = ny;
    p.nz = nz;
    p.dot_potential = dots;
    p.dot_period = dots != 0.0 ? 3 : 0;
    p.dot_radius = dots != 0.0 ? 1.0 : 0.0;
    p.disorder = disorder;
    return hamiltonians::make_model(p);
}

std::unique_ptr<hamiltonians::Model> graphene(int nx, int ny)
{
    hamiltonians::ModelParams p;
    p.name = "graphene";
    p.nx = nx;
    p.ny = ny;
    p.dot_potential = 0.4;
    p.dot_period = 4;
    p.dot_radius = 1.5;
    return hamiltonians::make_model(p);
}

ChebFdOptions options(const RowSource& model, double lo, double hi, double tol)
{
    ChebFdOptions o;
    o.window_min = lo;
    o.window_max = hi;
    o.tolerance = tol;
    o.bounds = gershgorin_bounds(model);
    o.damping = [](int m) { return analysis::damping_factors(analysis::DampingKernel::Jackson, m, 4.0); };
    return o;
}

/// The window [mid(e_{first-1}, e_first), mid(e_last, e_{last+1})] of the ascending `e`.
std::pair<double, double> window_between(const std::vector<double>& e, int first, int last)
{
    return {0.5 * (e[first - 1] + e[first]), 0.5 * (e[last] + e[last + 1])};
}

/// Runs ChebFD on `op` for [lo, hi] and checks it against `reference` (all eigenvalues).
void expect_window(const Operator& op, const RowSource& model, const std::vector<double>& reference, double lo,
                   double hi, ChebFdStats* stats = nullptr)
{
    const double radius = std::max(std::abs(reference.front()), std::abs(reference.back()));
    const double tol = 1e-10 * radius;
    std::vector<double> inside;
    for (double e : reference)
        if (e >= lo && e <= hi) inside.push_back(e);
    const EigenPairs got = chebfd_eigenpairs(op, options(model, lo, hi, tol), stats);
    ASSERT_EQ(got.values.size(), inside.size()) << "window [" << lo << ", " << hi << "]";
    for (std::size_t i = 0; i < inside.size(); ++i) {
        EXPECT_NEAR(got.values[i], inside[i], 1e-9 * radius) << i;
        EXPECT_LE(got.residuals[i], tol) << i;
    }
    const global_index n = got.local_rows;
    double worst = 0.0;
    for (std::size_t a = 0; a < inside.size(); ++a)
        for (std::size_t b = 0; b <= a; ++b) {
            complex_double dot = 0.0;
            for (global_index r = 0; r < n; ++r) dot += std::conj(got.vectors[r + a * n]) * got.vectors[r + b * n];
            worst = std::max(worst, std::abs(dot - (a == b ? 1.0 : 0.0)));
        }
    EXPECT_LT(worst, 1e-12);
    EXPECT_GE(got.restarts, 2);  // at least two filter passes before it may stop
}

BuiltOperator build(const hamiltonians::Model& model, OperatorKind kind = OperatorKind::Sell)
{
    OperatorSpec spec;
    spec.kind = kind;
    return make_operator(spec, hamiltonians::operator_source(model));
}

}  // namespace

// A ti slab with dots and disorder (no degeneracy left): ~20 states around E = 0, through
// the SELL and the matrix-free operator.
TEST(ChebFd, EqualsLapackOnATiSlabWithDotsAndDisorder)
{
    const auto model = ti(6, 6, 4, 0.4, 0.5);  // 576 rows
    const std::vector<double> e = topokpm::testing::dense_eigenvalues(*model);
    const int mid = static_cast<int>(e.size()) / 2;
    const auto [lo, hi] = window_between(e, mid - 10, mid + 9);
    for (OperatorKind kind : {OperatorKind::Sell, OperatorKind::Free}) {
        const BuiltOperator built = build(*model, kind);
        ChebFdStats stats;
        expect_window(*built.op, *model, e, lo, hi, &stats);
        EXPECT_GT(stats.filter_degree, 15);
        EXPECT_GT(stats.filter_matvecs, 0);
        // The KPM estimate of 20 from 16 random vectors: within its stochastic error
        // (sqrt(20)-ish) by a wide margin, i.e. it sized the space from the right count.
        EXPECT_NEAR(stats.expected_count, 20.0, 12.0);
    }
}

// The clean slab: the Dirac-cone states at the centre come in Kramers pairs and lattice-
// symmetry multiplets (2-, 4- and 8-fold); every vector of every level must be found.
TEST(ChebFd, FindsEveryVectorOfDegenerateLevelsOfTheCleanSlab)
{
    const auto model = ti(6, 6, 4, 0.0, 0.0);
    const std::vector<double> e = topokpm::testing::dense_eigenvalues(*model);
    // A window cut between levels (gaps > 1e-6) holding at least 16 states around E = 0.
    const int mid = static_cast<int>(e.size()) / 2;
    int first = mid - 8, last = mid + 7;
    while (e[first] - e[first - 1] < 1e-6) --first;
    while (e[last + 1] - e[last] < 1e-6) ++last;
    int degenerate = 0;
    for (int i = first; i < last; ++i) degenerate += e[i + 1] - e[i] < 1e-8 ? 1 : 0;
    ASSERT_GE(degenerate, 8) << "the clean slab's window should hold degenerate levels";
    const auto [lo, hi] = window_between(e, first, last);
    expect_window(*build(*model).op, *model, e, lo, hi);
}

// A graphene dot superlattice (real matrix, complex vectors): the states near E = 0 and a
// window at the band's upper part.
TEST(ChebFd, EqualsLapackOnAGrapheneSuperlattice)
{
    const auto model = graphene(12, 12);  // 288 rows
    const std::vector<double> e = topokpm::testing::dense_eigenvalues(*model);
    int first = static_cast<int>(e.size()) / 2 - 6, last = first + 11;
    while (e[first] - e[first - 1] < 1e-6) --first;
    while (e[last + 1] - e[last] < 1e-6) ++last;
    const auto [lo, hi] = window_between(e, first, last);
    expect_window(*build(*model).op, *model, e, lo, hi);
    first = static_cast<int>(e.size()) - 40, last = first + 9;
    while (e[first] - e[first - 1] < 1e-6) --first;
    while (e[last + 1] - e[last] < 1e-6) ++last;
    const auto [lo2, hi2] = window_between(e, first, last);
    expect_window(*build(*model).op, *model, e, lo2, hi2);
}

// A window inside a gap between two eigenvalues returns nothing (after the fewest passes, three).
TEST(ChebFd, AnEmptyWindowReturnsZeroPairs)
{
    const auto model = ti(6, 6, 4, 0.4, 0.5);
    const std::vector<double> e = topokpm::testing::dense_eigenvalues(*model);
    int gap = static_cast<int>(e.size()) / 2;
    for (int i = gap; i + 1 < static_cast<int>(e.size()); ++i)
        if (e[i + 1] - e[i] > e[gap + 1] - e[gap]) gap = i;
    const double lo = e[gap] + 0.3 * (e[gap + 1] - e[gap]), hi = e[gap] + 0.7 * (e[gap + 1] - e[gap]);
    const BuiltOperator built = build(*model);
    const EigenPairs got = chebfd_eigenpairs(*built.op, options(*model, lo, hi, 1e-9));
    EXPECT_TRUE(got.values.empty());
    EXPECT_EQ(got.restarts, 3);  // the fewest passes before it may stop
}

TEST(ChebFd, RefusesImpossibleOptions)
{
    const auto model = ti(4, 4, 2, 0.0, 0.0);
    const BuiltOperator built = build(*model);
    EXPECT_THROW(chebfd_eigenpairs(*built.op, options(*model, 1.0, -1.0, 1e-8)), InputError);
    auto o = options(*model, -0.5, 0.5, 1e-8);
    o.safety = 1.0;
    EXPECT_THROW(chebfd_eigenpairs(*built.op, o), InputError);
    o = options(*model, -0.5, 0.5, 1e-8);
    o.degree = 8;
    EXPECT_THROW(chebfd_eigenpairs(*built.op, o), InputError);
    o = options(*model, -0.5, 0.5, 0.0);
    EXPECT_THROW(chebfd_eigenpairs(*built.op, o), InputError);
}

// The search space is sized after the KPM count; one that does not fit the memory given is a
// ResourceError naming it before the blocks are allocated, and enough memory runs as before.
TEST(ChebFd, ASearchSpaceBeyondTheMemoryIsRefusedBeforeAllocating)
{
    const auto model = ti(4, 4, 2, 0.0, 0.0);
    const BuiltOperator built = build(*model);
    auto o = options(*model, -0.5, 0.5, 1e-8);
    o.memory = {1024.0, "have 1 KiB"};  // less than one vector of 128 rows x 16 bytes
    try {
        chebfd_eigenpairs(*built.op, o);
        ADD_FAILURE() << "no ResourceError";
    } catch (const topokpm::ResourceError& e) {
        EXPECT_NE(std::string(e.what()).find("ChebFD search space"), std::string::npos) << e.what();
    }
    o.memory = {1e12, "have 1e12 B"};
    EXPECT_NO_THROW(chebfd_eigenpairs(*built.op, o));
}

// The degree rule of the header: M = ceil(4 pi / (theta_l - theta_r)), at least 16.
TEST(ChebFd, DegreeFollowsTheWindowWidthInTheta)
{
    EXPECT_EQ(chebfd_degree(-0.01, 0.01), static_cast<int>(std::ceil(4.0 * M_PI / (std::acos(-0.01) - std::acos(0.01)))));
    EXPECT_EQ(chebfd_degree(-1.0, 1.0), 16);
    EXPECT_GT(chebfd_degree(-0.001, 0.001), 5 * chebfd_degree(-0.01, 0.01));
}
