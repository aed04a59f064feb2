#pragma once
/// @file device.hpp
/// The CUDA runtime behind a small plain-C++ interface, so that numerics/base and the
/// algorithms never include a CUDA header: device discovery, properties, free memory,
/// an RAII device allocation (DeviceBuffer) and blocking copies.
///
/// Two implementations: device_cuda.cpp (built when CMake found nvcc, TOPOKPM_HAVE_CUDA = 1)
/// and device_stub.cpp (CPU-only builds). In the stub build the queries report "no device"
/// with a reason and everything that would touch a device throws NotCompiled("cuda", ...).
/// A CUDA build on a machine without a GPU (CI) compiles and links the real implementation;
/// visible_device_count() then returns 0 and names the runtime's error.

#include <cstddef>
#include <string>

#include "runtime/base/error.hpp"

namespace topokpm {

/// A failed CUDA runtime call: the message names the call, the error code and its text.
class CudaError : public Error {
public:
    using Error::Error;
};

}  // namespace topokpm

namespace topokpm::device {

/// True when this build contains the CUDA backend (independent of any GPU being present).
bool cuda_compiled();

/// The device index of the host stand-in: "device memory" that is a separate host
/// allocation reached only through explicit copies, as a GPU's is. The device code paths
/// that do not need CUDA kernels (BlockVector's mirror, the distributed operator's halo
/// packed on the device and staged through host buffers, numerics/distributed/halo_device.hpp)
/// run on it in every build, so tests check them on machines without a GPU. Never a CUDA
/// device: no function of this header accepts it.
inline constexpr int host_standin = -2;
/// The "device" of blocks that live in host memory only (a CPU operator's, a CPU rank's).
inline constexpr int no_device = -1;

/// The CUDA device of MPI rank `node_rank` (its index among the ranks of its node) when
/// `visible` devices are visible: one rank per GPU, rank k drives device k; -1 (the rank
/// runs on the CPU) when k >= visible. docs/cuda_backend.md, "GPU ranks under mpirun".
inline int rank_device(int node_rank, int visible) { return node_rank < visible ? node_rank : -1; }

/// Number of CUDA devices this process can use; 0 when none. When 0 and `why_none` is not
/// null, it receives a one-line reason, e.g. "cudaGetDeviceCount returned 35
/// (CUDA driver version is insufficient for CUDA runtime version)" or "this build has no
/// CUDA kernels (configured with TOPOKPM_CUDA=OFF or no nvcc found)". Never throws.
int visible_device_count(std::string* why_none = nullptr);

/// Static facts about one device (cudaGetDeviceProperties).
struct DeviceProperties {
    int id = 0;
    std::string name;                    ///< e.g. "NVIDIA H100 80GB HBM3"
    int compute_major = 0, compute_minor = 0;
    int multiprocessors = 0;
    std::size_t global_memory_bytes = 0;
    std::size_t l2_cache_bytes = 0;
    double peak_bandwidth_gb_s = 0.0;    ///< 2 x memory clock x bus width (datasheet-style)
};

/// Properties of device `device` (0 <= device < visible_device_count()).
/// Throws InputError for a bad index, NotCompiled in CPU-only builds.
DeviceProperties device_properties(int device);

/// One line for logs and /provenance, e.g. "cuda:0 NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.2 GiB)".
std::string describe(int device);

/// Free and total memory of a device, bytes (cudaMemGetInfo).
struct MemoryInfo {
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
};
MemoryInfo memory_info(int device);

/// Throws ResourceError "<what> needs X GiB on cuda:D, the device has Y GiB free (of Z GiB)"
/// when `bytes` exceeds the device's free memory. Called before every large allocation.
void require_device_memory(double bytes, int device, const std::string& what);

/// Makes `device` current for the calling host thread (cudaSetDevice). InputError (with the
/// runtime's reason) when `device` is not a visible device.
void set_device(int device);

/// Waits for all work on the current device (cudaDeviceSynchronize); throws CudaError with
/// the first asynchronous error (e.g. a kernel fault) if there was one.
void synchronize();

/// An RAII allocation of device memory (cudaMalloc / cudaFree), move-only. The size is
/// checked against the device's free memory first (ResourceError, not a CUDA error).
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    /// @param bytes   size of the allocation (0 gives an empty buffer)
    /// @param device  device index
    /// @param what    what the memory is for, used in the ResourceError message
    DeviceBuffer(std::size_t bytes, int device, const std::string& what = "device buffer");
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& other) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void* data() const { return data_; }
    std::size_t bytes() const { return bytes_; }
    int device() const { return device_; }

    /// Blocking copies between host memory and [offset, offset + bytes) of this buffer.
    void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
    void download(void* host, std::size_t bytes, std::size_t offset = 0) const;
    /// Sets every byte to zero (cudaMemset; blocking).
    void zero();

private:
    void release() noexcept;
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
    int device_ = 0;
};

/// Page-locked host memory (cudaMallocHost / cudaFreeHost), move-only: staging buffers
/// the GPU copies to and from at full PCIe/NVLink rate (and that MPI sends from).
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    /// Throws NotCompiled in CPU-only builds (for bytes > 0), CudaError when the runtime fails.
    explicit PinnedBuffer(std::size_t bytes);
    ~PinnedBuffer();
    PinnedBuffer(PinnedBuffer&& other) noexcept;
    PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;

    void* data() const { return data_; }
    std::size_t bytes() const { return bytes_; }

private:
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
};

/// Blocking copy of `bytes` between two device pointers of the current device.
void copy_device_to_device(void* dst, const void* src, std::size_t bytes);

}  // namespace topokpm::device
