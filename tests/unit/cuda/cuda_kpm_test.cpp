// The unchanged KPM loop (topokpm::testing::run_block_trace) through the CUDA operators gives
// the CPU moments: same seeds, same start vectors, same recurrence; only the summation
// order of each sweep differs.
//
// Tolerance: every moment is |mu_n| <= 1 (the scaled spectrum lies in [-1, 1]); one sweep
// perturbs the vectors by a few u relative (cuda_spmmv_test.cpp) and the Chebyshev
// recurrence propagates such perturbations with at most linear growth in n for a
// spectrum inside [-1, 1], so |mu_gpu - mu_cpu| <~ M * 10 u ~ 1e-13 for M = 128.
// We require 1e-12 * max(1, |mu_n|).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "tests/support/trace_moments.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/distributed/halo_device.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/lanczos/lanczos.hpp"
#include "numerics/spmmv/cuda_operator.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "tests/support/backends.hpp"
#include "tests/support/single_precision.hpp"

using namespace topokpm;

namespace {

hamiltonians::ModelParams ti_params()
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = 6;
    p.ny = 6;
    p.nz = 7;
    p.dot_potential = 0.5;
    p.dot_radius = 1.0;
    p.dot_period = 3;
    p.disorder = 0.6;
    return p;
}

hamiltonians::ModelParams graphene_params()
{
    hamiltonians::ModelParams p;
    p.name = "graphene";
    p.nx = 12;
    p.ny = 9;
    p.nz = 1;
    p.disorder = 0.4;
    p.boundary = "po";
    return p;
}

void expect_same_moments(const topokpm::testing::TraceMoments& gpu, const topokpm::testing::TraceMoments& cpu, const std::string& label)
{
    ASSERT_EQ(gpu.moments.size(), cpu.moments.size()) << label;
    EXPECT_NEAR(cpu.moments[0], 1.0, 1e-12) << label;
    for (std::size_t k = 0; k < cpu.moments.size(); ++k)
        EXPECT_NEAR(gpu.moments[k], cpu.moments[k], 1e-12 * std::max(1.0, std::abs(cpu.moments[k])))
            << label << " mu_" << k;
    ASSERT_EQ(gpu.per_vector.size(), cpu.per_vector.size()) << label;
    for (std::size_t k = 0; k < cpu.per_vector.size(); ++k)
        ASSERT_NEAR(gpu.per_vector[k], cpu.per_vector[k], 1e-12) << label << " per-vector entry " << k;
}

}  // namespace

// On an operator whose blocks live on a device (here the host stand-in, in every build), the
// trace makes its random-phase start vectors in that device's memory, in the operator's
// precision (BlockTrace::prepare, StartVectorPlan::fill_on_device) and the second block there
// too. The stand-in's values are the host loop's, rounded to float as convert_block rounds the
// host run's double start block, so the moments equal the CPU operator's bit for bit in both
// precisions; with R = 5 in blocks of 3 the second block's last column is a zero column. On a
// GPU the same path runs the kernel of numerics/cuda/start_vectors.cuh (the test above).
TEST(KpmOnADevice, StartVectorsMadeOnTheStandinGiveTheHostMomentsBitForBit)
{
    for (const auto& params : {ti_params(), graphene_params()}) {
        const auto model = hamiltonians::make_model(params);
        const numerics::KpmScaling scaling = numerics::kpm_scaling(gershgorin_bounds(*model), 0.01);
        for (const Precision precision : {Precision::Double, Precision::Single}) {
            const std::shared_ptr<const Operator> cpu =
                numerics::make_cpu_stencil_operator(model->block_stencil(), precision);
            const auto standin = numerics::make_host_standin_operator(cpu);
            ASSERT_EQ(standin->blocks_device(), device::host_standin);
            const auto plan = numerics::random_phase_plan(cpu->global_rows(), 5, 23);
            const auto want = topokpm::testing::run_block_trace(*cpu, *plan, 64, 3, scaling);
            const auto got = topokpm::testing::run_block_trace(*standin, *plan, 64, 3, scaling);
            EXPECT_EQ(got, want) << params.name << (precision == Precision::Single ? " single" : " double");
        }
    }
}

