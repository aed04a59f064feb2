// The users of the sparse LU (numerics/sparse_direct/green.hpp, shift_invert.hpp) against
// LAPACK zheev of the same model matrices (tests/support/dense_oracle.hpp), with the
// shift-invert operator's H applied by the plain-loop DenseOperator (no optimized kernel).
//
// Tolerances. Green: rho_j(E) = sum_n |v_n(j)|^2 (eta/pi) / ((E - E_n)^2 + eta^2). Our solve has a
// componentwise backward error w <= n eps, so its forward error is <= kappa w with
// kappa = ||H - z|| ||(H - z)^-1|| <= (||H|| + |z|) / eta; zheev's eigenpairs give G to
// O(n eps ||H|| / eta^2) absolutely. With ||H|| <= 10, eta = 0.05, n ~ 100: both far below
// 1e-10 of the peak 1/(pi eta), the bound used. Shift-invert: every returned value is a
// Rayleigh quotient of a vector with measured residual r <= tol, so it lies within r of an
// eigenvalue (Bauer-Fike for Hermitian H); we require |value - zheev's| <= tol + 1e-12.

#include <gtest/gtest.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/sparse_direct/green.hpp"
#include "numerics/sparse_direct/shift_invert.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/dense_operator.hpp"
#include "tests/support/dense_oracle.hpp"

