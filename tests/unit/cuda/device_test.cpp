// runtime/device: discovery with a reason when there is no GPU, properties when there is,
// and NotCompiled from every CUDA entry point of a CPU-only build.
#include <gtest/gtest.h>

#include <cstdio>

#include "numerics/base/block_stencil.hpp"
#include "numerics/spmmv/cuda_operator.hpp"
#include "runtime/device/device.hpp"
#include "tests/support/backends.hpp"

using namespace topokpm;

TEST(Device, NoVisibleDeviceComesWithAReason)
{
    std::string why;
    const int count = device::visible_device_count(&why);
    EXPECT_GE(count, 0);
    if (count == 0) {
        EXPECT_FALSE(why.empty());
        if (topokpm::testing::cuda_compiled)
            EXPECT_NE(why.find("cudaGetDeviceCount"), std::string::npos) << why;
        else
            EXPECT_NE(why.find("no CUDA kernels"), std::string::npos) << why;
    }
}

TEST(Device, CpuOnlyBuildThrowsNotCompiledFromEveryEntryPoint)
{
    if (topokpm::testing::cuda_compiled) GTEST_SKIP() << "this build has the CUDA backend; the stubs are not compiled";
    EXPECT_FALSE(device::cuda_compiled());
    BlockStencil s;
    s.name = "one-site";
    s.onsite = {complex_type(1.0, 0.0)};
    s.potential = {0.0};
    EXPECT_THROW(numerics::make_cuda_stencil_operator(s, 0), NotCompiled);
    EXPECT_THROW(numerics::make_cuda_sell_operator(std::shared_ptr<const numerics::SellMatrix>(), 0), NotCompiled);
    EXPECT_THROW(numerics::make_cuda_sell_operator(std::shared_ptr<const numerics::BasicSellMatrix<complex_single>>(), 0),
                 NotCompiled);
    EXPECT_THROW(numerics::make_cuda_stencil_operator(s, 0, Precision::Single), NotCompiled);
    EXPECT_THROW(make_device_mirror(0, 16), NotCompiled);
    EXPECT_THROW(device::device_properties(0), NotCompiled);
    const BlockVector v(2, 1);
    EXPECT_THROW(v.device_data_read(0), NotCompiled);
}

TEST(DeviceCuda, PropertiesAndMemoryOfDeviceZero)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    const device::DeviceProperties p = device::device_properties(0);
    EXPECT_FALSE(p.name.empty());
    EXPECT_GT(p.multiprocessors, 0);
    EXPECT_GT(p.global_memory_bytes, 0u);
    const device::MemoryInfo m = device::memory_info(0);
    EXPECT_GT(m.free_bytes, 0u);
    EXPECT_LE(m.free_bytes, m.total_bytes);
    EXPECT_NE(device::describe(0).find("cuda:0"), std::string::npos);
    std::printf("device 0: %s, peak %.0f GB/s\n", device::describe(0).c_str(), p.peak_bandwidth_gb_s);
}

TEST(DeviceCuda, BadDeviceIndexIsAnInputError)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    EXPECT_THROW(device::device_properties(1000), InputError);
    EXPECT_THROW(device::set_device(-1), InputError);
}
