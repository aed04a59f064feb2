// Auto-tuning of the hybrid tiles' host width B_h (numerics/dense/tuning, seed 001 §3.6):
// step 2's estimate against the closed form, step 3's search against a load model whose
// balance point is known, and the real driver end to end (its result is a grid point;
// which one depends on the machine's timings, so only the grid and the probe log are
// checked there).

#include <gtest/gtest.h>

#include <cmath>

#include "numerics/dense/tuning.hpp"
#include "runtime/base/error.hpp"

using namespace topokpm;
using namespace topokpm::numerics::dense;

TEST(DenseTuning, EstimateIsTheRateShareOfTheLargeTileOnTheGrid)
{
    // host : device = 1 : 3 -> B_h = B / 4 = 128 for B = 512 (grid 64 with s = 2).
    EXPECT_EQ(estimate_host_width({1.0, 3.0}, 512, 2, 64), 128);
    // 1 : 2 -> 170.7 -> nearest grid point 192.
    EXPECT_EQ(estimate_host_width({1.0, 2.0}, 512, 2, 64), 192);
    // s = 3: two narrow slices of a multiple of 64, grid 128; 1 : 1 -> 256.
    EXPECT_EQ(estimate_host_width({5.0, 5.0}, 512, 3, 64), 256);
    // Clamped: a tiny host share still keeps one grid step, a huge one leaves a device slice.
    EXPECT_EQ(estimate_host_width({1.0, 1000.0}, 512, 2, 64), 64);
    EXPECT_EQ(estimate_host_width({1000.0, 1.0}, 512, 2, 64), 448);
    EXPECT_THROW(estimate_host_width({0.0, 1.0}, 512, 2, 64), InputError);
    EXPECT_THROW(estimate_host_width({1.0, 1.0}, 64, 2, 64), InputError);  // no grid point below B
}

namespace {

/// Busy times when a host column costs 3x a device column: the host owns B_h columns of
/// each large tile, the device B - B_h; balance at 3 B_h = B - B_h, B_h = B / 4.
HostWidthProbe model(int host_width, int large)
{
    HostWidthProbe p;
    p.host_width = host_width;
    p.host_seconds = 3.0 * host_width;
    p.device_seconds = 1.0 * (large - host_width);
    return p;
}

}  // namespace

TEST(DenseTuning, SearchWalksTowardsBalanceAndStopsWhenItCrosses)
{
    const int large = 512;
    // Balance at 3 B_h = B - B_h -> B_h = 128. From 384 the host is slower: 320, 256, 192,
    // 128 (equal: not slower, turn), stop. From 64 the device is slower: 128, then 192 is
    // host-slower: stop after crossing.
    auto probe = [&](int w) { return model(w, large); };
    const auto down = search_host_width(384, 64, 64, 448, 10, probe);
    EXPECT_EQ(down.host_width, 128);
    ASSERT_EQ(down.probes.size(), 5u);
    EXPECT_EQ(down.probes.front().host_width, 384);
    EXPECT_EQ(down.probes.back().host_width, 128);
    const auto up = search_host_width(64, 64, 64, 448, 10, probe);
    EXPECT_EQ(up.host_width, 128);
    EXPECT_EQ(up.probes.size(), 3u);  // 64, 128, 192
    // The probe budget and the range end stop it too.
    EXPECT_EQ(search_host_width(448, 64, 64, 448, 2, probe).probes.size(), 2u);
    EXPECT_EQ(search_host_width(64, 64, 64, 64, 10, probe).probes.size(), 1u);
}

TEST(DenseTuning, TunerMeasuresRatesAndProbesRealFactorizations)
{
    DenseExecution ex;
    ex.host_workers = 1;
    ex.device_workers = 1;
    ex.slices = 2;
    for (DenseOp op : {DenseOp::cholesky, DenseOp::qr}) {
        const auto rates = measure_kernel_rates(op, 96, ex, 1);
        EXPECT_GT(rates.host, 0.0);
        EXPECT_GT(rates.device, 0.0);
        EXPECT_GT(rates.link, 0.0);  // staging a tile on the host-memory device: a memcpy
        int estimate = 0;
        const auto search = tune_host_width(op, 128, ex, 32, 3, &estimate);
        EXPECT_TRUE(estimate == 32 || estimate == 64 || estimate == 96) << estimate;
        ASSERT_FALSE(search.probes.empty());
        EXPECT_LE(search.probes.size(), 3u);
        EXPECT_EQ(search.probes.front().host_width, estimate);
        EXPECT_EQ(search.host_width % 32, 0);
        for (const auto& p : search.probes) {
            EXPECT_GT(p.host_seconds, 0.0);
            EXPECT_GT(p.device_seconds, 0.0);
        }
    }
    DenseExecution host_only;
    EXPECT_THROW(measure_kernel_rates(DenseOp::cholesky, 64, host_only), InputError);
}
