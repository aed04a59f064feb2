// BlockVector's slow paths: copies, moves and the host/device transfers of the mirror.
#include "numerics/base/block_vector.hpp"

#include <mutex>
#include <utility>

#include "runtime/base/error.hpp"
#include "runtime/device/device.hpp"

namespace topokpm {

struct BlockVector::Sync {
    std::mutex mutex;
};

namespace {

/// The CUDA-backed mirror: one cudaMalloc'ed buffer per block.
class CudaMirror final : public DeviceMirror {
public:
    CudaMirror(int device, std::size_t bytes) : buffer_(bytes, device, "block vector (N x R complex values)") {}
    int device() const override { return buffer_.device(); }
    void* data() override { return buffer_.data(); }
    void upload(const void* host, std::size_t bytes) override { buffer_.upload(host, bytes); }
    void download(void* host, std::size_t bytes) override { buffer_.download(host, bytes); }

private:
    device::DeviceBuffer buffer_;
};

}  // namespace

std::unique_ptr<DeviceMirror> make_device_mirror(int device, std::size_t bytes)
{
    device::set_device(device);
    return std::make_unique<CudaMirror>(device, bytes);
}

BlockVector::BlockVector() = default;

BlockVector::BlockVector(global_index num_rows, int num_cols)
    : num_rows_(num_rows), num_cols_(num_cols),
      data_(static_cast<std::size_t>(num_rows) * static_cast<std::size_t>(num_cols))
{}

BlockVector::BlockVector(const BlockVector& other)
    : num_rows_(other.num_rows_), num_cols_(other.num_cols_),
      data_((other.sync_to_host(), other.data_))
{}

BlockVector& BlockVector::operator=(const BlockVector& other)
{
    if (this == &other) return *this;
    other.sync_to_host();
    num_rows_ = other.num_rows_;
    num_cols_ = other.num_cols_;
    data_ = other.data_;
    // The copy is host data; an old mirror of this block would be stale (or mis-sized).
    mirror_.reset();
    sync_.reset();
    state_.store(MemoryState::host, std::memory_order_release);
    return *this;
}

BlockVector::BlockVector(BlockVector&& other) noexcept
    : num_rows_(std::exchange(other.num_rows_, 0)), num_cols_(std::exchange(other.num_cols_, 0)),
      data_(std::move(other.data_)), state_(other.state_.exchange(MemoryState::host)),
      mirror_(std::move(other.mirror_)), sync_(std::move(other.sync_))
{
    other.data_.clear();
}

BlockVector& BlockVector::operator=(BlockVector&& other) noexcept
{
    if (this != &other) {
        BlockVector tmp(std::move(other));
        swap(tmp);
    }
    return *this;
}

BlockVector::~BlockVector() = default;

void BlockVector::swap(BlockVector& other) noexcept
{
    std::swap(num_rows_, other.num_rows_);
    std::swap(num_cols_, other.num_cols_);
    data_.swap(other.data_);
    const MemoryState mine = state_.load(std::memory_order_relaxed);
    state_.store(other.state_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    other.state_.store(mine, std::memory_order_relaxed);
    mirror_.swap(other.mirror_);
    sync_.swap(other.sync_);
}

void BlockVector::download_to_host() const
{
    std::lock_guard<std::mutex> lock(sync_->mutex);
    // Another reader may have downloaded while this one waited for the lock.
    if (state_.load(std::memory_order_acquire) != MemoryState::device) return;
    mirror_->download(data_.data(), bytes());
    state_.store(MemoryState::both, std::memory_order_release);
}

void BlockVector::mark_host_only()
{
    if (state_.load(std::memory_order_acquire) == MemoryState::device) download_to_host();
    state_.store(MemoryState::host, std::memory_order_release);
}

void BlockVector::ensure_mirror(int device) const
{
    if (mirror_ && mirror_->device() == device) return;
    if (mirror_) {
        // Moving to another device goes through the host.
        prepare_host_read();
        mirror_.reset();
        state_.store(MemoryState::host, std::memory_order_release);
    }
    mirror_ = make_device_mirror(device, bytes());
    if (!sync_) sync_ = std::make_unique<Sync>();
}

const complex_type* BlockVector::device_data_read(int device) const
{
    ensure_mirror(device);
    if (state_.load(std::memory_order_acquire) == MemoryState::host) {
        mirror_->upload(data_.data(), bytes());
        state_.store(MemoryState::both, std::memory_order_release);
    }
    return static_cast<const complex_type*>(mirror_->data());
}

complex_type* BlockVector::device_data_read_write(int device)
{
    const complex_type* p = device_data_read(device);
    state_.store(MemoryState::device, std::memory_order_release);
    return const_cast<complex_type*>(p);
}

complex_type* BlockVector::device_data_overwrite(int device)
{
    ensure_mirror(device);
    state_.store(MemoryState::device, std::memory_order_release);
    return static_cast<complex_type*>(mirror_->data());
}

void BlockVector::release_device_mirror()
{
    prepare_host_read();
    mirror_.reset();
    sync_.reset();
    state_.store(MemoryState::host, std::memory_order_release);
}

void BlockVector::attach_device_mirror(std::unique_ptr<DeviceMirror> mirror)
{
    TOPOKPM_REQUIRE(mirror != nullptr, "attach_device_mirror: null mirror");
    prepare_host_read();
    mirror_ = std::move(mirror);
    if (!sync_) sync_ = std::make_unique<Sync>();
    state_.store(MemoryState::host, std::memory_order_release);
}

}  // namespace topokpm
