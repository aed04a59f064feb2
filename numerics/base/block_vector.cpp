// BasicBlockVector's slow paths: allocation with parallel first touch, copies, moves, the
// host/device transfers of the mirror, and the precision conversions.
#include "numerics/base/block_vector.hpp"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "runtime/base/error.hpp"
#include "runtime/base/system.hpp"
#include "runtime/device/device.hpp"

namespace topokpm {

template <class T>
struct BasicBlockVector<T>::Sync {
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
    void zero(std::size_t bytes) override
    {
        TOPOKPM_REQUIRE(bytes == buffer_.bytes(), "zero of ", bytes, " bytes of a ", buffer_.bytes(), "-byte mirror");
        buffer_.zero();
    }

private:
    device::DeviceBuffer buffer_;
};

/// The host stand-in's mirror (device::host_standin): a separate host allocation.
class HostStandinMirror final : public DeviceMirror {
public:
    explicit HostStandinMirror(std::size_t bytes) : memory_((bytes + sizeof(complex_double) - 1) / sizeof(complex_double)) {}
    int device() const override { return device::host_standin; }
    void* data() override { return memory_.data(); }
    void upload(const void* host, std::size_t bytes) override { std::memcpy(memory_.data(), host, bytes); }
    void download(void* host, std::size_t bytes) override { std::memcpy(host, memory_.data(), bytes); }
    void zero(std::size_t bytes) override { std::memset(static_cast<void*>(memory_.data()), 0, bytes); }

private:
    std::vector<complex_double> memory_;
};

}  // namespace

std::unique_ptr<DeviceMirror> make_device_mirror(int device, std::size_t bytes)
{
    if (device == device::host_standin) return std::make_unique<HostStandinMirror>(bytes);
    device::set_device(device);
    return std::make_unique<CudaMirror>(device, bytes);
}

template <class T>
typename BasicBlockVector<T>::Storage BasicBlockVector<T>::allocate(std::size_t count)
{
    if (count == 0) return Storage();
    return Storage(static_cast<T*>(allocate_pages(count * sizeof(T))));  // huge pages for large blocks
}

template <class T>
BasicBlockVector<T>::BasicBlockVector() = default;

template <class T>
BasicBlockVector<T>::BasicBlockVector(global_index num_rows, int num_cols)
    : num_rows_(num_rows), num_cols_(num_cols)
{
    TOPOKPM_REQUIRE(num_rows >= 0 && num_cols >= 0, "block of ", num_rows, " x ", num_cols);
    data_ = allocate(size());
    T* p = data_.get();
    const std::int64_t per_row = num_cols;
    // The rows of the kernels' static split: each thread touches the pages it sweeps.
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < num_rows; ++i)
        for (std::int64_t j = 0; j < per_row; ++j) new (p + i * per_row + j) T();
}

template <class T>
BasicBlockVector<T> BasicBlockVector<T>::zeros_on(global_index num_rows, int num_cols, int device)
{
    if (device == device::no_device) return BasicBlockVector(num_rows, num_cols);
    TOPOKPM_REQUIRE(num_rows >= 0 && num_cols >= 0, "block of ", num_rows, " x ", num_cols);
    BasicBlockVector b;
    b.num_rows_ = num_rows;
    b.num_cols_ = num_cols;
    b.data_ = allocate(b.size());  // not touched: its pages stay unmapped until a download
    b.mirror_ = make_device_mirror(device, b.bytes());
    b.sync_ = std::make_unique<Sync>();
    b.mirror_->zero(b.bytes());
    b.state_.store(MemoryState::device, std::memory_order_release);
    return b;
}

template <class T>
BasicBlockVector<T>::BasicBlockVector(const BasicBlockVector& other) : BasicBlockVector()
{
    *this = other;
}

template <class T>
BasicBlockVector<T>& BasicBlockVector<T>::operator=(const BasicBlockVector& other)
{
    if (this == &other) return *this;
    const T* src = other.data();  // downloads when only the device copy is valid
    if (!data_ || size() != other.size()) data_ = allocate(other.size());
    num_rows_ = other.num_rows_;
    num_cols_ = other.num_cols_;
    T* dst = data_.get();
    const std::int64_t n = static_cast<std::int64_t>(size());
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) new (dst + i) T(src[i]);
    // The copy is host data; an old mirror of this block would be stale (or mis-sized).
    mirror_.reset();
    sync_.reset();
    state_.store(MemoryState::host, std::memory_order_release);
    return *this;
}

