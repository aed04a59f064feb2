// BlockVector's device mirror (PETSc-style offload state). The state logic is checked on
// every machine with a host-memory fake mirror that counts transfers; the same sequences
// then run against the real CUDA mirror where a GPU is visible (skipped with the reason
// otherwise).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "numerics/base/block_vector.hpp"
#include "runtime/device/device.hpp"
#include "tests/support/backends.hpp"

using namespace topokpm;

namespace {

struct TransferCounts {
    int uploads = 0;
    int downloads = 0;
};

/// A "device" copy in host memory: lets the tests play the kernel (write the device copy
/// directly) and count every transfer.
class FakeMirror final : public DeviceMirror {
public:
    FakeMirror(std::size_t bytes, TransferCounts* counts) : memory_(bytes / sizeof(complex_type)), counts_(counts) {}
    int device() const override { return 0; }
    void* data() override { return memory_.data(); }
    void upload(const void* host, std::size_t bytes) override
    {
        ++counts_->uploads;
        std::memcpy(memory_.data(), host, bytes);
    }
    void download(void* host, std::size_t bytes) override
    {
        ++counts_->downloads;
        std::memcpy(host, memory_.data(), bytes);
    }

private:
    std::vector<complex_type> memory_;
    TransferCounts* counts_;
};

BlockVector filled(global_index n, int r, double base)
{
    BlockVector v(n, r);
    for (global_index i = 0; i < n; ++i)
        for (int c = 0; c < r; ++c) v(i, c) = complex_type(base + i, -c);
    return v;
}

/// A block with a fake mirror attached (state host).
BlockVector with_fake_mirror(global_index n, int r, double base, TransferCounts* counts)
{
    BlockVector v = filled(n, r, base);
    v.attach_device_mirror(std::make_unique<FakeMirror>(v.bytes(), counts));
    return v;
}

/// "Kernel" write: every device value set to `value`.
void device_fill(complex_type* device_data, std::size_t size, complex_type value)
{
    for (std::size_t k = 0; k < size; ++k) device_data[k] = value;
}

}  // namespace

TEST(BlockVectorMirror, NewBlockLivesOnTheHostOnly)
{
    const BlockVector v(5, 3);
    EXPECT_EQ(v.memory_state(), MemoryState::host);
    EXPECT_FALSE(v.has_device_mirror());
    EXPECT_EQ(v(4, 2), complex_type(0.0, 0.0));
}

TEST(BlockVectorMirror, ReadingOnTheDeviceUploadsOnceThenBothAreValid)
{
    TransferCounts counts;
    const BlockVector v = with_fake_mirror(7, 2, 1.0, &counts);
    const complex_type* d = v.device_data_read(0);
    EXPECT_EQ(counts.uploads, 1);
    EXPECT_EQ(v.memory_state(), MemoryState::both);
    EXPECT_EQ(d[3 * 2 + 1], complex_type(4.0, -1.0));
    v.device_data_read(0);
    EXPECT_EQ(v(6, 0), complex_type(7.0, 0.0));  // const host read of `both`: no transfer
    EXPECT_EQ(counts.uploads, 1);
    EXPECT_EQ(counts.downloads, 0);
}

TEST(BlockVectorMirror, OverwritingOnTheDeviceNeverUploads)
{
    TransferCounts counts;
    BlockVector y = with_fake_mirror(4, 3, 0.0, &counts);
    complex_type* d = y.device_data_overwrite(0);
    EXPECT_EQ(counts.uploads, 0);
    EXPECT_EQ(y.memory_state(), MemoryState::device);
    device_fill(d, y.size(), complex_type(2.0, 5.0));
    EXPECT_EQ(counts.downloads, 0);
}

TEST(BlockVectorMirror, HostReadAfterDeviceWriteDownloadsOnce)
{
    TransferCounts counts;
    BlockVector y = with_fake_mirror(4, 3, 0.0, &counts);
    device_fill(y.device_data_overwrite(0), y.size(), complex_type(2.0, 5.0));
    const BlockVector& cy = y;
    EXPECT_EQ(cy(3, 2), complex_type(2.0, 5.0));
    EXPECT_EQ(cy.memory_state(), MemoryState::both);
    EXPECT_EQ(cy.data()[0], complex_type(2.0, 5.0));
    EXPECT_EQ(counts.downloads, 1);
}

TEST(BlockVectorMirror, HostWriteAfterDeviceWriteKeepsTheDeviceValuesAndMarksTheDeviceStale)
{
    TransferCounts counts;
    BlockVector y = with_fake_mirror(4, 3, 0.0, &counts);
    device_fill(y.device_data_overwrite(0), y.size(), complex_type(2.0, 5.0));
    y(1, 1) = complex_type(-1.0, 0.0);  // non-const access: download, then host-only
    EXPECT_EQ(counts.downloads, 1);
    EXPECT_EQ(y.memory_state(), MemoryState::host);
    EXPECT_EQ(y(0, 0), complex_type(2.0, 5.0));
    // The next device read sees the host write.
    const complex_type* d = y.device_data_read(0);
    EXPECT_EQ(counts.uploads, 1);
    EXPECT_EQ(d[1 * 3 + 1], complex_type(-1.0, 0.0));
    EXPECT_EQ(d[0], complex_type(2.0, 5.0));
}

TEST(BlockVectorMirror, HostWriteOfBothStateInvalidatesTheDeviceCopyWithoutTransfer)
{
    TransferCounts counts;
    BlockVector v = with_fake_mirror(3, 1, 0.0, &counts);
    v.device_data_read(0);
    v.data()[2] = complex_type(9.0, 9.0);
    EXPECT_EQ(v.memory_state(), MemoryState::host);
    EXPECT_EQ(counts.downloads, 0);
    EXPECT_EQ(v.device_data_read(0)[2], complex_type(9.0, 9.0));
    EXPECT_EQ(counts.uploads, 2);
}

