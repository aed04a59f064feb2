#pragma once
/// @file cuda_runtime.h
/// A host emulation of the CUDA device constructs the augmented kernels use, so that their
/// source (numerics/cuda/*.cuh) runs in a test on any machine: put this directory first on
/// the include path and call emulate_launch(). One thread block at a time, its threads as
/// host threads: __syncthreads is a barrier of the block, __shfl_xor_sync exchanges through
/// a barrier of the warp, __shared__ arrays are function statics (shared by the block being
/// run), the dynamic shared memory is a buffer of the launch. What it checks is the kernels'
/// logic: indexing, masks, the thread mapping, reductions and which elements are written.
/// Not their speed, and not the GPU's rounding: the host compiler decides the contractions
/// (a * b + c fused or not), so results are compared with tolerances derived for that, or
/// kernel against kernel.

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#define TOPOKPM_CUDA_EMULATION 1
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)

struct float2 {
    float x, y;
};
struct double2 {
    double x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(16) int4 {
    int x, y, z, w;
};
inline float2 make_float2(float a, float b) { return {a, b}; }
inline double2 make_double2(double a, double b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline float __double2float_rn(double d) { return static_cast<float>(d); }  // the host rounds to nearest
template <class T>
inline T __ldg(const T* p)
{
    return *p;
}
using std::max;
using std::min;

struct EmulatedDim3 {
    unsigned x = 0, y = 0, z = 0;
};
inline thread_local EmulatedDim3 threadIdx, blockIdx, gridDim, blockDim;

namespace topokpm::testing::cuda_emulation {

/// A reusable barrier of n threads (C++17 has no std::barrier).
class Barrier {
public:
    explicit Barrier(int n) : n_(n) {}
    void wait()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        const long generation = generation_;
        if (++arrived_ == n_) {
            arrived_ = 0;
            ++generation_;
            cv_.notify_all();
        } else {
            cv_.wait(lock, [&] { return generation_ != generation; });
        }
    }

private:
    const int n_;
    int arrived_ = 0;
    long generation_ = 0;
    std::mutex mutex_;
    std::condition_variable cv_;
};

/// The block being run: its barrier, its warps' barriers and shuffle slots, the dynamic
/// shared memory.
struct BlockState {
    Barrier* block = nullptr;
    std::vector<std::unique_ptr<Barrier>> warps;
    std::vector<double> slots;  // 32 per warp
    unsigned char* dynamic_shared = nullptr;
};
inline BlockState state;

/// The threads of one emulated block, started once per block size and kept: a launch hands
/// them the block's work and waits (creating 256 threads per block cost most of the time).
class ThreadTeam {
public:
    explicit ThreadTeam(int n) : n_(n), start_(n + 1), done_(n + 1)
    {
        for (int t = 0; t < n; ++t)
            threads_.emplace_back([this, t] {
                while (true) {
                    start_.wait();
                    if (quit_) return;
                    work_(t);
                    done_.wait();
                }
            });
    }
    ~ThreadTeam()
    {
        quit_ = true;
        start_.wait();
        for (auto& thread : threads_) thread.join();
    }
    /// Runs work(t) on thread t of the team, for every t, and returns when all are done.
    template <class Work>
    void run(Work&& work)
    {
        work_ = std::forward<Work>(work);
        start_.wait();
        done_.wait();
    }
    int size() const { return n_; }

private:
    const int n_;
    Barrier start_, done_;
    std::vector<std::thread> threads_;
    std::function<void(int)> work_;
    bool quit_ = false;  // written before start_.wait(), read after it
};

inline ThreadTeam& team(int n)
{
    static std::vector<std::unique_ptr<ThreadTeam>> teams;
    for (auto& t : teams)
        if (t->size() == n) return *t;
    teams.emplace_back(new ThreadTeam(n));
    return *teams.back();
}

/// Runs kernel(args...) on `grid` blocks of `block_threads` threads (a multiple of 32), one
/// block after the other, with `shared_bytes` of dynamic shared memory. Not reentrant.
template <class Kernel, class... Args>
void emulate_launch(Kernel kernel, int grid, int block_threads, std::size_t shared_bytes, Args... args)
{
    std::vector<std::max_align_t> shared(shared_bytes / sizeof(std::max_align_t) + 1);
    const int warps = block_threads / 32;
    Barrier block(block_threads);
    state.block = &block;
    state.warps.clear();
    for (int w = 0; w < warps; ++w) state.warps.emplace_back(new Barrier(32));
    state.slots.assign(static_cast<std::size_t>(warps) * 32, 0.0);
    state.dynamic_shared = reinterpret_cast<unsigned char*>(shared.data());
    ThreadTeam& threads = team(block_threads);
    for (int b = 0; b < grid; ++b)
        threads.run([&](int t) {
            threadIdx.x = static_cast<unsigned>(t);
            blockIdx.x = static_cast<unsigned>(b);
            gridDim.x = static_cast<unsigned>(grid);
            blockDim.x = static_cast<unsigned>(block_threads);
            kernel(args...);
        });
}

}  // namespace topokpm::testing::cuda_emulation

inline void __syncthreads() { topokpm::testing::cuda_emulation::state.block->wait(); }

/// Every lane of the warp must call it (the kernels' reductions do).
inline double __shfl_xor_sync(unsigned /*mask*/, double value, int offset)
{
    auto& s = topokpm::testing::cuda_emulation::state;
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    s.slots[warp * 32 + lane] = value;
    s.warps[warp]->wait();
    const double other = s.slots[warp * 32 + (lane ^ static_cast<unsigned>(offset))];
    s.warps[warp]->wait();
    return other;
}

namespace topokpm::numerics::kernels::cuda::detail {
inline unsigned char* dynamic_shared_memory() { return topokpm::testing::cuda_emulation::state.dynamic_shared; }
}  // namespace topokpm::numerics::kernels::cuda::detail
