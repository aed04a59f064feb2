#include <gtest/gtest.h>

#include "runtime/base/error.hpp"
#include "runtime/hetero/plan.hpp"

using namespace topokpm;
using namespace topokpm::hetero;

namespace {

PlanInput small_input()
{
    PlanInput in;
    in.nx = 4;
    in.ny = 1;
    in.nz = 1;
    in.block = 2;
    in.rows = 8;
    in.nnz = 20;
    in.vectors = 1;
    in.moments = 2;
    in.ranks = 2;
    in.memory_gbs = {1.0};
    in.network_gbs = 1.0;
    return in;
}

PlanInput ti_input(int ranks)
{
    PlanInput in;
    in.nx = 1600;
    in.ny = 1600;
    in.nz = 40;
    in.block = 4;
    in.rows = in.nx * in.ny * in.nz * in.block;
    // 13 per row, less the 2 entries of the missing z neighbour in each row of the two open
    // surfaces (the model's own count, Model::estimated_nonzeros, is what kpm-dos plans with).
    in.nnz = 13 * in.rows - 2 * 2 * in.nx * in.ny * in.block;
    in.vectors = 32;
    in.moments = 2048;
    in.ranks = ranks;
    in.memory_gbs = {100.0};  // one rank per node of ~100 GB/s (docs/scaling.md)
    return in;
}

}  // namespace

TEST(Plan, SmallCaseByHandPeriodic)
{
    const Plan p = make_plan(small_input());
    ASSERT_EQ(p.ranks.size(), 2u);
    // Rows [0,4) and [4,8); a plane is 1*1*2 = 2 rows; halo = 2 planes = 4 rows.
    EXPECT_EQ(p.ranks[0].range, (RowRange{0, 4}));
    EXPECT_EQ(p.ranks[1].range, (RowRange{4, 8}));
    for (const RankPlan& r : p.ranks) {
        EXPECT_EQ(r.nnz, 10u);
        EXPECT_EQ(r.halo_rows, 4u);
        EXPECT_DOUBLE_EQ(r.memory_bytes, 20.0 * 10 + 32.0 * 4 + 32.0 * 4);
        EXPECT_DOUBLE_EQ(r.sweep_bytes, 20.0 * 10 + 48.0 * 4);
        EXPECT_DOUBLE_EQ(r.halo_bytes_per_sweep, 16.0 * 4);
        EXPECT_NEAR(r.seconds_per_moment, (392e-9 + 64e-9) / 2, 1e-18);
        EXPECT_NEAR(r.seconds_per_moment_overlap, 392e-9 / 2, 1e-18);
        EXPECT_FALSE(r.gpu);
    }
    EXPECT_NEAR(p.total_seconds, 2 * 228e-9, 1e-18);
}

// Sweeps: ceil(R / W) blocks of M / 2 sweeps, per realization; the time scales with them.
TEST(Plan, SweepsCountBlocksMomentsAndRealizations)
{
    PlanInput in = small_input();
    in.vectors = 5;
    in.block_width = 2;  // blocks of 2, 2 and 1 (padded) columns
    in.moments = 8;
    const Plan one = make_plan(in);
    EXPECT_DOUBLE_EQ(one.sweeps, 3 * 4);
    in.realizations = 3;
    const Plan three = make_plan(in);
    EXPECT_DOUBLE_EQ(three.sweeps, 3 * 3 * 4);
    EXPECT_NEAR(three.total_seconds, 3 * one.total_seconds, 1e-12 * three.total_seconds);
    EXPECT_NE(format_plan(three).find("for 8 moments x 3 realizations"), std::string::npos) << format_plan(three);
    in.realizations = 0;
    EXPECT_THROW(make_plan(in), InputError);
}

// Two sweeps per pass over memory (the CPU stencil's temporal blocking, one CPU rank): a
// pass streams the operator once and the two vector blocks in and out (4 v rows W), so a
// sweep costs half of that: 8 rows, 10 nonzeros of 20 B, W = 1, v = 16: (200 + 512) / 2
// against 200 + 384 for one sweep per pass. Several ranks sweep one step at a time (the
// distributed operator): priced as 1. Anything but 1 or 2 is refused.
TEST(Plan, TwoSweepsPerPassHalveAPassOfFourVectorStreams)
{
    PlanInput in = small_input();
    in.ranks = 1;
    const Plan one = make_plan(in);
    EXPECT_DOUBLE_EQ(one.ranks[0].sweep_bytes, 20.0 * 20 + 48.0 * 8);
    in.sweeps_per_pass = 2;
    const Plan two = make_plan(in);
    EXPECT_DOUBLE_EQ(two.ranks[0].sweep_bytes, (20.0 * 20 + 64.0 * 8) / 2);
    EXPECT_NEAR(two.seconds_per_moment / one.seconds_per_moment, (400.0 + 512) / 2 / (400 + 384), 1e-12);
    EXPECT_DOUBLE_EQ(two.sweeps, one.sweeps);  // the same sweeps, fewer passes
    in.ranks = 2;
    EXPECT_DOUBLE_EQ(make_plan(in).ranks[0].sweep_bytes, 20.0 * 10 + 48.0 * 4);
    in.sweeps_per_pass = 3;
    EXPECT_THROW(make_plan(in), InputError);
}

