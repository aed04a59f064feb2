// The matrix-free operators of both models against a naive dense apply in the test.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/base/counter_rng.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/dense_oracle.hpp"

namespace topokpm {
namespace {

using hamiltonians::ModelParams;
using cplx = std::complex<double>;
constexpr double eps = std::numeric_limits<double>::epsilon();

ModelParams ti_dirty()
{
    ModelParams p;
    p.name = "ti";
    p.nx = 3;
    p.ny = 6;
    p.nz = 4;
    p.t = 0.9;
    p.m = 1.6;
    p.dot_potential = 0.7;
    p.dot_radius = 1.0;
    p.dot_period = 3;
    p.dot_depth = 2;
    p.disorder = 1.1;
    p.disorder_seed = 5;
    return p;
}

ModelParams graphene_dirty()
{
    ModelParams p;
    p.name = "graphene";
    p.nx = 6;
    p.ny = 9;
    p.nz = 1;
    p.t = 1.2;
    p.dot_potential = -0.4;
    p.dot_radius = 1.5;
    p.dot_period = 3;
    p.disorder = 0.8;
    p.disorder_seed = 11;
    return p;
}

BlockVector random_block(global_index n, int r, std::uint64_t seed)
{
    BlockVector v(n, r);
    for (global_index i = 0; i < n; ++i)
        for (int c = 0; c < r; ++c) {
            const std::uint64_t k = 2 * std::uint64_t(i * r + c);
            v(i, c) = cplx(uniform(seed, k) - 0.5, uniform(seed, k + 1) - 0.5);
        }
    return v;
}

struct Result {
    BlockVector y;
    DotSums dots;
};

Result run(const Operator& op, const BlockVector& x, const BlockVector& y0, const AugmentedOps& ops)
{
    Result res{y0, {}};
    op.apply(x, res.y, ops, &res.dots);
    return res;
}

/// y = scale (H - shift) x + beta y0 elementwise, with the dots, checked against plain loops
/// over the dense matrix. Rounding bound per element: both the sweep and the reference sum
/// at most 13 products plus 3 update terms, each with relative error <= eps per operation,
/// so |difference| <= 2 * 16 eps * (sum of |terms|). For the dots (N terms summed in a
/// different order, plus the propagated error of y): 2 N eps * sum |terms| + the y bound.
void expect_matches_dense(const std::vector<cplx>& a, const Result& got, const BlockVector& x, const BlockVector& y0,
                          const AugmentedOps& ops)
{
    const global_index n = x.num_rows();
    const int r = x.num_cols();
    std::vector<double> xx_ref(r, 0.0), xx_abs(r, 0.0), yx_abs(r, 0.0);
    std::vector<cplx> yx_ref(r, 0.0);
    for (global_index i = 0; i < n; ++i)
        for (int c = 0; c < r; ++c) {
            cplx hx = 0.0;
            double mag = 0.0;
            for (global_index j = 0; j < n; ++j) {
                hx += a[size_t(i + j * n)] * x(j, c);
                mag += std::abs(a[size_t(i + j * n)]) * std::abs(x(j, c));
            }
            cplx want = ops.scale * (hx - ops.shift * x(i, c));
            double bound = std::abs(ops.scale) * (mag + std::abs(ops.shift) * std::abs(x(i, c)));
            if (ops.beta != 0.0) {
                want += ops.beta * y0(i, c);
                bound += std::abs(ops.beta) * std::abs(y0(i, c));
            }
            const double tol = 32 * eps * bound;
            ASSERT_LE(std::abs(got.y(i, c) - want), tol) << "row " << i << " col " << c;
            xx_ref[c] += std::norm(x(i, c));
            xx_abs[c] += std::norm(x(i, c));
            yx_ref[c] += std::conj(want) * x(i, c);
            yx_abs[c] += (std::abs(want) + tol) * std::abs(x(i, c));
        }
    ASSERT_EQ(got.dots.xx.size(), size_t(r));
    ASSERT_EQ(got.dots.yx.size(), size_t(r));
    for (int c = 0; c < r; ++c) {
        EXPECT_LE(std::abs(got.dots.xx[c] - xx_ref[c]), 2.0 * n * eps * xx_abs[c]) << c;
        EXPECT_LE(std::abs(got.dots.yx[c] - yx_ref[c]), 2.0 * n * eps * yx_abs[c] + 32 * eps * yx_abs[c]) << c;
    }
}

ModelParams dirty(const std::string& name) { return name == "ti" ? ti_dirty() : graphene_dirty(); }

class MatrixFree : public ::testing::TestWithParam<std::string> {};

TEST_P(MatrixFree, MatchesDenseApplyForAllWidthsAndBetas)
{
    const auto model = hamiltonians::make_model(dirty(GetParam()));
    const auto op = model->make_matrix_free();
    const std::vector<cplx> a = testing::dense_matrix(*model);
    const global_index n = model->num_rows();
    ASSERT_EQ(op->num_rows(), n);
    for (int r : {1, 2, 3, 4, 8, 16, 32}) {
        const BlockVector x = random_block(n, r, 1000 + r);
        for (double beta : {0.0, -1.0, 0.5}) {
            AugmentedOps ops;
            ops.scale = 0.37;
            ops.shift = -0.81;
            ops.beta = beta;
            ops.want_dots = true;
            BlockVector y0 = random_block(n, r, 2000 + r);
            if (beta == 0.0)  // old content must be ignored, not multiplied by 0
                for (size_t k = 0; k < y0.size(); ++k) y0.data()[k] = cplx(std::nan(""), std::nan(""));
            const Result got = run(*op, x, y0, ops);
            SCOPED_TRACE(::testing::Message() << "R = " << r << ", beta = " << beta);
            expect_matches_dense(a, got, x, y0, ops);
        }
    }
}

TEST_P(MatrixFree, EqualsRowOrderSumBitwise)
{
    // The contract with the stored operators: each row is summed over row()'s entries in
    // row()'s (ascending column) order, then scale/shift/beta are applied. Done here with
    // std::complex arithmetic and no FMA contraction, the results must be identical.
    const auto model = hamiltonians::make_model(dirty(GetParam()));
    const auto op = model->make_matrix_free();
    const global_index n = model->num_rows();
    std::vector<global_index> cols(model->max_row_length());
    std::vector<cplx> vals(model->max_row_length());
    for (int r : {1, 5, 16}) {
        const BlockVector x = random_block(n, r, 300 + r);
        const BlockVector y0 = random_block(n, r, 400 + r);
        AugmentedOps ops;
        ops.scale = 0.61;
        ops.shift = 0.27;
        ops.beta = -1.0;
        BlockVector y = y0;
        op->apply(x, y, ops, nullptr);
        for (global_index i = 0; i < n; ++i) {
            const int len = model->row(i, cols.data(), vals.data());
            for (int c = 0; c < r; ++c) {
                cplx acc = 0.0;
                for (int k = 0; k < len; ++k) acc += vals[k] * x(cols[k], c);
                const cplx want = ops.scale * (acc - ops.shift * x(i, c)) + ops.beta * y0(i, c);
                ASSERT_EQ(y(i, c), want) << "row " << i << " col " << c << " R " << r;
            }
        }
    }
}

TEST_P(MatrixFree, OneAndTwoThreadsAgree)
{
    const auto model = hamiltonians::make_model(dirty(GetParam()));
    const auto op = model->make_matrix_free();
    const global_index n = model->num_rows();
    const int saved = omp_get_max_threads();
    for (int r : {1, 3, 8}) {
        const BlockVector x = random_block(n, r, 7 + r);
        const BlockVector y0 = random_block(n, r, 70 + r);
        AugmentedOps ops;
        ops.scale = 1.9;
        ops.shift = 0.3;
        ops.beta = -1.0;
        ops.want_dots = true;
        omp_set_num_threads(1);
        const Result one = run(*op, x, y0, ops);
        omp_set_num_threads(2);
        const Result two = run(*op, x, y0, ops);
        omp_set_num_threads(saved);
        // Every y element is computed by one thread in a fixed order: bitwise equal.
        for (size_t k = 0; k < one.y.size(); ++k) ASSERT_EQ(one.y.data()[k], two.y.data()[k]) << k;
        // Dots are summed in a thread-dependent order: equal to rounding (N terms).
        for (int c = 0; c < r; ++c) {
            double mag_xx = 0, mag_yx = 0;
            for (global_index i = 0; i < n; ++i) {
                mag_xx += std::norm(x(i, c));
                mag_yx += std::abs(one.y(i, c)) * std::abs(x(i, c));
            }
            EXPECT_LE(std::abs(one.dots.xx[c] - two.dots.xx[c]), 2.0 * n * eps * mag_xx);
            EXPECT_LE(std::abs(one.dots.yx[c] - two.dots.yx[c]), 2.0 * n * eps * mag_yx);
        }
    }
}

TEST_P(MatrixFree, PlainApplyNameCostAndShapeChecks)
{
    const auto model = hamiltonians::make_model(dirty(GetParam()));
    const auto op = model->make_matrix_free();
    const global_index n = model->num_rows();
    const BlockVector x = random_block(n, 2, 3);
    BlockVector y(n, 2);
    op->apply(x, y, AugmentedOps{}, nullptr);  // scale 1, shift 0, beta 0: y = H x
    const std::vector<cplx> a = testing::dense_matrix(*model);
    for (global_index i = 0; i < n; ++i) {
        cplx want = 0.0;
        for (global_index j = 0; j < n; ++j) want += a[size_t(i + j * n)] * x(j, 1);
        // Entries and x are O(1) with <= 13 terms per row: rounding stays far below 1e-13.
        EXPECT_LE(std::abs(y(i, 1) - want), 1e-13);
    }
    const bool ti = GetParam() == "ti";
    EXPECT_EQ(op->name(), ti ? "free-ti" : "free-graphene");
    const OperatorCost cost = op->cost();
    EXPECT_EQ(cost.nonzeros, double(model->estimated_nonzeros()));
    const double potential_bytes = 8.0 * (ti ? n / 4 : n);
    EXPECT_EQ(cost.matrix_bytes, potential_bytes);
    EXPECT_EQ(cost.storage_bytes, potential_bytes);
    // Mismatched shapes are internal errors, not silent garbage.
    BlockVector wrong(n + 1, 2);
    EXPECT_THROW(op->apply(x, wrong, AugmentedOps{}, nullptr), DimensionMismatch);
}

INSTANTIATE_TEST_SUITE_P(Models, MatrixFree, ::testing::Values("ti", "graphene"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace topokpm
