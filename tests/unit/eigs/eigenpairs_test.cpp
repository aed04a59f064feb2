// The eigen request (models.md §6) and the dense method: selection rules by hand, and the
// dense method through production operators against LAPACK on the RowSource's matrix.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/eigs/eigenpairs.hpp"
#include "numerics/eigs/thick_restart_lanczos.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/dense_oracle.hpp"

using namespace topokpm;
using namespace topokpm::numerics;
using Kind = EigenRequest::Kind;

namespace {

EigenRequest request(Kind kind, int count, double shift = 0.0)
{
    EigenRequest r;
    r.kind = kind;
    r.count = count;
    r.shift = shift;
    return r;
}

std::unique_ptr<hamiltonians::Model> ti(int nx, int ny, int nz)
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = nx;
    p.ny = ny;
    p.nz = nz;
    p.dot_potential = 0.3;
    p.dot_period = 2;
    p.dot_radius = 1.0;
    return hamiltonians::make_model(p);
}

}  // namespace

TEST(EigenRequest, SelectsByTheRulesOfModelsSection6)
{
    const std::vector<double> v{-2.0, -1.0, -1.0, 0.0, 0.5, 1.0, 3.0};
    EXPECT_EQ(select_eigenvalues(v, request(Kind::Lowest, 3)), (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(select_eigenvalues(v, request(Kind::Highest, 2)), (std::vector<int>{5, 6}));
    EigenRequest w = request(Kind::Window, 0);
    w.window_min = -1.0;
    w.window_max = 0.5;
    EXPECT_EQ(select_eigenvalues(v, w), (std::vector<int>{1, 2, 3, 4}));  // closed interval
    // 0 and 0.5 are both 0.25 from the shift: the lower one first.
    EXPECT_EQ(select_eigenvalues(v, request(Kind::Shift, 1, 0.25)), (std::vector<int>{3}));
    EXPECT_EQ(select_eigenvalues(v, request(Kind::Shift, 2, 0.25)), (std::vector<int>{3, 4}));
    EXPECT_EQ(select_eigenvalues(v, request(Kind::Shift, 3, -0.9)), (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(select_eigenvalues(v, request(Kind::Lowest, 9)).size(), 7u);
    // A degenerate level is returned whole: the second -1 joins the 2 lowest.
    EXPECT_EQ(select_eigenvalues(v, request(Kind::Lowest, 2)), (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(select_eigenvalues(v, request(Kind::Shift, 1, -1.2)), (std::vector<int>{1, 2}));
    // A symmetric pair whose distances differ by rounding only is a tie: the lower first
    // (an exact comparison would take +0.5 - 1e-15, 1e-15 nearer 0).
    const std::vector<double> mirror{-1.0, -0.5, 0.5 - 1e-15, 1.0};
    EXPECT_EQ(select_eigenvalues(mirror, request(Kind::Shift, 1, 0.0)), (std::vector<int>{1}));
}

TEST(EigenRequest, RefusesImpossibleRequests)
{
    EXPECT_THROW(validate(request(Kind::Lowest, 0), 10), InputError);
    EXPECT_THROW(validate(request(Kind::Highest, 11), 10), InputError);
    EigenRequest w = request(Kind::Window, 0);
    w.window_min = 1.0;
    w.window_max = -1.0;
    EXPECT_THROW(validate(w, 10), InputError);
    w.window_max = std::numeric_limits<double>::infinity();
    EXPECT_THROW(validate(w, 10), InputError);
    w.window_max = 2.0;
    EXPECT_NO_THROW(validate(w, 10));
    EigenRequest t = request(Kind::Lowest, 2);
    t.tolerance = -1.0;
    EXPECT_THROW(validate(t, 10), InputError);
}

// The dense method through the SELL and the matrix-free operator: LAPACK's eigenvalues of
// the RowSource's matrix (the independent reference) to n eps ||H|| each, residuals of the
// same size, vectors orthonormal; a window selects exactly the reference values inside it.
TEST(DenseEigenpairs, EqualLapackThroughEveryOperatorKind)
{
    const auto model = ti(4, 4, 3);  // 192 rows
    const std::vector<double> reference = topokpm::testing::dense_eigenvalues(*model);
    const double scale = std::max(std::abs(reference.front()), std::abs(reference.back()));
    const double eps_h = 1000.0 * model->num_rows() * std::numeric_limits<double>::epsilon() * scale;
    EigenRequest window = request(Kind::Window, 0);
    window.window_min = -0.6;
    window.window_max = 0.6;
    std::vector<double> inside;
    for (double e : reference)
        if (e >= window.window_min && e <= window.window_max) inside.push_back(e);
    ASSERT_FALSE(inside.empty());
    for (OperatorKind kind : {OperatorKind::Sell, OperatorKind::Free}) {
        OperatorSpec spec;
        spec.kind = kind;
        const BuiltOperator built = make_operator(spec, hamiltonians::operator_source(*model));
        const EigenPairs got = dense_eigenpairs(*built.op, window);
        ASSERT_EQ(got.values.size(), inside.size());
        for (std::size_t i = 0; i < inside.size(); ++i) {
            EXPECT_NEAR(got.values[i], inside[i], eps_h);
            EXPECT_LE(got.residuals[i], eps_h);
        }
        const global_index n = got.local_rows;
        for (std::size_t a = 0; a < inside.size(); ++a)
            for (std::size_t b = 0; b <= a; ++b) {
                complex_double dot = 0.0;
                for (global_index r = 0; r < n; ++r) dot += std::conj(got.vectors[r + a * n]) * got.vectors[r + b * n];
                EXPECT_LT(std::abs(dot - (a == b ? 1.0 : 0.0)), 1e-12);
            }
        EXPECT_EQ(got.matvecs, model->num_rows() + static_cast<std::int64_t>(inside.size()));
    }
}

// Two independent methods, one answer: dense and thick-restart Lanczos on the same operator.
TEST(DenseEigenpairs, AgreesWithThickRestartLanczos)
{
    const auto model = ti(4, 4, 4);
    OperatorSpec spec;
    const BuiltOperator built = make_operator(spec, hamiltonians::operator_source(*model));
    const EigenPairs dense = dense_eigenpairs(*built.op, request(Kind::Highest, 6));
    ThickRestartOptions o;
    o.end = SpectrumEnd::Highest;
    o.count = 6;
    o.tolerance = 1e-9;
    const EigenPairs lanczos = thick_restart_lanczos(*built.op, o);
    ASSERT_EQ(lanczos.values.size(), dense.values.size());  // 6 and the rest of the last level
    ASSERT_GE(dense.values.size(), 6u);
    for (std::size_t i = 0; i < dense.values.size(); ++i) EXPECT_NEAR(lanczos.values[i], dense.values[i], lanczos.residuals[i] + 1e-12);
}

TEST(DenseEigenpairs, RefusesMatricesBeyondItsSizeBeforeAllocating)
{
    const auto model = ti(24, 24, 4);  // 9216 rows > kDenseMaxRows
    OperatorSpec spec;
    spec.kind = OperatorKind::Free;
    const BuiltOperator built = make_operator(spec, hamiltonians::operator_source(*model));
    EXPECT_THROW(dense_eigenpairs(*built.op, request(Kind::Lowest, 2)), InputError);
}