// A rate measured on a sample (app::probe_kernel) sets one CPU rank's sweep time: rows / rate,
// whatever the traffic model says (the ti two-step pass is in-core bound); several ranks keep
// the traffic model. A negative or non-finite rate is refused.
TEST(Plan, MeasuredRateSetsTheSerialSweepTime)
{
    PlanInput in = small_input();
    in.ranks = 1;
    in.measured_rows_per_second = 4e6;  // 8 rows: 2 us per sweep
    const Plan one = make_plan(in);
    EXPECT_DOUBLE_EQ(one.ranks[0].sweep_seconds, static_cast<double>(one.ranks[0].range.size()) / 4e6);
    EXPECT_DOUBLE_EQ(one.seconds_per_moment, one.ranks[0].sweep_seconds / 2);
    in.measured_rows_per_second = 0;  // not measured: the traffic model
    EXPECT_DOUBLE_EQ(make_plan(in).ranks[0].sweep_seconds, make_plan(in).ranks[0].sweep_bytes / (1.0e9));
    in.ranks = 2;
    in.measured_rows_per_second = 4e6;
    const Plan two = make_plan(in);
    EXPECT_DOUBLE_EQ(two.ranks[0].sweep_seconds, two.ranks[0].sweep_bytes / (1.0e9));
    in.measured_rows_per_second = -1;
    EXPECT_THROW(make_plan(in), InputError);
}

TEST(Plan, SmallCaseOpenEndsAndOneRank)
{
    PlanInput in = small_input();
    in.periodic_x = false;
    Plan p = make_plan(in);
    EXPECT_EQ(p.ranks[0].halo_rows, 2u);  // only the plane above
    EXPECT_EQ(p.ranks[1].halo_rows, 2u);  // only the plane below
    in.ranks = 4;                         // one plane (2 rows) per rank
    p = make_plan(in);
    EXPECT_EQ(p.ranks[0].halo_rows, 2u);
    EXPECT_EQ(p.ranks[1].halo_rows, 4u);
    EXPECT_EQ(p.ranks[3].halo_rows, 2u);
    in.ranks = 1;
    in.periodic_x = true;
    p = make_plan(in);
    EXPECT_EQ(p.ranks[0].halo_rows, 0u);
    EXPECT_DOUBLE_EQ(p.ranks[0].memory_bytes, 20.0 * 20 + 32.0 * 8);
}

// Couplings that reach two x-planes (a _hr.dat with |R1| = 2; x_reach): the 1-D halo is two
// planes on each side, clipped at the lattice's size; a model with no x coupling has none.
TEST(Plan, XReachOfTwoPlanes)
{
    PlanInput in = small_input();
    in.rows = 16;
    in.nx = 8;  // 8 planes of 2 rows
    in.ranks = 4;
    in.x_reach = 2;
    in.periodic_x = false;
    Plan p = make_plan(in);
    EXPECT_EQ(p.ranks[0].halo_rows, 4u);  // planes 2, 3
    EXPECT_EQ(p.ranks[1].halo_rows, 8u);  // planes 0, 1 and 4, 5
    EXPECT_EQ(p.ranks[3].halo_rows, 4u);
    in.periodic_x = true;
    in.ranks = 2;  // 4 planes each: the 2 planes on each side are the other rank's 4
    p = make_plan(in);
    EXPECT_EQ(p.ranks[0].halo_rows, 8u);
    in.x_reach = 3;  // reaches wrap onto the rank's own planes: still the other 8 rows
    p = make_plan(in);
    EXPECT_EQ(p.ranks[0].halo_rows, 8u);
    in.x_reach = 0;
    p = make_plan(in);
    EXPECT_EQ(p.ranks[0].halo_rows, 0u);
}

