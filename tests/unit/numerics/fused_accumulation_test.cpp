// AugmentedOps' accumulation (acc += c_old y_old + c_x x + c_new y in the sweep, ChebFD's
// filter sum): the CPU stencil's and SELL's fused epilogues (R >= 4 registered, double) and the passes
// Operator::apply runs for every other kernel (the stencil at R = 1, 2 and unregistered
// widths, the naive reference operator, a single-precision stencil) against the sums
// formed naively from a plain apply; the sweep's own y must not change; refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/base/block_stencil.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/block_stencil_reference.hpp"

using namespace topokpm;
using topokpm::testing::make_block_stencil_reference_operator;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

BlockVector random_block(global_index n, int r, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    BlockVector v(n, r);
    for (std::size_t i = 0; i < v.size(); ++i) v.data()[i] = complex_type(u(gen), u(gen));
    return v;
}

std::unique_ptr<hamiltonians::Model> ti_model(int nx, int ny, int nz, const std::string& boundary)
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = nx;
    p.ny = ny;
    p.nz = nz;
    p.boundary = boundary;
    p.dot_potential = 0.4;
    p.dot_radius = 1.0;
    p.dot_period = 2;
    p.dot_depth = 2;
    p.disorder = 0.8;
    p.disorder_seed = 3;
    return hamiltonians::make_model(p);
}

BlockStencil ti_stencil(int nx, int ny, int nz, const std::string& boundary)
{
    return ti_model(nx, ny, nz, boundary)->block_stencil();
}

std::unique_ptr<Operator> sell_operator(const hamiltonians::Model& model)
{
    numerics::OperatorSpec spec;
    spec.kind = numerics::OperatorKind::Sell;
    return numerics::make_operator(spec, hamiltonians::operator_source(model)).op;
}

/// One apply with the accumulation against a plain apply of the same operator and the sums
/// formed here. y: the accumulation must leave the sweep's arithmetic alone, so y equals the
/// plain apply's y (the fused epilogue computes y before it touches acc; the passes run the
/// plain kernel). acc: the four-term sum a + c_o y_old + c_x x + c_n y in floating point,
/// fused (three products, three sums, possibly contracted to FMAs) or in two passes, differs
/// from the naive evaluation by at most the two evaluations' rounding, each <= 4 eps (|a| +
/// |c_o y_old| + |c_x x| + |c_n y|) per real component (standard bound for a sum of four
/// rounded products, gamma_4 <= 4.01 eps): the test allows 10 eps times that sum.
void check_accumulation(const Operator& op, int r, const AugmentedOps& base, double co, double cx, double cn,
                        const std::string& what)
{
    SCOPED_TRACE(what + " R=" + std::to_string(r) + " beta=" + std::to_string(base.beta));
    const global_index n = op.num_rows();
    const BlockVector x = random_block(n, r, 11);
    const BlockVector y_old = random_block(n, r, 12);
    const BlockVector acc0 = random_block(n, r, 13);

    BlockVector y_plain = y_old;
    op.apply(x, y_plain, base, nullptr);

    BlockVector y = y_old, acc = acc0;
    AugmentedOps ops = base;
    ops.accumulate = &acc;
    ops.acc_old = co;
    ops.acc_x = cx;
    ops.acc_new = cn;
    op.apply(x, y, ops, nullptr);

    int bad_y = 0, bad_acc = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
        if (y.data()[i] != y_plain.data()[i]) ++bad_y;
        const complex_double want = acc0.data()[i] + co * y_old.data()[i] + cx * x.data()[i] + cn * y_plain.data()[i];
        const double scale = std::abs(acc0.data()[i]) + std::abs(co * y_old.data()[i]) + std::abs(cx * x.data()[i]) +
                             std::abs(cn * y_plain.data()[i]);
        const complex_double got = acc.data()[i];
        if (!(std::abs(got.real() - want.real()) <= 10 * kEps * scale) ||
            !(std::abs(got.imag() - want.imag()) <= 10 * kEps * scale))
            ++bad_acc;
    }
    EXPECT_EQ(bad_y, 0) << "entries of y changed by the accumulation";
    EXPECT_EQ(bad_acc, 0) << "entries of acc beyond the rounding bound";
}

}  // namespace

TEST(FusedAccumulation, StencilFusesRegisteredWidthsFromFourInDoubleOnly)
{
    const BlockStencil s = ti_stencil(4, 4, 9, "ppo");
    const auto op = numerics::make_cpu_stencil_operator(s);
    for (const int r : numerics::registered_widths())
        EXPECT_EQ(op->fuses_accumulation(r), r >= 4) << "R=" << r;
    EXPECT_FALSE(op->fuses_accumulation(3));
    EXPECT_FALSE(numerics::make_cpu_stencil_operator(s, Precision::Single)->fuses_accumulation(32));
    EXPECT_FALSE(make_block_stencil_reference_operator(s)->fuses_accumulation(32));
    const auto sell = sell_operator(*ti_model(4, 4, 9, "ppo"));
    for (const int r : numerics::registered_widths())
        EXPECT_EQ(sell->fuses_accumulation(r), r >= 4) << "sell R=" << r;
}

