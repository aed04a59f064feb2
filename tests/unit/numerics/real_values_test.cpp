// Real-valued Hamiltonians (graphene): SELL-C-σ with real values and complex vectors
// against the complex-valued SELL of the same matrix (kernel and KPM moments, double and
// single), the factory's choice and the cost model.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "tests/support/random_source.hpp"
#include "tests/support/trace_moments.hpp"

using namespace topokpm;
using namespace topokpm::numerics;
using topokpm::testing::RandomSparseSource;
using topokpm::testing::RealPartSource;

namespace {

/// Per row i: m_i (entries) and sum_k |a_ik| |x_k| for column c of a block of width r.
struct RowMagnitudes {
    std::vector<int> length;
    std::vector<double> abs_ax;  // [i * r + c]
};

template <class T>
RowMagnitudes row_magnitudes(const RowSource& src, const BasicBlockVector<T>& x)
{
    const global_index n = src.num_rows();
    const int r = x.num_cols();
    RowMagnitudes out{std::vector<int>(n), std::vector<double>(static_cast<size_t>(n) * r, 0.0)};
    std::vector<global_index> cols(src.max_row_length());
    std::vector<complex_type> vals(src.max_row_length());
    for (global_index i = 0; i < n; ++i) {
        out.length[i] = src.row(i, cols.data(), vals.data());
        for (int k = 0; k < out.length[i]; ++k)
            for (int c = 0; c < r; ++c)
                out.abs_ax[i * r + c] += std::abs(vals[k]) * std::abs(std::complex<double>(x(cols[k], c)));
    }
    return out;
}

// Tolerance, derived: both kernels sum the same m_i products of row i (a real value times
// each part of x is exact in the complex product too, whose other term is 0 * x), but in
// possibly different orders and contractions, so each is within (m_i + 2) u sum_k |a_ik||x_k|
// of the exact row sum (u = eps/2, the standard summation bound with room for the product),
// and their difference within (m_i + 2) eps scale sum_k |a_ik||x_k|, plus the epilogue
// (double, rounded once to T: eps_T |y| for each, 2 eps_T |y|). The dots then differ by at
// most sum_i |dy_i| |x_i| plus their own double rounding 2 (N + 2) eps_d sum |y||x|.
template <class V>
void expect_real_equals_complex(const RowSource& real_src, int c, int sigma, int r, double beta)
{
    using Vec = typename ValueTraits<V>::vector;
    using Complex = Vec;  // the complex-valued matrix of the same precision
    const double eps = std::numeric_limits<typename ValueTraits<V>::real>::epsilon();
    const double eps_d = std::numeric_limits<double>::epsilon();
    const global_index n = real_src.num_rows();
    const auto real_op = make_sell_operator(
        std::make_shared<const BasicSellMatrix<V>>(BasicSellMatrix<V>::build(real_src, 0, n, {c, sigma})));
    const auto complex_op = make_sell_operator(
        std::make_shared<const BasicSellMatrix<Complex>>(BasicSellMatrix<Complex>::build(real_src, 0, n, {c, sigma})));
    ASSERT_NE(real_op->name().find("-real"), std::string::npos) << real_op->name();

    BlockVector xd(n, r), yd(n, r);
    fill_random_phase_vectors(xd, 5, 0, n);
    fill_random_phase_vectors(yd, 6, 0, n);
    const BasicBlockVector<Vec> x = convert_block<Vec>(xd);
    BasicBlockVector<Vec> y_real = convert_block<Vec>(yd), y_complex = convert_block<Vec>(yd);
    const AugmentedOps ops{0.7, -0.3, beta, true};
    DotSums dr, dc;
    real_op->apply(x, y_real, ops, &dr);
    complex_op->apply(x, y_complex, ops, &dc);

    const RowMagnitudes mag = row_magnitudes(real_src, x);
    const std::string what = real_op->name() + " R=" + std::to_string(r) + " beta=" + std::to_string(beta);
    std::vector<double> dxy(r, 0.0), yx_abs(r, 0.0);
    for (global_index i = 0; i < n; ++i)
        for (int col = 0; col < r; ++col) {
            const std::complex<double> a(y_real(i, col)), b(y_complex(i, col));
            const std::complex<double> xi(x(i, col));
            const double tol = (mag.length[i] + 2) * eps * ops.scale * (mag.abs_ax[i * r + col] + 0.3 * std::abs(xi)) +
                               2 * eps * (std::abs(b) + std::abs(beta) * std::abs(std::complex<double>(yd(i, col))));
            ASSERT_LE(std::abs(a - b), tol) << what << " row " << i << " col " << col;
            dxy[col] += tol * std::abs(xi);
            yx_abs[col] += std::abs(b) * std::abs(xi);
        }
    for (int col = 0; col < r; ++col) {
        EXPECT_NEAR(dr.xx[col], dc.xx[col], 2 * (n + 2) * eps_d * dc.xx[col]) << what;
        EXPECT_LE(std::abs(dr.yx[col] - dc.yx[col]), dxy[col] + 2 * (n + 2) * eps_d * yx_abs[col]) << what;
    }
}

std::unique_ptr<hamiltonians::Model> graphene(int cells, double disorder)
{
    hamiltonians::ModelParams p;
    p.name = "graphene";
    p.nx = cells;
    p.ny = cells;
    p.disorder = disorder;
    return hamiltonians::make_model(p);
}

}  // namespace

