// The CUDA table of numerics/sparse_direct/update_kernels.hpp (built when TOPOKPM_HAVE_CUDA):
// the HALO accelerator's Schur update on a GPU. GEMM: cublasZgemm on the worker's stream;
// SCATTER: the plan's blocks and relative indices are staged through a page-locked buffer
// (cudaMemcpyAsync on the same stream) and one kernel applies every block; FILL: a kernel (the
// shadow starts at -0.0, which no byte memset gives). Everything is queued on the stream the
// worker's queue points to; the dataflow runtime waits for it before the task finishes.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "numerics/cuda/cublas_check.hpp"
#include "numerics/sparse_direct/update_kernels.hpp"
#include "runtime/base/error.hpp"
#include "runtime/device/cuda_check.hpp"
#include "topokpm/config.hpp"

static_assert(TOPOKPM_HAVE_CUDA, "numerics/cuda/sparse_update_kernels.cu is only built with the CUDA backend");

namespace topokpm::sparse_direct::cuda {

namespace {

// A ScatterBlock as the kernel reads it (plain types; complex<double> has double2's layout).
struct DeviceBlock {
    double2* base;
    std::int64_t r0, r1, j0, j1;
    std::int64_t row_offset, col_offset;
};
static_assert(sizeof(complex_double) == sizeof(double2), "complex<double> must be two doubles");

constexpr int kScatterThreads = 256;

// Rectangle b of the plan is applied by the CUDA blocks (b, y), y < gridDim.y, striding over
// its entries column by column (consecutive threads: consecutive rows of one work column, so
// the reads of W coalesce; the writes go where the relative indices say). Flat indexing keeps
// the threads busy for short rectangles too (a U-part row group may have 4 rows and 1000
// columns). Distinct (i, j) of one plan address distinct entries (update_kernels.hpp): no
// atomics, and each entry gets the one subtraction the host would do.
__global__ void __launch_bounds__(kScatterThreads)
    scatter_kernel(const DeviceBlock* __restrict__ blocks, const std::int64_t* __restrict__ index,
                   const double2* __restrict__ work, std::int64_t ldw)
{
    const DeviceBlock b = blocks[blockIdx.x];
    const std::int64_t rows = b.r1 - b.r0, count = rows * (b.j1 - b.j0);
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.y) * kScatterThreads;
    for (std::int64_t e = static_cast<std::int64_t>(blockIdx.y) * kScatterThreads + threadIdx.x; e < count;
         e += stride) {
        const std::int64_t jj = e / rows, i = e - jj * rows;
        const double2 s = work[(b.j0 + jj) * ldw + b.r0 + i];
        double2* d = b.base + index[b.col_offset + jj] + index[b.row_offset + i];
        d->x = d->x - s.x;
        d->y = d->y - s.y;
    }
}

__global__ void fill_kernel(double2* __restrict__ dst, std::int64_t count, double2 value)
{
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
        dst[i] = value;
}

using numerics::cuda_support::check_cublas;

cudaStream_t stream_of(void* queue) { return numerics::cuda_support::queue_stream(queue, "update kernel"); }

/// Per worker thread (created on first use there, the worker's device current): the cuBLAS
/// handle, the scratch (work array), the plan's device copy and its page-locked staging buffer.
class Worker {
public:
    ~Worker()
    {
        // At thread exit; errors cannot be reported from here.
        if (staged_) (void)cudaEventDestroy(staged_);
        if (scratch_) (void)cudaFree(scratch_);
        if (plan_) (void)cudaFree(plan_);
        if (host_plan_) (void)cudaFreeHost(host_plan_);
        if (blas_) (void)cublasDestroy(blas_);
    }

    static Worker& on(void* queue)
    {
        thread_local Worker w;
        const cudaStream_t stream = stream_of(queue);
        if (!w.blas_) {
            check_cublas(cublasCreate(&w.blas_), "cublasCreate");
            TOPOKPM_CUDA_CHECK(cudaEventCreateWithFlags(&w.staged_, cudaEventDisableTiming));
        }
        if (w.stream_ != stream) {
            check_cublas(cublasSetStream(w.blas_, stream), "cublasSetStream");
            w.stream_ = stream;
        }
        return w;
    }

    cublasHandle_t blas() const { return blas_; }
    cudaStream_t stream() const { return stream_; }

    template <class T>
    T* scratch(std::size_t count)
    {
        grow(scratch_, scratch_bytes_, std::max<std::size_t>(1, count) * sizeof(T));
        return static_cast<T*>(scratch_);
    }