TEST(FusedAccumulation, StencilAndFallbacksEqualTheNaiveSums)
{
    // Open and periodic faces (checked and fast rows), z odd: groups cut at column ends.
    for (const std::string bc : {"ppo", "ooo"}) {
        const auto model = ti_model(4, 4, 9, bc);
        const BlockStencil s = model->block_stencil();
        const auto sell = sell_operator(*model);
        const auto stencil = numerics::make_cpu_stencil_operator(s);
        const auto reference = make_block_stencil_reference_operator(s);
        const auto single = numerics::make_cpu_stencil_operator(s, Precision::Single);
        // The filter's steps: the first (beta 0, c_old 0) and the recurrence (beta -1).
        const AugmentedOps first{0.3, 0.2, 0.0, false}, step{0.6, 0.2, -1.0, false};
        for (const int r : {1, 2, 3, 4, 8, 16, 32}) {
            check_accumulation(*stencil, r, step, 0.7, -0.4, 0.25, "stencil " + bc);
            check_accumulation(*stencil, r, step, 0.0, 0.0, 1.5, "stencil, c_new only " + bc);
            check_accumulation(*stencil, r, first, 0.0, 0.9, -0.3, "stencil " + bc);
            check_accumulation(*sell, r, step, 0.7, -0.4, 0.25, "sell " + bc);
            check_accumulation(*sell, r, first, 0.0, 0.9, -0.3, "sell " + bc);
        }
        for (const int r : {2, 32}) {  // the naive reference operator (no fused kernel): the passes
            check_accumulation(*reference, r, step, 0.7, -0.4, 0.25, "reference " + bc);
            check_accumulation(*reference, r, first, 0.0, 0.9, -0.3, "reference " + bc);
        }
        check_accumulation(*single, 8, step, 0.7, -0.4, 0.25, "single stencil " + bc);
    }
}

TEST(FusedAccumulation, BetaZeroNeverReadsY)
{
    // beta = 0 with y NaN: neither y nor acc may see the NaN (the fused epilogue and the
    // passes alike); acc = acc0 + c_x x + c_n y exactly as from the plain apply.
    const BlockStencil s = ti_stencil(4, 4, 9, "ppo");
    for (const auto& op : {numerics::make_cpu_stencil_operator(s), make_block_stencil_reference_operator(s),
                           sell_operator(*ti_model(4, 4, 9, "ppo"))})
        for (const int r : {2, 32}) {
            const global_index n = op->num_rows();
            const BlockVector x = random_block(n, r, 1);
            BlockVector acc(n, r), y(n, r);
            for (std::size_t i = 0; i < y.size(); ++i) y.data()[i] = complex_double(std::nan(""), std::nan(""));
            AugmentedOps ops{0.5, 0.1, 0.0, false};
            ops.accumulate = &acc;
            ops.acc_x = 1.0;
            ops.acc_new = 2.0;
            op->apply(x, y, ops, nullptr);
            int nans = 0;
            for (std::size_t i = 0; i < y.size(); ++i) nans += std::isnan(y.data()[i].real()) || std::isnan(acc.data()[i].real());
            EXPECT_EQ(nans, 0) << op->name() << " R=" << r;
        }
}

TEST(FusedAccumulation, Refusals)
{
    const BlockStencil s = ti_stencil(4, 4, 9, "ppo");
    const auto op = numerics::make_cpu_stencil_operator(s);
    const global_index n = op->num_rows();
    BlockVector x = random_block(n, 8, 1), y = random_block(n, 8, 2), small(n, 4);
    AugmentedOps ops{1.0, 0.0, -1.0, false};
    ops.accumulate = &small;  // another shape
    EXPECT_THROW(op->apply(x, y, ops, nullptr), DimensionMismatch);
    ops.accumulate = &y;  // aliases y
    EXPECT_THROW(op->apply(x, y, ops, nullptr), DimensionMismatch);
    BlockVector acc(n, 8);
    ops.accumulate = &acc;
    ops.beta = 0.0;
    ops.acc_old = 1.0;  // y_old is not read with beta 0
    EXPECT_THROW(op->apply(x, y, ops, nullptr), DimensionMismatch);
    ops.beta = -1.0;
    EXPECT_THROW(op->apply_two_steps(x, y, ops, nullptr, nullptr), DimensionMismatch);
    BasicBlockVector<complex_single> xs(n, 8), ys(n, 8);
    const auto single = numerics::make_cpu_stencil_operator(s, Precision::Single);
    EXPECT_THROW(single->apply(xs, ys, ops, nullptr), DimensionMismatch);
}