TEST(RealValues, KernelEqualsTheComplexKernelOnTheSameMatrix)
{
    for (const global_index n : {7, 130}) {
        const RandomSparseSource random(n, 11);
        const RealPartSource src(random);
        for (const int c : {1, 2, 4, 6, 8, 16, 32})
            for (const int sigma : {1, 64})
                for (const int r : {1, 2, 3, 4, 8, 12, 32})
                    for (const double beta : {0.0, -1.0}) {
                        expect_real_equals_complex<double>(src, c, sigma, r, beta);
                        expect_real_equals_complex<float>(src, c, sigma, r, beta);
                    }
    }
}

// The moments of graphene with disorder (real potential) through the real-valued SELL equal
// the complex-valued path to rounding. Bound, derived as for single precision
// (tests/support/single_precision.hpp): each path's moment mu_n differs from the exact one by
// at most 4 kappa c eps_d sqrt(n/2 + 1) (random-walk accumulation of one sweep's rounding
// c = (m + 3)(2 ||Ht|| + 1) eps through U_n, kappa = 1 / sqrt(1 - (1 - e/2)^2)), so the two
// differ by at most twice that.
TEST(RealValues, GrapheneMomentsEqualTheComplexPathToRounding)
{
    const auto model = graphene(10, 0.5);
    ASSERT_TRUE(model->real_valued());
    const global_index n = model->num_rows();
    const auto real_op = make_sell_operator(
        std::make_shared<const BasicSellMatrix<double>>(BasicSellMatrix<double>::build(*model, 0, n, {8, 64})));
    const auto complex_op = make_sell_operator(std::make_shared<const SellMatrix>(SellMatrix::build(*model, 0, n, {8, 64})));
    const double epsilon = 0.01;
    const KpmScaling scaling = kpm_scaling(gershgorin_bounds(*model), epsilon);
    const int num_moments = 1024, r = 2;
    const auto mr = topokpm::testing::stochastic_trace(*real_op, num_moments, r, 7, scaling);
    const auto mc = topokpm::testing::stochastic_trace(*complex_op, num_moments, r, 7, scaling);
    const double kappa = 1.0 / std::sqrt(1.0 - (1.0 - epsilon / 2) * (1.0 - epsilon / 2));
    const double c = (model->max_row_length() + 3) * 3.0;
    for (int k = 0; k < num_moments; ++k) {
        const double bound = 2 * 4 * kappa * c * std::numeric_limits<double>::epsilon() * std::sqrt(k / 2.0 + 1.0);
        ASSERT_LE(std::abs(mr.moments[k] - mc.moments[k]), bound) << "mu_" << k;
    }
}