    /// Copies the parts, back to back, to the plan's device buffer (queued on the stream).
    void* stage_plan(const std::vector<std::pair<const void*, std::size_t>>& parts)
    {
        std::size_t bytes = 0;
        for (const auto& p : parts) bytes += p.second;
        // The previous plan's upload must be done before its staging buffer is overwritten.
        TOPOKPM_CUDA_CHECK(cudaEventSynchronize(staged_));
        if (bytes > host_plan_bytes_) {
            if (host_plan_) TOPOKPM_CUDA_CHECK(cudaFreeHost(host_plan_));
            host_plan_ = nullptr;
            host_plan_bytes_ = 0;
            TOPOKPM_CUDA_CHECK(cudaMallocHost(&host_plan_, 2 * bytes));
            host_plan_bytes_ = 2 * bytes;
        }
        grow(plan_, plan_bytes_, bytes);
        std::size_t at = 0;
        for (const auto& p : parts) {
            std::memcpy(static_cast<char*>(host_plan_) + at, p.first, p.second);
            at += p.second;
        }
        TOPOKPM_CUDA_CHECK(cudaMemcpyAsync(plan_, host_plan_, bytes, cudaMemcpyHostToDevice, stream_));
        TOPOKPM_CUDA_CHECK(cudaEventRecord(staged_, stream_));
        return plan_;
    }

private:
    // A device buffer of >= bytes; the old one may still be read by queued work: wait first.
    void grow(void*& buffer, std::size_t& have, std::size_t bytes)
    {
        if (bytes <= have) return;
        const std::size_t size = std::max(bytes, have + have / 2);
        TOPOKPM_CUDA_CHECK(cudaStreamSynchronize(stream_));
        if (buffer) TOPOKPM_CUDA_CHECK(cudaFree(buffer));
        buffer = nullptr;
        have = 0;
        TOPOKPM_CUDA_CHECK(cudaMalloc(&buffer, size));
        have = size;
    }

    cublasHandle_t blas_ = nullptr;
    cudaStream_t stream_ = nullptr;
    cudaEvent_t staged_ = nullptr;
    void* scratch_ = nullptr;
    std::size_t scratch_bytes_ = 0;
    void* plan_ = nullptr;
    std::size_t plan_bytes_ = 0;
    void* host_plan_ = nullptr;
    std::size_t host_plan_bytes_ = 0;
};

void gemm(void* queue, int m, int w, int nc, const complex_double* l, int ldl, const complex_double* u, int ldu,
          complex_double* work, int ldw)
{
    if (m == 0 || w == 0) return;
    Worker& worker = Worker::on(queue);
    const cuDoubleComplex one = make_cuDoubleComplex(1.0, 0.0), zero = make_cuDoubleComplex(0.0, 0.0);
    check_cublas(cublasZgemm(worker.blas(), CUBLAS_OP_N, CUBLAS_OP_N, m, w, nc, &one,
                           reinterpret_cast<const cuDoubleComplex*>(l), ldl, reinterpret_cast<const cuDoubleComplex*>(u),
                           ldu, &zero, reinterpret_cast<cuDoubleComplex*>(work), ldw),
               "cublasZgemm");
}

void scatter(void* queue, const ScatterPlan& plan, const complex_double* work, int ldw)
{
    if (plan.blocks.empty()) return;
    Worker& worker = Worker::on(queue);
    std::vector<DeviceBlock> blocks(plan.blocks.size());
    std::int64_t largest = 1;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const ScatterBlock& s = plan.blocks[b];
        blocks[b] = {reinterpret_cast<double2*>(s.base), s.r0, s.r1, s.j0, s.j1, s.row_offset, s.col_offset};
        largest = std::max<std::int64_t>(largest, (s.r1 - s.r0) * (s.j1 - s.j0));
    }
    const std::size_t block_bytes = blocks.size() * sizeof(DeviceBlock);
    void* device_plan = worker.stage_plan({{blocks.data(), block_bytes},
                                           {plan.index.data(), plan.index.size() * sizeof(std::int64_t)}});
    const auto* device_blocks = static_cast<const DeviceBlock*>(device_plan);
    // DeviceBlock is 56 bytes, a multiple of 8: the indices that follow are aligned.
    const auto* device_index =
        reinterpret_cast<const std::int64_t*>(static_cast<const char*>(device_plan) + block_bytes);
    TOPOKPM_REQUIRE(blocks.size() <= 0x7fffffffu, "scatter plan of ", blocks.size(), " blocks");
    // Enough CUDA blocks for the largest rectangle, about 8192 in all (H100: 132 SMs x 8 blocks
    // of 256 threads resident, several waves); a smaller rectangle's extra blocks exit at once.
    const std::int64_t needed = (largest + kScatterThreads - 1) / kScatterThreads;
    const std::int64_t share = std::max<std::int64_t>(1, 8192 / static_cast<std::int64_t>(blocks.size()));
    const dim3 grid(static_cast<unsigned>(blocks.size()),
                    static_cast<unsigned>(std::min<std::int64_t>({needed, share, 65535})));
    scatter_kernel<<<grid, kScatterThreads, 0, worker.stream()>>>(
        device_blocks, device_index, reinterpret_cast<const double2*>(work), ldw);
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
}

void fill(void* queue, complex_double* dst, std::size_t count, complex_double value)
{
    if (count == 0) return;
    Worker& worker = Worker::on(queue);
    const int threads = 256;
    const std::size_t blocks = std::min<std::size_t>((count + threads - 1) / threads, 4096);
    fill_kernel<<<static_cast<unsigned>(blocks), threads, 0, worker.stream()>>>(
        reinterpret_cast<double2*>(dst), static_cast<std::int64_t>(count), make_double2(value.real(), value.imag()));
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
}

complex_double* scratch(void* queue, std::size_t count) { return Worker::on(queue).scratch<complex_double>(count); }

void synchronize(void* queue) { TOPOKPM_CUDA_CHECK(cudaStreamSynchronize(stream_of(queue))); }

}  // namespace

const UpdateKernels& update_kernels()
{
    static const UpdateKernels table{gemm, scatter, fill, scratch, synchronize, true};
    return table;
}

}  // namespace topokpm::sparse_direct::cuda
