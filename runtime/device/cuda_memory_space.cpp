// The CUDA implementation of cuda_memory_space.hpp (built when TOPOKPM_HAVE_CUDA).
#include "runtime/device/cuda_memory_space.hpp"

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/base/error.hpp"
#include "runtime/device/cuda_check.hpp"
#include "runtime/device/device.hpp"
#include "topokpm/config.hpp"

static_assert(TOPOKPM_HAVE_CUDA, "cuda_memory_space.cpp is only built with the CUDA backend");

namespace topokpm::device {

namespace {

/// What a worker's queue points to: its stream (first member: the queue is also a
/// cudaStream_t*, standard layout) and the event complete() waits on.
struct Queue {
    cudaStream_t stream = nullptr;
    cudaEvent_t done = nullptr;
};

class CudaMemorySpace final : public tasks::MemorySpace {
public:
    explicit CudaMemorySpace(int gpu) : gpu_(gpu)
    {
        std::string why;
        const int count = visible_device_count(&why);
        if (gpu < 0 || gpu >= count)
            throw ResourceError(detail::concat("a cuda device worker needs CUDA device ", gpu, ", but ",
                                               count == 0 ? "no CUDA device is visible (" + why + ")"
                                                          : detail::concat("only devices 0 .. ", count - 1,
                                                                           " are visible")));
        TOPOKPM_CUDA_CHECK(cudaSetDevice(gpu_));
        TOPOKPM_CUDA_CHECK(cudaStreamCreateWithFlags(&transfer_, cudaStreamNonBlocking));
    }

    ~CudaMemorySpace() override
    {
        // Errors cannot leave a destructor; the process is past using these buffers.
        (void)cudaSetDevice(gpu_);
        // The workers' streams go last: a worker thread's library handles (numerics/cuda)
        // are destroyed at its exit and must not outlive the stream they are bound to.
        for (Queue* q : queues_) {
            (void)cudaEventDestroy(q->done);
            (void)cudaStreamDestroy(q->stream);
            delete q;
        }
        for (auto& entry : pool_)
            for (void* p : entry.second) (void)cudaFree(p);
        (void)cudaStreamDestroy(transfer_);
    }

    void* allocate(std::size_t bytes) override
    {
        if (bytes == 0) bytes = 1;
        {
            std::lock_guard<std::mutex> lock(pool_mutex_);
            auto it = pool_.find(bytes);
            if (it != pool_.end() && !it->second.empty()) {
                void* p = it->second.back();
                it->second.pop_back();
                sizes_[p] = bytes;
                return p;
            }
        }
        TOPOKPM_CUDA_CHECK(cudaSetDevice(gpu_));
        void* p = nullptr;
        const cudaError_t status = cudaMalloc(&p, bytes);
        if (status != cudaSuccess) {
            (void)cudaGetLastError();
            const MemoryInfo m = memory_info(gpu_);
            throw ResourceError(detail::concat("cuda device ", gpu_, ": cannot allocate a ", bytes,
                                               "-byte tile buffer (", cudaGetErrorString(status), "; ", m.free_bytes,
                                               " of ", m.total_bytes, " bytes free); use a smaller matrix or tile"));
        }
        std::lock_guard<std::mutex> lock(pool_mutex_);
        sizes_[p] = bytes;
        return p;
    }

    void release(void* pointer) override
    {
        // Only called once no task uses the buffer any more (the runtime's visit counts).
        std::lock_guard<std::mutex> lock(pool_mutex_);
        auto it = sizes_.find(pointer);
        TOPOKPM_REQUIRE(it != sizes_.end(), "release of a pointer this cuda space did not allocate");
        pool_[it->second].push_back(pointer);
        sizes_.erase(it);
    }

    void copy_from_host(void* dst, const void* src, std::size_t bytes) override
    {
        std::lock_guard<std::mutex> lock(transfer_mutex_);
        TOPOKPM_CUDA_CHECK(cudaSetDevice(gpu_));
        TOPOKPM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, transfer_));
        TOPOKPM_CUDA_CHECK(cudaStreamSynchronize(transfer_));
    }

    void copy_to_host(void* dst, const void* src, std::size_t bytes) override
    {
        // The producing task's work is complete (complete() ran before it finished), so
        // the transfer stream need not wait for any worker stream.
        std::lock_guard<std::mutex> lock(transfer_mutex_);
        TOPOKPM_CUDA_CHECK(cudaSetDevice(gpu_));
        TOPOKPM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, transfer_));
        TOPOKPM_CUDA_CHECK(cudaStreamSynchronize(transfer_));
    }

    void* attach_worker() override
    {
        TOPOKPM_CUDA_CHECK(cudaSetDevice(gpu_));
        auto* q = new Queue;
        try {
            TOPOKPM_CUDA_CHECK(cudaStreamCreateWithFlags(&q->stream, cudaStreamNonBlocking));
            TOPOKPM_CUDA_CHECK(cudaEventCreateWithFlags(&q->done, cudaEventDisableTiming | cudaEventBlockingSync));
        } catch (...) {
            if (q->stream) (void)cudaStreamDestroy(q->stream);
            delete q;
            throw;
        }
        std::lock_guard<std::mutex> lock(pool_mutex_);
        queues_.push_back(q);
        return q;
    }

    void detach_worker(void* queue) override
    {
        // Drained only: the stream is destroyed with the space (see the destructor).
        if (queue != nullptr) (void)cudaStreamSynchronize(static_cast<Queue*>(queue)->stream);
    }

    void copy_from_host_async(void* dst, const void* src, std::size_t bytes, void* queue) override
    {
        auto* q = static_cast<Queue*>(queue);
        TOPOKPM_REQUIRE(q != nullptr, "cuda staging copy without the worker's queue");
        TOPOKPM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, q->stream));
    }

    void complete(void* queue) override
    {
        auto* q = static_cast<Queue*>(queue);
        if (q == nullptr) return;
        TOPOKPM_CUDA_CHECK(cudaEventRecord(q->done, q->stream));
        TOPOKPM_CUDA_CHECK(cudaEventSynchronize(q->done));
        TOPOKPM_CUDA_CHECK(cudaGetLastError());
    }

private:
    int gpu_;
    cudaStream_t transfer_ = nullptr;
    std::mutex transfer_mutex_;
    std::mutex pool_mutex_;
    std::map<std::size_t, std::vector<void*>> pool_;  ///< released buffers by size
    std::map<void*, std::size_t> sizes_;               ///< buffers in use
    std::vector<Queue*> queues_;                       ///< the workers' streams and events
};

}  // namespace

std::unique_ptr<tasks::MemorySpace> make_cuda_memory_space(int gpu) { return std::make_unique<CudaMemorySpace>(gpu); }

}  // namespace topokpm::device