// The matrix-free stencil with real couplings (graphene) against the complex-valued SELL
// of the same matrix: the same bound as above (each path within 4 kappa c eps_d sqrt(n/2+1)
// of the exact moments), at R = 1 and 8 (the real products across rows and across columns).
TEST(RealValues, GrapheneStencilMomentsEqualTheComplexPathToRounding)
{
    const auto model = graphene(10, 0.5);
    const global_index n = model->num_rows();
    OperatorSpec free;
    free.kind = OperatorKind::Free;
    const auto stencil_op = make_operator(free, hamiltonians::operator_source(*model)).op;
    ASSERT_NE(stencil_op->name().find("-real"), std::string::npos) << stencil_op->name();
    const auto complex_op = make_sell_operator(std::make_shared<const SellMatrix>(SellMatrix::build(*model, 0, n, {8, 64})));
    const double epsilon = 0.01;
    const KpmScaling scaling = kpm_scaling(gershgorin_bounds(*model), epsilon);
    const int num_moments = 1024;
    const double kappa = 1.0 / std::sqrt(1.0 - (1.0 - epsilon / 2) * (1.0 - epsilon / 2));
    const double c = (model->max_row_length() + 3) * 3.0;
    for (const int r : {1, 8}) {
        const auto ms = topokpm::testing::stochastic_trace(*stencil_op, num_moments, r, 7, scaling);
        const auto mc = topokpm::testing::stochastic_trace(*complex_op, num_moments, r, 7, scaling);
        for (int k = 0; k < num_moments; ++k) {
            const double bound = 2 * 4 * kappa * c * std::numeric_limits<double>::epsilon() * std::sqrt(k / 2.0 + 1.0);
            ASSERT_LE(std::abs(ms.moments[k] - mc.moments[k]), bound) << "R = " << r << ", mu_" << k;
        }
    }
}

// make_operator stores real values for graphene (sell and crs on the cpu) and complex ones
// for ti and for the kinds without a real kernel; the cost model prices what is stored.
TEST(RealValues, FactoryStoresRealValuesForGrapheneOnlyAndTheCostModelCountsThem)
{
    const auto g = graphene(8, 0.0);
    hamiltonians::ModelParams tp;
    tp.nx = 4;
    tp.ny = 4;
    tp.nz = 3;
    const auto ti = hamiltonians::make_model(tp);
    ASSERT_FALSE(ti->real_valued());

    OperatorSpec sell, crs, single, free, naive;
    crs.kind = OperatorKind::Crs;
    single.precision = Precision::Single;
    free.kind = OperatorKind::Free;
    naive.kind = OperatorKind::Naive;
    EXPECT_EQ(operator_cost_model(sell, 1.0, true).matrix_bytes_per_nonzero, 12.0);
    EXPECT_EQ(operator_cost_model(single, 1.0, true).matrix_bytes_per_nonzero, 8.0);
    EXPECT_EQ(operator_cost_model(sell, 1.0, false).matrix_bytes_per_nonzero, 20.0);
    EXPECT_EQ(operator_cost_model(naive, 1.0, true).matrix_bytes_per_nonzero, 20.0);
    EXPECT_FALSE(stores_real_values(free, true));

    const OperatorSource gs = hamiltonians::operator_source(*g);
    const double rows = static_cast<double>(g->num_rows());
    for (const OperatorSpec& spec : {sell, crs, single, naive}) {
        const BuiltOperator built = make_operator(spec, gs);
        const bool real = built.op->name().find("-real") != std::string::npos;
        EXPECT_EQ(real, stores_real_values(spec, true)) << built.op->name();
        const double modelled =
            operator_cost_model(spec, gs.potential_per_row, true).matrix_bytes(rows, gs.estimated_nonzeros);
        EXPECT_LE(modelled, built.op->cost().matrix_bytes) << built.op->name();
        // + the O(rows) tables: chunk start (8), width (4) and first row (4) per chunk of C >= 1
        // rows and 4 per slot, at most 20 bytes per row (graphene has no padding: every row
        // holds 4 entries)
        EXPECT_LE(built.op->cost().matrix_bytes, modelled + 20.0 * rows + 8.0) << built.op->name();
    }
    const BuiltOperator t = make_operator(sell, hamiltonians::operator_source(*ti));
    EXPECT_EQ(t.op->name().find("-real"), std::string::npos) << t.op->name();
}
