// The CUDA runtime implementation of device.hpp (built when TOPOKPM_HAVE_CUDA).
#include <cuda_runtime.h>

#include <cstdio>
#include <utility>

#include "runtime/device/cuda_check.hpp"
#include "runtime/device/device.hpp"
#include "topokpm/config.hpp"

static_assert(TOPOKPM_HAVE_CUDA, "device_cuda.cpp is only built with the CUDA backend");

namespace topokpm::device {

namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;

std::string format_gib(double bytes)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", bytes / gib);
    return buf;
}

void check_index(int device)
{
    std::string why;
    const int count = visible_device_count(&why);
    TOPOKPM_USER_REQUIRE(device >= 0 && device < count, "CUDA device ", device, " requested, but ",
                         count == 0 ? "no CUDA device is visible (" + why + ")"
                                    : detail::concat("only devices 0 .. ", count - 1, " are visible"));
}

}  // namespace

bool cuda_compiled() { return true; }

int visible_device_count(std::string* why_none)
{
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        // Clear the sticky "last error" so later, unrelated checks do not report it.
        (void)cudaGetLastError();
        if (why_none)
            *why_none = detail::concat("cudaGetDeviceCount returned ", static_cast<int>(status), " (",
                                       cudaGetErrorString(status), ")");
        return 0;
    }
    if (count == 0 && why_none) *why_none = "cudaGetDeviceCount returned 0 devices";
    return count;
}

DeviceProperties device_properties(int device)
{
    check_index(device);
    cudaDeviceProp p{};
    TOPOKPM_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    DeviceProperties out;
    out.id = device;
    out.name = p.name;
    out.compute_major = p.major;
    out.compute_minor = p.minor;
    out.multiprocessors = p.multiProcessorCount;
    out.global_memory_bytes = p.totalGlobalMem;
    out.l2_cache_bytes = static_cast<std::size_t>(p.l2CacheSize);
    // CUDA 13 dropped memoryClockRate from cudaDeviceProp; the attribute still exists.
    int clock_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess)
        out.peak_bandwidth_gb_s = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) * 1e-9;
    else
        (void)cudaGetLastError();
    return out;
}

std::string describe(int device)
{
    const DeviceProperties p = device_properties(device);
    return detail::concat("cuda:", device, " ", p.name, " (sm_", p.compute_major, p.compute_minor, ", ",
                          p.multiprocessors, " SMs, ", format_gib(static_cast<double>(p.global_memory_bytes)),
                          " GiB)");
}

MemoryInfo memory_info(int device)
{
    set_device(device);
    MemoryInfo m;
    TOPOKPM_CUDA_CHECK(cudaMemGetInfo(&m.free_bytes, &m.total_bytes));
    return m;
}

void require_device_memory(double bytes, int device, const std::string& what)
{
    const MemoryInfo m = memory_info(device);
    if (bytes > static_cast<double>(m.free_bytes))
        throw ResourceError(detail::concat(what, " needs ", format_gib(bytes), " GiB on cuda:", device,
                                           ", the device has ", format_gib(static_cast<double>(m.free_bytes)),
                                           " GiB free (of ", format_gib(static_cast<double>(m.total_bytes)),
                                           " GiB); use a smaller lattice or fewer {vectors}"));
}

void set_device(int device)
{
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) {  // no usable device at all: say so plainly
        (void)cudaGetLastError();
        check_index(device);
        TOPOKPM_CUDA_CHECK(cudaGetDevice(&current));
    }
    if (current != device) {
        check_index(device);
        TOPOKPM_CUDA_CHECK(cudaSetDevice(device));
    }
}

void synchronize()
{
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
    TOPOKPM_CUDA_CHECK(cudaDeviceSynchronize());
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, int device, const std::string& what) : bytes_(bytes), device_(device)
{
    if (bytes == 0) return;
    require_device_memory(static_cast<double>(bytes), device, what);
    TOPOKPM_CUDA_CHECK(cudaMalloc(&data_, bytes));
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)), device_(other.device_)
{}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept
{
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
        device_ = other.device_;
    }
    return *this;
}

void DeviceBuffer::release() noexcept
{
    if (data_) {
        // cudaFree on the owning device; errors here cannot be reported from a destructor.
        int current = -1;
        if (cudaGetDevice(&current) == cudaSuccess && current != device_) (void)cudaSetDevice(device_);
        (void)cudaFree(data_);
        if (current >= 0 && current != device_) (void)cudaSetDevice(current);
        data_ = nullptr;
    }
    bytes_ = 0;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset)
{
    TOPOKPM_REQUIRE(offset + bytes <= bytes_, "upload of ", bytes, " bytes at ", offset, " into a ", bytes_,
                    "-byte device buffer");
    if (bytes == 0) return;
    TOPOKPM_CUDA_CHECK(cudaMemcpy(static_cast<char*>(data_) + offset, host, bytes, cudaMemcpyHostToDevice));
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const
{
    TOPOKPM_REQUIRE(offset + bytes <= bytes_, "download of ", bytes, " bytes at ", offset, " from a ", bytes_,
                    "-byte device buffer");
    if (bytes == 0) return;
    TOPOKPM_CUDA_CHECK(cudaMemcpy(host, static_cast<const char*>(data_) + offset, bytes, cudaMemcpyDeviceToHost));
}

void DeviceBuffer::zero()
{
    if (bytes_ == 0) return;
    TOPOKPM_CUDA_CHECK(cudaMemset(data_, 0, bytes_));
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) : bytes_(bytes)
{
    if (bytes != 0) TOPOKPM_CUDA_CHECK(cudaMallocHost(&data_, bytes));
}

PinnedBuffer::~PinnedBuffer()
{
    if (data_) (void)cudaFreeHost(data_);  // errors cannot be reported from a destructor
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0))
{}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept
{
    if (this != &other) {
        if (data_) (void)cudaFreeHost(data_);
        data_ = std::exchange(other.data_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

void copy_device_to_device(void* dst, const void* src, std::size_t bytes)
{
    if (bytes == 0) return;
    TOPOKPM_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}

}  // namespace topokpm::device