TEST(Plan, WeightsShiftRowsAndPerRankBandwidth)
{
    PlanInput in = small_input();
    in.rows = 16;
    in.nx = 8;
    in.weights = {1, 3};
    in.memory_gbs = {1.0, 3.0};
    const Plan p = make_plan(in);
    EXPECT_EQ(p.ranks[0].range.size(), 4u);
    EXPECT_EQ(p.ranks[1].range.size(), 12u);
    EXPECT_NEAR(p.seconds_per_moment, std::max(p.ranks[0].seconds_per_moment, p.ranks[1].seconds_per_moment), 0);
    // Without weights the bandwidths are the weights: the same 1:3 split.
    in.weights.clear();
    const Plan q = make_plan(in);
    EXPECT_EQ(q.weights, (std::vector<double>{1.0, 3.0}));
    EXPECT_EQ(q.ranks[0].range, p.ranks[0].range);
}

TEST(Plan, GpuRanksByHand)
{
    // 8 sites x 2 orbitals, periodic, one cpu rank (10 GB/s) and one gpu rank (30 GB/s):
    // weights 10:30 -> 2 and 6 sites; plane = 2 rows; halo 4 rows each (both neighbours
    // are the other rank, wrapped).
    PlanInput in = small_input();
    in.nx = 8;
    in.rows = 16;
    in.nnz = 40;
    in.memory_gbs = {10.0};
    in.gpus = 1;
    in.gpu_memory_gbs = 30.0;
    in.host_device_gbs = 2.0;
    const Plan p = make_plan(in);
    ASSERT_EQ(p.ranks.size(), 2u);
    EXPECT_FALSE(p.ranks[0].gpu);
    EXPECT_TRUE(p.ranks[1].gpu);
    EXPECT_EQ(p.ranks[0].range, (RowRange{0, 4}));
    EXPECT_EQ(p.ranks[1].range, (RowRange{4, 16}));
    const RankPlan& g = p.ranks[1];
    EXPECT_EQ(g.nnz, 30u);
    EXPECT_EQ(g.halo_rows, 4u);
    EXPECT_DOUBLE_EQ(g.memory_bytes, 20.0 * 30 + 32.0 * 12 + 32.0 * 4);
    // sweep (600 + 576) B at 30 GB/s; halo 64 B at 1 GB/s network + 128 B at 2 GB/s PCIe.
    EXPECT_NEAR(g.seconds_per_moment, (1176.0 / 30e9 + 64.0 / 1e9 + 128.0 / 2e9) / 2, 1e-18);
    EXPECT_NEAR(g.seconds_per_moment_overlap, (64.0 / 1e9 + 128.0 / 2e9) / 2, 1e-18);
    EXPECT_DOUBLE_EQ(p.max_gpu_memory_bytes, g.memory_bytes);
    EXPECT_DOUBLE_EQ(p.max_memory_bytes, p.ranks[0].memory_bytes);
    EXPECT_NO_THROW(require_fits(p, MemoryLimit{1e6, "have 1e6 B"}, 1e6));
    try {
        require_fits(p, MemoryLimit{1e6, "have 1e6 B"}, 1000.0);
        FAIL() << "no ResourceError";
    } catch (const ResourceError& e) {
        EXPECT_NE(std::string(e.what()).find("rank 1 (gpu)"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("device memory"), std::string::npos) << e.what();
    }
    const std::string table = format_plan(p);
    EXPECT_NE(table.find("1 gpu"), std::string::npos) << table;
    EXPECT_NE(table.find("30.0 GB/s (gpu)"), std::string::npos) << table;
}

TEST(Plan, RejectsInconsistentInput)
{
    PlanInput in = small_input();
    in.rows = 10;
    EXPECT_THROW(make_plan(in), InputError);
    in = small_input();
    in.memory_gbs = {};
    EXPECT_THROW(make_plan(in), InputError);
    in = small_input();
    in.ranks = 5;  // 4 sites
    EXPECT_THROW(make_plan(in), InputError);
    in = small_input();
    in.moments = 3;
    EXPECT_THROW(make_plan(in), InputError);
    in = small_input();
    in.gpus = 3;  // more GPUs than ranks
    EXPECT_THROW(make_plan(in), InputError);
    in.gpus = 1;  // GPU without a device bandwidth
    EXPECT_THROW(make_plan(in), InputError);
    in = small_input();
    in.weights = {1, 2, 3};
    EXPECT_THROW(make_plan(in), InputError);
}

TEST(Plan, CostsNothingProportionalToTheLattice)
{
    // 100000 x 100000 x 40 sites: 1.6e12 rows, 26 TB of vector blocks on each of the 1024
    // ranks. Planned from the extents alone; a plan that allocated or looped per row or site
    // would end in std::bad_alloc or the test's timeout.
    PlanInput in = ti_input(1024);
    in.nx = in.ny = 100000;
    in.rows = in.nx * in.ny * in.nz * in.block;
    in.nnz = 13 * in.rows - 2 * 2 * in.nx * in.ny * in.block;
    const Plan p = make_plan(in);
    ASSERT_EQ(p.ranks.size(), 1024u);
    std::uint64_t rows = 0;
    for (const RankPlan& r : p.ranks) rows += r.range.size();
    EXPECT_EQ(rows, in.rows);
}

TEST(Plan, Ti1600x1600x40On1024Ranks)
{
    const Plan p = make_plan(ti_input(1024));
    ASSERT_EQ(p.ranks.size(), 1024u);
    EXPECT_EQ(p.input.rows, 409600000u);
    const std::uint64_t plane = 1600 * 40 * 4;
    for (const RankPlan& r : p.ranks) {
        EXPECT_LE(std::abs(static_cast<double>(r.range.size()) - 400000.0), static_cast<double>(plane));
        EXPECT_LE(std::abs(static_cast<double>(r.range.size()) - 400000.0), 4.0);  // within one site
        EXPECT_EQ(r.halo_rows, 2 * plane);
    }
    // Exactly 400000 rows per rank: nnz 5160000, memory 20*5.16e6 + 32*4e5*32 + 32*5.12e5*32.
    const RankPlan& r0 = p.ranks[0];
    EXPECT_EQ(r0.range.size(), 400000u);
    EXPECT_EQ(r0.nnz, 5160000u);
    EXPECT_DOUBLE_EQ(r0.memory_bytes, 1037088000.0);
    EXPECT_NEAR(r0.seconds_per_moment, (717.6e6 / 100e9 + 262.144e6 / 10e9) / 2, 1e-12);
    EXPECT_NEAR(r0.seconds_per_moment_overlap, 262.144e6 / 10e9 / 2, 1e-12);
    EXPECT_NEAR(p.total_seconds, 2048 * r0.seconds_per_moment, 1e-9);
    const std::string table = format_plan(p);
    EXPECT_NE(table.find("min"), std::string::npos);
    EXPECT_NE(table.find("mean"), std::string::npos);
    EXPECT_NE(table.find("[GiB]"), std::string::npos);
    std::printf("%s", table.c_str());
    EXPECT_NO_THROW(require_fits(p, memory_limit(4.0, 1)));
    try {
        require_fits(p, memory_limit(0.5, 1));
        FAIL() << "no ResourceError";
    } catch (const ResourceError& e) {
        // The limit that applied is named: {memory_limit}, not this machine's memory.
        EXPECT_NE(std::string(e.what()).find("needs 0.97 GiB per rank, the limit {memory_limit} is 512.0 MiB"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Plan, SmallTableListsEveryRank)
{
    const std::string table = format_plan(make_plan(small_input()));
    EXPECT_NE(table.find("rows [1]"), std::string::npos);
    EXPECT_NE(table.find("t/mom [ms]"), std::string::npos);
    EXPECT_EQ(table.find("mean"), std::string::npos);
}

TEST(Plan, Ti1600x1600x40PizDaintEquivalent)
{
    // 1024 Cray XC30 nodes of seed 004: one SNB socket (48 GB/s) and one K20X (170 GB/s,
    // 6 GiB, PCIe 2.0 ~6 GB/s) each: 2048 ranks, the last 1024 drive the GPUs.
    PlanInput in = ti_input(2048);
    in.memory_gbs = {48.0};
    in.gpus = 1024;
    in.gpu_memory_gbs = 170.0;
    in.host_device_gbs = 6.0;
    const Plan p = make_plan(in);
    std::uint64_t cpu_rows = 0, gpu_rows = 0;
    for (const RankPlan& r : p.ranks) (r.gpu ? gpu_rows : cpu_rows) += r.range.size();
    EXPECT_EQ(cpu_rows + gpu_rows, 409600000u);
    // Shares 48/218 and 170/218 of 400 000 rows per node, within a site per rank.
    EXPECT_NEAR(static_cast<double>(cpu_rows) / 1024, 400000.0 * 48 / 218, 4.0);
    EXPECT_NEAR(static_cast<double>(gpu_rows) / 1024, 400000.0 * 170 / 218, 4.0);
    EXPECT_NO_THROW(require_fits(p, memory_limit(16.0, 1), 6.0 * 1024 * 1024 * 1024));
    std::printf("%s", format_plan(p).c_str());
}