namespace {

/// `inner` as a rank's tile: its rows are the global rows `runs` of a larger matrix (as a 2-D
/// decomposition gives them), and its blocks live where inner's do.
class TileOperator final : public Operator {
public:
    TileOperator(std::shared_ptr<const Operator> inner, RowRuns runs, global_index global_rows)
        : inner_(std::move(inner)), runs_(std::move(runs)), global_rows_(global_rows)
    {
    }
    global_index num_rows() const override { return inner_->num_rows(); }
    std::string name() const override { return "tile-" + inner_->name(); }
    OperatorCost cost() const override { return inner_->cost(); }
    Precision precision() const override { return inner_->precision(); }
    int blocks_device() const override { return inner_->blocks_device(); }
    global_index global_rows() const override { return global_rows_; }
    RowRuns row_runs() const override { return runs_; }

protected:
    void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override
    {
        inner_->apply(x, y, ops, dots);
    }
    void do_apply(const BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                  const AugmentedOps& ops, DotSums* dots) const override
    {
        inner_->apply(x, y, ops, dots);
    }

private:
    std::shared_ptr<const Operator> inner_;
    RowRuns runs_;
    global_index global_rows_;
};

}  // namespace

// A tile of several row runs (a 2-D decomposition's rank) gets each run's rows of the serial
// start block at their place, on the device as on the host (the host path fills the runs
// apart and copies them in).
TEST(KpmOnADevice, StartVectorsOfATileTakeEachRunsRows)
{
    const auto model = hamiltonians::make_model(ti_params());
    const numerics::KpmScaling scaling = numerics::kpm_scaling(gershgorin_bounds(*model), 0.01);
    for (const Precision precision : {Precision::Double, Precision::Single}) {
        const std::shared_ptr<const Operator> cpu = numerics::make_cpu_stencil_operator(model->block_stencil(), precision);
        const global_index n = cpu->num_rows(), a = n / 3, b = n / 4;
        const RowRuns runs{{7, 7 + a}, {a + 30, a + 30 + b}, {a + b + 90, n + 90}};
        const TileOperator host(cpu, runs, n + 101), device(numerics::make_host_standin_operator(cpu), runs, n + 101);
        ASSERT_EQ(device.blocks_device(), device::host_standin);
        const auto plan = numerics::random_phase_plan(n + 101, 4, 5);
        EXPECT_EQ(topokpm::testing::run_block_trace(device, *plan, 32, 4, scaling),
                  topokpm::testing::run_block_trace(host, *plan, 32, 4, scaling))
            << (precision == Precision::Single ? "single" : "double");
    }
}

TEST(CudaKpm, StochasticTraceMomentsEqualTheCpuMoments)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    for (const auto& params : {ti_params(), graphene_params()}) {
        const auto model = hamiltonians::make_model(params);
        const global_index n = model->num_rows();
        const SpectralBounds bounds = gershgorin_bounds(*model);
        const numerics::KpmScaling scaling = numerics::kpm_scaling(bounds, 0.01);
        auto sell = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, {32, 256}));
        const auto cpu_sell = numerics::make_sell_operator(sell);
        const auto cpu_free = numerics::make_cpu_stencil_operator(model->block_stencil());
        const auto gpu_sell = numerics::make_cuda_sell_operator(sell, 0);
        const auto gpu_free = numerics::make_cuda_stencil_operator(model->block_stencil(), 0);
        for (const int r : {1, 3, 8, 32}) {
            const int m = 128;
            const auto ref_sell = topokpm::testing::stochastic_trace(*cpu_sell, m, r, 11, scaling);
            const auto ref_free = topokpm::testing::stochastic_trace(*cpu_free, m, r, 11, scaling);
            const auto got_sell = topokpm::testing::stochastic_trace(*gpu_sell, m, r, 11, scaling);
            const auto got_free = topokpm::testing::stochastic_trace(*gpu_free, m, r, 11, scaling);
            const std::string label = params.name + " R=" + std::to_string(r);
            expect_same_moments(got_sell, ref_sell, label + " sell");
            expect_same_moments(got_free, ref_free, label + " free");
            numerics::check_moments_bounded(got_sell.moments);
        }
    }
}

TEST(CudaKpm, ExactTraceAndLanczosRunThroughTheMirror)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    hamiltonians::ModelParams p = graphene_params();
    p.nx = 4;
    p.ny = 5;
    const auto model = hamiltonians::make_model(p);
    const auto cpu = numerics::make_cpu_stencil_operator(model->block_stencil());
    const auto gpu = numerics::make_cuda_stencil_operator(model->block_stencil(), 0);
    const numerics::KpmScaling scaling = numerics::kpm_scaling(gershgorin_bounds(*model), 0.01);
    // Exact trace refills the start block on the host between blocks (host write after
    // device write); width 7 does not divide N = 40 and is strip-mined (4 + 2 + 1).
    const auto ref = topokpm::testing::exact_trace(*cpu, 64, 7, scaling);
    const auto got = topokpm::testing::exact_trace(*gpu, 64, 7, scaling);
    for (std::size_t k = 0; k < ref.moments.size(); ++k) EXPECT_NEAR(got.moments[k], ref.moments[k], 1e-12) << k;
    // Lanczos mixes host BLAS-1 work and device sweeps every step.
    const auto lb_cpu = numerics::lanczos_bounds(*cpu, 30, 3, 0.005);
    const auto lb_gpu = numerics::lanczos_bounds(*gpu, 30, 3, 0.005);
    EXPECT_NEAR(lb_gpu.bounds.lower, lb_cpu.bounds.lower, 1e-9);
    EXPECT_NEAR(lb_gpu.bounds.upper, lb_cpu.bounds.upper, 1e-9);
}