template <class T>
BasicBlockVector<T>::BasicBlockVector(BasicBlockVector&& other) noexcept
    : num_rows_(std::exchange(other.num_rows_, 0)), num_cols_(std::exchange(other.num_cols_, 0)),
      data_(std::move(other.data_)), state_(other.state_.exchange(MemoryState::host)),
      mirror_(std::move(other.mirror_)), sync_(std::move(other.sync_))
{}

template <class T>
BasicBlockVector<T>& BasicBlockVector<T>::operator=(BasicBlockVector&& other) noexcept
{
    if (this != &other) {
        BasicBlockVector tmp(std::move(other));
        swap(tmp);
    }
    return *this;
}

template <class T>
BasicBlockVector<T>::~BasicBlockVector() = default;

template <class T>
void BasicBlockVector<T>::swap(BasicBlockVector& other) noexcept
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

template <class T>
void BasicBlockVector<T>::download_to_host() const
{
    std::lock_guard<std::mutex> lock(sync_->mutex);
    // Another reader may have downloaded while this one waited for the lock.
    if (state_.load(std::memory_order_acquire) != MemoryState::device) return;
    mirror_->download(data_.get(), bytes());
    state_.store(MemoryState::both, std::memory_order_release);
}

template <class T>
void BasicBlockVector<T>::mark_host_only()
{
    if (state_.load(std::memory_order_acquire) == MemoryState::device) download_to_host();
    state_.store(MemoryState::host, std::memory_order_release);
}

template <class T>
void BasicBlockVector<T>::ensure_mirror(int device) const
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

template <class T>
const T* BasicBlockVector<T>::device_data_read(int device) const
{
    ensure_mirror(device);
    if (state_.load(std::memory_order_acquire) == MemoryState::host) {
        mirror_->upload(data_.get(), bytes());
        state_.store(MemoryState::both, std::memory_order_release);
    }
    return static_cast<const T*>(mirror_->data());
}

template <class T>
T* BasicBlockVector<T>::device_data_read_write(int device)
{
    const T* p = device_data_read(device);
    state_.store(MemoryState::device, std::memory_order_release);
    return const_cast<T*>(p);
}

template <class T>
T* BasicBlockVector<T>::device_data_overwrite(int device)
{
    ensure_mirror(device);
    state_.store(MemoryState::device, std::memory_order_release);
    return static_cast<T*>(mirror_->data());
}

template <class T>
void BasicBlockVector<T>::attach_device_mirror(std::unique_ptr<DeviceMirror> mirror)
{
    TOPOKPM_REQUIRE(mirror != nullptr, "attach_device_mirror: null mirror");
    prepare_host_read();
    mirror_ = std::move(mirror);
    if (!sync_) sync_ = std::make_unique<Sync>();
    state_.store(MemoryState::host, std::memory_order_release);
}

template class BasicBlockVector<complex_double>;
template class BasicBlockVector<complex_single>;

template <class To, class From>
void convert_block_into(const BasicBlockVector<From>& in, BasicBlockVector<To>& out)
{
    TOPOKPM_REQUIRE(in.num_rows() == out.num_rows() && in.num_cols() == out.num_cols(), "convert a ",
                    in.num_rows(), " x ", in.num_cols(), " block into one of ", out.num_rows(), " x ", out.num_cols());
    using To_real = typename To::value_type;
    const From* src = in.data();
    To* dst = out.data();
    const std::int64_t n = static_cast<std::int64_t>(in.size());
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i)
        dst[i] = To(static_cast<To_real>(src[i].real()), static_cast<To_real>(src[i].imag()));
}

template <class To, class From>
BasicBlockVector<To> convert_block(const BasicBlockVector<From>& in)
{
    BasicBlockVector<To> out(in.num_rows(), in.num_cols());
    convert_block_into(in, out);
    return out;
}

template void convert_block_into(const BasicBlockVector<complex_double>&, BasicBlockVector<complex_single>&);
template void convert_block_into(const BasicBlockVector<complex_single>&, BasicBlockVector<complex_double>&);
template void convert_block_into(const BasicBlockVector<complex_double>&, BasicBlockVector<complex_double>&);
template void convert_block_into(const BasicBlockVector<complex_single>&, BasicBlockVector<complex_single>&);
template BasicBlockVector<complex_single> convert_block(const BasicBlockVector<complex_double>&);
template BasicBlockVector<complex_double> convert_block(const BasicBlockVector<complex_single>&);
template BasicBlockVector<complex_double> convert_block(const BasicBlockVector<complex_double>&);
template BasicBlockVector<complex_single> convert_block(const BasicBlockVector<complex_single>&);

}  // namespace topokpm