namespace topokpm::sparse_direct {
namespace {

using cvec = std::vector<complex_double>;

struct Eigen {
    std::vector<double> values;
    cvec vectors;  // column-major n x n
};

Eigen eigen_of(const hamiltonians::Model& model)
{
    Eigen e;
    e.vectors = testing::dense_matrix(model);
    const lapack_int n = static_cast<lapack_int>(model.num_rows());
    e.values.resize(static_cast<std::size_t>(n));
    const lapack_int info = LAPACKE_zheev(LAPACK_COL_MAJOR, 'V', 'U', n,
                                          reinterpret_cast<lapack_complex_double*>(e.vectors.data()), n, e.values.data());
    EXPECT_EQ(info, 0);
    return e;
}

hamiltonians::ModelParams ti_params(int nx, int ny, int nz)
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = nx; p.ny = ny; p.nz = nz;
    p.boundary = "ppo";
    p.disorder = 1.0;
    p.disorder_seed = 3;
    p.dot_potential = 0.4;
    p.dot_radius = 1.0;
    p.dot_period = 2;
    return p;
}

hamiltonians::ModelParams graphene_params(int nx, int ny)
{
    hamiltonians::ModelParams p;
    p.name = "graphene";
    p.nx = nx; p.ny = ny;
    return p;
}

AnalyseOptions sites(int b)
{
    AnalyseOptions o;
    o.site_size = b;
    return o;
}

TEST(GreenLdos, EqualsTheEigenDecompositionSum)
{
    const auto model = hamiltonians::make_model(ti_params(4, 4, 2));
    const global_index n = model->num_rows();
    const Eigen e = eigen_of(*model);
    SparseLU lu(csr_from_rows(*model), sites(4));
    const std::vector<global_index> rows = {0, 1, 13, 50, 51, 77, n - 1};  // 7 rows in blocks of 3: a partial block
    const std::vector<double> energies = {-2.5, -0.3, 0.0, 0.41, 3.0};
    GreenLdosOptions o;
    o.eta = 0.05;
    o.block = 3;
    int calls = 0;
    o.progress = [&](int done, int total, const FactorReport&) {
        EXPECT_EQ(done, ++calls);
        EXPECT_EQ(total, 5);
    };
    const GreenLdos g = green_ldos(lu, rows, energies, o);
    EXPECT_EQ(calls, 5);
    ASSERT_EQ(g.rho.size(), rows.size() * energies.size());
    const double peak = 1.0 / (M_PI * o.eta);
    for (std::size_t r = 0; r < rows.size(); ++r)
        for (std::size_t k = 0; k < energies.size(); ++k) {
            double ref = 0.0;
            for (global_index m = 0; m < n; ++m) {
                const double d = energies[k] - e.values[m];
                ref += std::norm(e.vectors[rows[r] + m * n]) * (o.eta / M_PI) / (d * d + o.eta * o.eta);
            }
            EXPECT_NEAR(g.rho[r * energies.size() + k], ref, 1e-10 * peak) << "row " << rows[r] << " E " << energies[k];
        }
    EXPECT_LE(g.worst_backward_error, n * std::numeric_limits<double>::epsilon());
}

TEST(GreenLdos, OnExactEigenvaluesNonNegativeAndWithinTheBackwardErrorBound)
{
    // graphene 6x6: E = -1, 0 (4-fold, first pivots -i eta) and 1 are eigenvalues. With eta =
    // 1e-10 static pivoting replaces pivots and refinement stalls; GMRES must finish the
    // solves. The bound: rho's relative error <= worst_error_bound (4 w ||H - z||_1 / eta,
    // green.hpp), plus zheev's own error at a pole, (O(eps ||H||) / eta)^2 ~ 1e-11 relative.
    const auto model = hamiltonians::make_model(graphene_params(6, 6));
    const global_index n = model->num_rows();
    const Eigen e = eigen_of(*model);
    SparseLU lu(csr_from_rows(*model), sites(1));
    const std::vector<global_index> rows = {0, 1, 7};
    const std::vector<double> energies = {-1.0, 0.0, 1.0};
    GreenLdosOptions o;
    o.eta = 1e-10;
    const GreenLdos g = green_ldos(lu, rows, energies, o);
    EXPECT_GT(g.tiny_pivots, 0);
    EXPECT_GT(g.gmres_solves, 0);
    EXPECT_LE(g.worst_backward_error, 64 * std::numeric_limits<double>::epsilon());
    EXPECT_LT(g.worst_error_bound, 1e-3);
    for (std::size_t r = 0; r < rows.size(); ++r)
        for (std::size_t k = 0; k < energies.size(); ++k) {
            double ref = 0.0;
            for (global_index m = 0; m < n; ++m) {
                const double d = energies[k] - e.values[m];
                ref += std::norm(e.vectors[rows[r] + m * n]) * (o.eta / M_PI) / (d * d + o.eta * o.eta);
            }
            const double rho = g.rho[r * energies.size() + k];
            EXPECT_GE(rho, 0.0);
            EXPECT_NEAR(rho, ref, (g.worst_error_bound + 1e-10) * ref) << "row " << rows[r] << " E " << energies[k];
        }
    // Below what double precision resolves (eta << eps ||H||): still >= 0, and the bound says so.
    o.eta = 1e-18;
    const GreenLdos tiny = green_ldos(lu, rows, energies, o);
    for (const double rho : tiny.rho) EXPECT_GE(rho, 0.0);
    EXPECT_GT(tiny.worst_error_bound, 1.0);
}

TEST(GreenLdos, StopsBeforeAnEnergyWhenAsked)
{
    const auto model = hamiltonians::make_model(graphene_params(3, 3));
    SparseLU lu(csr_from_rows(*model), sites(1));
    GreenLdosOptions o;
    o.eta = 0.1;
    int asked = 0;
    o.stop = [&] { return ++asked == 3; };  // stop before the third energy
    const GreenLdos g = green_ldos(lu, {0, 1}, {-1.0, 0.0, 1.0, 2.0}, o);
    EXPECT_EQ(g.energies_done, 2);
    EXPECT_GT(g.rho[0], 0.0);
    EXPECT_EQ(g.rho[2], 0.0);
}

TEST(GreenLdos, RefusesBadInput)
{
    const auto model = hamiltonians::make_model(graphene_params(3, 3));
    SparseLU lu(csr_from_rows(*model), sites(1));
    GreenLdosOptions o;
    o.eta = 0.0;
    EXPECT_THROW(green_ldos(lu, {0}, {0.0}, o), InputError);
    o.eta = std::numeric_limits<double>::infinity();
    EXPECT_THROW(green_ldos(lu, {0}, {0.0}, o), InputError);
    o.eta = 0.1;
    EXPECT_THROW(green_ldos(lu, {model->num_rows()}, {0.0}, o), InputError);
    EXPECT_THROW(green_ldos(lu, {0}, {std::nan("")}, o), InputError);
    o.block = 0;
    EXPECT_THROW(green_ldos(lu, {0}, {0.0}, o), InputError);
}

/// Runs shift-invert on the model and checks values, residuals, orthonormality and the
/// selection against zheev's; returns the report.
ShiftInvertReport check_shift_invert(const hamiltonians::Model& model, int site_size, double shift, int count)
{
    const global_index n = model.num_rows();
    const Eigen e = eigen_of(model);
    const testing::DenseOperator h(testing::dense_matrix(model), n);
    SparseLU lu(csr_from_rows(model), sites(site_size));
    numerics::EigenRequest req;
    req.kind = numerics::EigenRequest::Kind::Shift;
    req.shift = shift;
    req.count = count;
    req.tolerance = 1e-10 * std::max(std::abs(e.values.front()), std::abs(e.values.back()));
    ShiftInvertReport report;
    const numerics::EigenPairs p = shift_invert_eigenpairs(h, lu, req, {}, report);
    const std::vector<int> want = numerics::select_eigenvalues(e.values, req);
    EXPECT_EQ(p.values.size(), want.size());
    for (std::size_t i = 0; i < std::min(p.values.size(), want.size()); ++i) {
        EXPECT_NEAR(p.values[i], e.values[want[i]], req.tolerance + 1e-12) << "value " << i;
        EXPECT_LE(p.residuals[i], req.tolerance);
    }
    const std::size_t k = p.values.size();
    for (std::size_t a = 0; a < k; ++a)
        for (std::size_t b = 0; b < k; ++b) {
            complex_double dot = 0.0;
            for (global_index r = 0; r < n; ++r) dot += std::conj(p.vectors[r + a * n]) * p.vectors[r + b * n];
            EXPECT_NEAR(std::abs(dot - (a == b ? 1.0 : 0.0)), 0.0, 1e-10);
        }
    return report;
}

TEST(ShiftInvert, TiSlabKramersPairsMatchZheev)
{
    const auto model = hamiltonians::make_model(ti_params(4, 4, 2));
    // count 5 ends inside a Kramers pair: its partner joins (6 values).
    const ShiftInvertReport r = check_shift_invert(*model, 4, 0.3, 5);
    EXPECT_EQ(r.tiny_pivots, 0);
    EXPECT_EQ(r.factored_shift, 0.3);
    check_shift_invert(*model, 4, -20.0, 3);  // below the spectrum: every theta < 0
}

TEST(ShiftInvert, SingularShiftIsReportedAndStillAnswered)
{
    // graphene 6x6: the K points exist, E = 0 is an eigenvalue (4-fold) and H - 0 singular.
    const auto model = hamiltonians::make_model(graphene_params(6, 6));
    const ShiftInvertReport r = check_shift_invert(*model, 1, 0.0, 4);
    EXPECT_GT(r.tiny_pivots, 0);
    EXPECT_NE(r.factored_shift, 0.0);
    EXPECT_LE(std::abs(r.factored_shift), 1e-5 * r.norm1);
}

TEST(ShiftInvert, MirrorTieOfASymmetricSpectrumLowerFirst)
{
    // graphene 7x7: +-0.555 both 6-fold at equal distance from 0; zheev's values are not
    // exactly symmetric, the selection's tie rule (within 2 tolerance) must still take the lower.
    const auto model = hamiltonians::make_model(graphene_params(7, 7));
    check_shift_invert(*model, 1, 0.0, 4);
}

TEST(ShiftInvert, RefusesOtherRequests)
{
    const auto model = hamiltonians::make_model(graphene_params(3, 3));
    const testing::DenseOperator h(testing::dense_matrix(*model), model->num_rows());
    SparseLU lu(csr_from_rows(*model), sites(1));
    numerics::EigenRequest req;
    req.kind = numerics::EigenRequest::Kind::Lowest;
    ShiftInvertReport report;
    EXPECT_THROW(shift_invert_eigenpairs(h, lu, req, {}, report), InputError);
}

}  // namespace
}  // namespace topokpm::sparse_direct
