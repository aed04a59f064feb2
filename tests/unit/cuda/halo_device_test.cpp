// The device side of the distributed operator's halo (numerics/distributed/halo_device.hpp):
// the host stand-in and, where a GPU is visible, the CUDA implementation, against the CPU
// halo (device::no_device) on one hand-made pattern: what pack() leaves in the send staging buffer
// (bitwise: a gather), and what apply_remote() makes of a staged halo (y and the remote dot
// share). The stand-in runs the CPU loops on its own buffers: bitwise equal. The GPU sums
// each row's <= 3 products in the same order but may contract them into FMAs, and reduces
// the dots in another order: 1e-14 relative to the largest |y| / |dot|, a few ulp of sums
// of O(10) terms of size <= 4. Also the one-rank-per-GPU rule and the stand-in mirror.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "numerics/base/block_vector.hpp"
#include "numerics/distributed/halo_device.hpp"
#include "runtime/device/device.hpp"
#include "tests/support/backends.hpp"

using namespace topokpm;
using numerics::HaloPattern;

namespace {

constexpr global_index rows = 40;
constexpr int width = 3;

/// 40 local rows; rows 2, 5, 11, 37 are sent; rows 0, 7, 39 have 1-3 entries on a halo of 5.
HaloPattern pattern()
{
    HaloPattern p;
    p.send_index = {2, 5, 11, 37};
    p.halo_rows = 5;
    p.remote_row = {0, 7, 39};
    p.remote_ptr = {0, 2, 3, 6};
    p.remote_col = {0, 4, 2, 1, 3, 4};
    p.remote_vals = {{0.5, -1.0}, {2.0, 0.25}, {-1.5, 0.0}, {0.0, 1.0}, {1.25, -0.75}, {-0.5, 0.5}};
    return p;
}

BlockVector block(double seed)
{
    BlockVector v(rows, width);
    for (global_index i = 0; i < rows; ++i)
        for (int c = 0; c < width; ++c) v(i, c) = complex_type(std::sin(seed + i + 0.3 * c), std::cos(seed * i - c));
    return v;
}

template <class T>
struct Outcome {
    std::vector<T> sent, y;
    DotSums dots;
};

/// pack, unpack and apply_remote on `device` in T's precision, with x and y where that
/// device keeps them, in the order DistributedOperator calls them.
template <class T = complex_type>
Outcome<T> run_on(int device)
{
    auto halo = numerics::make_halo_device<T>(device, pattern());
    const BasicBlockVector<T> x = convert_block<T>(block(1.0));
    BasicBlockVector<T> y = convert_block<T>(block(2.0));
    Outcome<T> out;
    halo->pack(halo->x_values(x), width, halo->send_staging(width));
    halo->wait_packed();
    const T* sent = halo->send_staging(width);
    out.sent.assign(sent, sent + 4 * width);
    // Halo rows 0-1 as MPI leaves them (in the staging buffer), rows 2-4 in a peer's memory
    // (a shared segment): unpack must place both.
    T* staged = halo->halo_staging(width);
    std::vector<T> peer(3 * width);
    for (int k = 0; k < 5 * width; ++k)
        (k < 2 * width ? staged[k] : peer[k - 2 * width]) = T(complex_type(0.1 * k - 0.4, 1.0 / (k + 1)));
    for (int k = 2 * width; k < 5 * width; ++k) staged[k] = T(99.0, -99.0);  // stale: must not be read
    halo->unpack(width, {{staged, 0, 2}, {peer.data(), 2, 3}});
    out.dots.reset(width);
    halo->apply_remote(halo->x_values(x), halo->y_values(y), width, 0.75, &out.dots);
    if (device != device::no_device) {
        EXPECT_EQ(y.memory_state(), MemoryState::device) << "y left the device in apply_remote";
        EXPECT_EQ(x.memory_state(), MemoryState::both);
    }
    out.y.assign(y.data(), y.data() + y.size());
    return out;
}

template <class T>
double max_abs(const std::vector<T>& v)
{
    double m = 0.0;
    for (const auto& z : v) m = std::max(m, double(std::abs(z)));
    return m;
}

}  // namespace

TEST(HaloDevice, CpuHaloPacksTheSendRowsAndAddsTheRemoteCorrection)
{
    const Outcome cpu = run_on(device::no_device);
    const BlockVector x = block(1.0), y0 = block(2.0);
    const HaloPattern p = pattern();
    for (size_t k = 0; k < p.send_index.size(); ++k)
        for (int c = 0; c < width; ++c) EXPECT_EQ(cpu.sent[k * width + c], x(p.send_index[k], c));
    // Row 7 has the single entry -1.5 on halo row 2: y += 0.75 * -1.5 * halo(2, c).
    for (int c = 0; c < width; ++c) {
        const int k = 2 * width + c;
        const complex_type h(0.1 * k - 0.4, 1.0 / (k + 1));
        EXPECT_NEAR(std::abs(cpu.y[7 * width + c] - (y0(7, c) + 0.75 * -1.5 * h)), 0.0, 1e-15);
        EXPECT_EQ(cpu.y[8 * width + c], y0(8, c)) << "a row without remote entries changed";
    }
    EXPECT_EQ(cpu.dots.xx, std::vector<double>(width, 0.0)) << "the remote part adds to yx only";
}