TEST(BlockVectorMirror, ReadWriteUploadsOnlyWhenTheHostIsNewer)
{
    TransferCounts counts;
    BlockVector y = with_fake_mirror(5, 2, 3.0, &counts);
    complex_type* d = y.device_data_read_write(0);  // host newer: upload
    EXPECT_EQ(counts.uploads, 1);
    EXPECT_EQ(y.memory_state(), MemoryState::device);
    EXPECT_EQ(d[0], complex_type(3.0, 0.0));
    y.device_data_read_write(0);  // device already valid
    EXPECT_EQ(counts.uploads, 1);
}

TEST(BlockVectorMirror, CopiesTakeTheNewestValuesAndLiveOnTheHost)
{
    TransferCounts counts;
    BlockVector y = with_fake_mirror(4, 2, 0.0, &counts);
    device_fill(y.device_data_overwrite(0), y.size(), complex_type(1.5, -2.5));

    const BlockVector copy = y;  // copy construction downloads the device values
    EXPECT_EQ(copy(3, 1), complex_type(1.5, -2.5));
    EXPECT_FALSE(copy.has_device_mirror());
    EXPECT_EQ(copy.memory_state(), MemoryState::host);
    EXPECT_EQ(y.memory_state(), MemoryState::both);

    BlockVector assigned(1, 1);
    device_fill(y.device_data_overwrite(0), y.size(), complex_type(7.0, 0.0));
    assigned = y;
    EXPECT_EQ(assigned.num_rows(), 4);
    EXPECT_EQ(assigned(2, 0), complex_type(7.0, 0.0));
    EXPECT_EQ(counts.downloads, 2);
}

TEST(BlockVectorMirror, MovesAndSwapsCarryTheStateAndTheMirror)
{
    TransferCounts counts;
    BlockVector y = with_fake_mirror(4, 2, 0.0, &counts);
    device_fill(y.device_data_overwrite(0), y.size(), complex_type(4.0, 0.0));
    BlockVector moved = std::move(y);
    EXPECT_EQ(moved.memory_state(), MemoryState::device);
    EXPECT_TRUE(moved.has_device_mirror());

    BlockVector other(4, 2);
    other.swap(moved);
    EXPECT_EQ(other.memory_state(), MemoryState::device);
    EXPECT_EQ(moved.memory_state(), MemoryState::host);
    EXPECT_EQ(static_cast<const BlockVector&>(other)(1, 1), complex_type(4.0, 0.0));
    EXPECT_EQ(counts.downloads, 1);
}

// ---- the real CUDA mirror ------------------------------------------------------------------

TEST(BlockVectorMirrorCuda, RoundTripThroughTheDeviceKeepsEveryValue)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    const global_index n = 1000;  // not a multiple of anything in particular
    const BlockVector x = filled(n, 3, 0.25);
    BlockVector y(n, 3);
    const complex_type* xd = x.device_data_read(0);
    complex_type* yd = y.device_data_overwrite(0);
    EXPECT_EQ(x.memory_state(), MemoryState::both);
    EXPECT_EQ(y.memory_state(), MemoryState::device);
    device::copy_device_to_device(yd, xd, x.bytes());  // plays the kernel
    const BlockVector& cy = y;
    for (global_index i = 0; i < n; ++i)
        for (int c = 0; c < 3; ++c) ASSERT_EQ(cy(i, c), x(i, c)) << i << "," << c;
    EXPECT_EQ(cy.memory_state(), MemoryState::both);

    // Host write after the device write, then back to the device.
    y(0, 0) = complex_type(-8.0, 8.0);
    BlockVector z(n, 3);
    device::copy_device_to_device(z.device_data_overwrite(0), y.device_data_read(0), y.bytes());
    EXPECT_EQ(static_cast<const BlockVector&>(z)(0, 0), complex_type(-8.0, 8.0));
    const BlockVector copy = z;
    EXPECT_EQ(copy(n - 1, 2), x(n - 1, 2));
}

TEST(BlockVectorMirrorCuda, TooLargeForTheDeviceIsAResourceErrorBeforeAllocating)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    try {
        device::require_device_memory(1e15, 0, "a test block");
        FAIL() << "expected ResourceError";
    } catch (const ResourceError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("a test block needs"), std::string::npos) << what;
        EXPECT_NE(what.find("GiB free"), std::string::npos) << what;
    }
    EXPECT_THROW(device::DeviceBuffer(std::size_t(1) << 50, 0, "huge"), ResourceError);
}

// A block made on a device (the host stand-in here; a GPU the same way): its only copy is the
// device's, zero, and a host read downloads those zeros; on no device it is a plain host block.
TEST(BlockVectorMirror, ZerosOnADeviceLiveThereUntilTheHostReads)
{
    BasicBlockVector<complex_single> b = BasicBlockVector<complex_single>::zeros_on(37, 3, device::host_standin);
    EXPECT_EQ(b.memory_state(), MemoryState::device);
    ASSERT_TRUE(b.has_device_mirror());
    const complex_single* d = b.device_data_read(device::host_standin);
    for (std::size_t k = 0; k < b.size(); ++k) ASSERT_EQ(d[k], complex_single(0, 0)) << k;
    const auto& host = b;
    EXPECT_EQ(host(36, 2), complex_single(0, 0));
    EXPECT_EQ(b.memory_state(), MemoryState::both);
    const BlockVector plain = BlockVector::zeros_on(5, 2, device::no_device);
    EXPECT_FALSE(plain.has_device_mirror());
    EXPECT_EQ(plain.memory_state(), MemoryState::host);
    EXPECT_EQ(plain(4, 1), complex_type(0, 0));
}