// --precision single on the GPU (issue 36): the moments of the single SELL and stencil
// operators against the double GPU run of the same model, seeds and scaling, M = 1024.
// Tolerance: the random-walk rounding bound of single-precision KPM (single_precision.hpp,
// derived in docs/performance.md "Single precision"): |Δmu_n| <= 4 kappa c eps_f sqrt(n/2 + 1)
// with kappa = 1/sqrt(1 - (1 - e/2)^2) (the norm of U_n on the scaled spectrum), c = (m + 3)
// (2 ||Ht|| + 1) for m entries per row; the GPU's single sweep (double epilogue and dots) is
// within the CPU single sweep's rounding that bound was made for. Second, the physics check:
// the rounding must stay below 1 % of the trace's stochastic error 1/sqrt(N R). A kernel that
// sums the dots in float, drops an entry or reads a stale vector misses both by orders.
TEST(CudaKpm, SinglePrecisionMomentsStayWithinTheRoundingModelOfDouble)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    for (const auto& params : {ti_params(), graphene_params()}) {
        const auto model = hamiltonians::make_model(params);
        const global_index n = model->num_rows();
        const double epsilon = 0.01;
        const numerics::KpmScaling scaling = numerics::kpm_scaling(gershgorin_bounds(*model), epsilon);
        const numerics::SellMatrix m = numerics::SellMatrix::build(*model, 0, n, {32, 256});
        const auto dbl_sell = numerics::make_cuda_sell_operator(std::make_shared<numerics::SellMatrix>(m), 0);
        const auto sgl_sell = numerics::make_cuda_sell_operator(
            std::make_shared<const numerics::BasicSellMatrix<complex_single>>(numerics::convert_values<complex_single>(m)), 0);
        const auto dbl_free = numerics::make_cuda_stencil_operator(model->block_stencil(), 0);
        const auto sgl_free = numerics::make_cuda_stencil_operator(model->block_stencil(), 0, Precision::Single);
        // Stencil rows hold at most the model's entries plus an on-site diagonal of zero hopping.
        const int max_row = model->max_row_length() + 1;
        const int num_moments = 1024;
        for (const int r : {1, 3, 8, 32}) {
            const std::string label = params.name + " R=" + std::to_string(r);
            const auto ds = topokpm::testing::stochastic_trace(*dbl_sell, num_moments, r, 11, scaling);
            const auto ss = topokpm::testing::stochastic_trace(*sgl_sell, num_moments, r, 11, scaling);
            const auto df = topokpm::testing::stochastic_trace(*dbl_free, num_moments, r, 11, scaling);
            const auto sf = topokpm::testing::stochastic_trace(*sgl_free, num_moments, r, 11, scaling);
            const double stochastic = 1.0 / std::sqrt(static_cast<double>(n) * r);
            double worst_sell = 0, worst_free = 0;
            for (int k = 0; k < num_moments; ++k) {
                const double bound = topokpm::testing::single_moment_bound(k, max_row, epsilon);
                const double d_sell = std::abs(ss.moments[k] - ds.moments[k]);
                const double d_free = std::abs(sf.moments[k] - df.moments[k]);
                ASSERT_LE(d_sell, bound) << label << " sell mu_" << k;
                ASSERT_LE(d_free, bound) << label << " free mu_" << k;
                worst_sell = std::max(worst_sell, d_sell);
                worst_free = std::max(worst_free, d_free);
            }
            EXPECT_LT(worst_sell, 0.01 * stochastic) << label << " sell: rounding not negligible against the noise";
            EXPECT_LT(worst_free, 0.01 * stochastic) << label << " free: rounding not negligible against the noise";
            numerics::check_moments_bounded(ss.moments);
            numerics::check_moments_bounded(sf.moments);
            std::printf("[ info ] %s N = %lld, M = %d: max |mu_single - mu_double| sell %.3g, free %.3g (stochastic "
                        "error %.3g)\n",
                        label.c_str(), static_cast<long long>(n), num_moments, worst_sell, worst_free, stochastic);
        }
    }
}