TEST(HaloDevice, HostStandinEqualsTheCpuHaloBitwise)
{
    const Outcome<complex_type> cpu = run_on(device::no_device), standin = run_on(device::host_standin);
    EXPECT_EQ(standin.sent, cpu.sent);
    EXPECT_EQ(standin.y, cpu.y);
    EXPECT_EQ(standin.dots.yx, cpu.dots.yx);
    EXPECT_EQ(numerics::make_halo_device<complex_type>(device::host_standin, pattern())->name(), "host-standin");
}

TEST(HaloDevice, CudaEqualsTheCpuHalo)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    const Outcome<complex_type> cpu = run_on(device::no_device), gpu = run_on(0);
    EXPECT_EQ(gpu.sent, cpu.sent) << "the gather is a copy";
    double dy = 0.0, dd = 0.0;
    for (size_t k = 0; k < cpu.y.size(); ++k) dy = std::max(dy, std::abs(gpu.y[k] - cpu.y[k]));
    for (int c = 0; c < width; ++c) dd = std::max(dd, std::abs(gpu.dots.yx[c] - cpu.dots.yx[c]));
    EXPECT_LE(dy, 1e-14 * max_abs(cpu.y));
    EXPECT_LE(dd, 1e-14 * std::max(1.0, max_abs(cpu.dots.yx)));
}

// GPU ranks in single precision: the float halo on the device against the CPU's float halo.
// The gather is a copy; the correction d is summed in double on both (the GPU may contract
// into FMAs: a few double ulp), so y + d rounds to the same float except where d lands
// within those ulp of a rounding boundary: one float ulp (6e-8) relative at most, and the
// dot share, conj(y_new - y_old) x from the stored floats, moves by as much.
TEST(HaloDevice, CudaEqualsTheCpuHaloInSinglePrecision)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    const Outcome<complex_single> cpu = run_on<complex_single>(device::no_device), gpu = run_on<complex_single>(0);
    EXPECT_EQ(gpu.sent, cpu.sent) << "the gather is a copy";
    double dy = 0.0, dd = 0.0;
    for (size_t k = 0; k < cpu.y.size(); ++k) dy = std::max(dy, double(std::abs(gpu.y[k] - cpu.y[k])));
    for (int c = 0; c < width; ++c) dd = std::max(dd, std::abs(gpu.dots.yx[c] - cpu.dots.yx[c]));
    const double ulp = std::numeric_limits<float>::epsilon();
    EXPECT_LE(dy, ulp * max_abs(cpu.y));
    EXPECT_LE(dd, 2.0 * ulp * max_abs(cpu.y) * max_abs(cpu.y) * double(cpu.y.size()));
}

TEST(HaloDevice, UnknownDeviceIndexIsAnInputError)
{
    EXPECT_THROW(numerics::make_halo_device<complex_type>(-7, pattern()), InputError);
}

TEST(HaloDevice, CudaHaloWithoutAGpuIsRefused)
{
    if (!topokpm::testing::cuda_unavailable_reason()) GTEST_SKIP() << "a GPU is visible (CudaEqualsTheCpuHalo runs)";
    if (topokpm::testing::cuda_compiled) {
        EXPECT_THROW(numerics::make_halo_device<complex_type>(0, pattern()), InputError) << "device 0 is not visible";
        EXPECT_THROW(numerics::make_halo_device<complex_single>(0, pattern()), InputError) << "device 0 is not visible";
    } else {
        EXPECT_THROW(numerics::make_halo_device<complex_type>(0, pattern()), NotCompiled);
        EXPECT_THROW(numerics::make_halo_device<complex_single>(0, pattern()), NotCompiled);
    }
}

TEST(HaloDevice, OneRankPerGpuTheRestOnTheCpu)
{
    EXPECT_EQ(device::rank_device(0, 1), 0);
    EXPECT_EQ(device::rank_device(1, 1), -1);
    EXPECT_EQ(device::rank_device(3, 4), 3);
    EXPECT_EQ(device::rank_device(0, 0), -1);
}

TEST(HaloDevice, StandinOperatorWorksOnTheMirrorOnly)
{
    // A CPU operator on the stand-in: y's host array is never written (it keeps its old
    // values until the host reads y, which downloads the mirror).
    class Scale final : public Operator {
    public:
        global_index num_rows() const override { return rows; }
        std::string name() const override { return "scale"; }
        OperatorCost cost() const override { return {}; }

    protected:
        void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override
        {
            for (global_index i = 0; i < rows; ++i)
                for (int c = 0; c < x.num_cols(); ++c) y(i, c) = ops.scale * x(i, c) + ops.beta * y(i, c);
            if (dots) dots->reset(x.num_cols());
        }
    };
    const auto op = numerics::make_host_standin_operator(std::make_shared<Scale>());
    EXPECT_EQ(op->name(), "standin-scale");
    const BlockVector x = block(1.0);
    BlockVector y = block(2.0);
    const BlockVector y0 = y;
    op->apply(x, y, AugmentedOps{2.0, 0.0, -1.0, false}, nullptr);
    EXPECT_EQ(y.memory_state(), MemoryState::device);
    for (global_index i = 0; i < rows; ++i)
        for (int c = 0; c < width; ++c) EXPECT_EQ(y(i, c), 2.0 * x(i, c) - y0(i, c));
}

// --precision single under mpirun: the host halo in float. The pack is a gather (bitwise);
// each corrected y entry is y_old + d rounded once to float, d = 0.75 sum_h H_ih halo_h in
// double from the float halo (so within half a float ulp of the exact sum, plus the double
// sum's few ulp); the dot share is conj(y_new - y_old) x in double from the stored floats.
TEST(HaloDevice, SinglePrecisionHostHaloRoundsEachCorrectedEntryOnce)
{
    const HaloPattern p = pattern();
    auto halo = numerics::make_halo_device<complex_single>(device::no_device, p);
    const auto x = convert_block<complex_single>(block(1.0));
    auto y = convert_block<complex_single>(block(2.0));
    const auto y_old = y;
    halo->pack(halo->x_values(x), width, halo->send_staging(width));
    halo->wait_packed();
    const complex_single* sent = halo->send_staging(width);
    for (size_t k = 0; k < p.send_index.size(); ++k)
        for (int c = 0; c < width; ++c) EXPECT_EQ(sent[k * width + c], x(p.send_index[k], c));
    complex_single* staged = halo->halo_staging(width);
    for (int k = 0; k < 5 * width; ++k) staged[k] = complex_single(float(0.1 * k - 0.4), float(1.0 / (k + 1)));
    halo->unpack(width, {{staged, 0, 5}});
    DotSums dots;
    dots.reset(width);
    halo->apply_remote(halo->x_values(x), halo->y_values(y), width, 0.75, &dots);

    const float eps = std::numeric_limits<float>::epsilon();
    std::vector<std::complex<long double>> share(width);
    for (size_t i = 0; i < p.remote_row.size(); ++i) {
        const local_index row = p.remote_row[i];
        for (int c = 0; c < width; ++c) {
            std::complex<long double> d = 0;
            for (std::int64_t e = p.remote_ptr[i]; e < p.remote_ptr[i + 1]; ++e) {
                const complex_single h = staged[p.remote_col[e] * width + c];
                d += std::complex<long double>(p.remote_vals[e]) * std::complex<long double>(h.real(), h.imag());
            }
            const std::complex<long double> exact = std::complex<long double>(y_old(row, c)) + 0.75L * d;
            const complex_single got = y(row, c);
            EXPECT_LE(std::abs(static_cast<long double>(got.real()) - exact.real()),
                      0.5L * eps * std::abs(exact.real()) + 1e-14L) << "row " << row << " column " << c;
            EXPECT_LE(std::abs(static_cast<long double>(got.imag()) - exact.imag()),
                      0.5L * eps * std::abs(exact.imag()) + 1e-14L) << "row " << row << " column " << c;
            const std::complex<long double> change =
                std::complex<long double>(got) - std::complex<long double>(y_old(row, c));
            share[c] += std::conj(change) * std::complex<long double>(x(row, c));
        }
    }
    for (global_index i = 0; i < rows; ++i) {
        if (std::find(p.remote_row.begin(), p.remote_row.end(), i) != p.remote_row.end()) continue;
        for (int c = 0; c < width; ++c) EXPECT_EQ(y(i, c), y_old(i, c)) << "a row without remote entries changed";
    }
    for (int c = 0; c < width; ++c)  // a few terms of size <= 10: double rounding only
        EXPECT_NEAR(std::abs(std::complex<long double>(dots.yx[c]) - share[c]), 0.0, 1e-14) << "column " << c;
    EXPECT_EQ(dots.xx, std::vector<double>(width, 0.0));

    // The host stand-in runs the same loops on its own buffers: bitwise the CPU halo's.
    const Outcome<complex_single> cpu = run_on<complex_single>(device::no_device);
    const Outcome<complex_single> standin = run_on<complex_single>(device::host_standin);
    EXPECT_EQ(standin.sent, cpu.sent);
    EXPECT_EQ(standin.y, cpu.y);
    EXPECT_EQ(standin.dots.yx, cpu.dots.yx);
}
