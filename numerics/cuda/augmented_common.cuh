#pragma once
// Device code shared by the SELL and stencil augmented kernels: the thread mapping, the
// row update y = scale (acc - shift x) + beta y, and the on-the-fly dot reduction.
//
// Thread mapping (seed 004, Fig. 6): a block of 256 threads works on a "tile" of 256 / W
// rows; thread t owns column c = t % W of row t / W. With W in {1, ..., 32} dividing the
// warp size, one warp covers 32 / W whole rows: at W = 32 a warp is one row and its loads
// of x are 32 consecutive 16-byte values (512 B, perfectly coalesced) while the matrix entry
// is one broadcast; at W = 1 a warp is 32 rows = one SELL-32 chunk and the matrix loads are
// coalesced instead. Blocks loop over the tiles grid-stride (the grid is sized to fill the
// GPU once), so the per-block dot partials stay few and their count does not grow with N.
//
// Dots: threads of one column sit at lane distance W, so xor-shuffles with offsets
// 16, 8, ..., W reduce a warp per column; warps are combined in shared memory in fixed
// order; the block writes one partial per column and quantity. A second kernel
// (reduce_partials, CUB BlockReduce) sums the partials in fixed order: no atomics, the same
// bits on every run.

#include <cuda_runtime.h>

#include <cstdint>

namespace topokpm::numerics::kernels::cuda::detail {

constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;

/// scale, shift, beta of the sweep and the column window of this launch (strip-mining).
struct SweepScalars {
    double scale;
    double shift;
    double beta;
    int ld;  ///< R, the row stride of x and y in complex values
    int c0;  ///< first column of this strip
    int tile_group;  ///< consecutive tiles per block visit (for_each_tile)
};

/// Calls f(tile) for the tiles of this block: groups of `group` consecutive tiles, the groups
/// dealt out grid-stride. Two localities compete:
/// * L2: x rows one step away along x are N_y N_z B rows apart (8 MB at R = 32 for ti
///   200x200x40); they are re-used from L2 only if all blocks advance through the rows
///   together (grid-stride). Contiguous row ranges per block read x ~2.5 times from DRAM
///   (Nsight Compute) and were 1.3-1.5x slower at R = 32.
/// * L1: the other orbitals of a site and the neighbours along z sit in the next tiles, which
///   a block running consecutive tiles finds in its L1.
/// The measured best is group = 1 (sweep_driver.cuh, tile_group()).
template <class F>
__device__ __forceinline__ void for_each_tile(int num_tiles, int group, F&& f)
{
    for (long long first = static_cast<long long>(blockIdx.x) * group; first < num_tiles;
         first += static_cast<long long>(gridDim.x) * group) {
        const int last = static_cast<int>(min(static_cast<long long>(num_tiles), first + group));
        for (int tile = static_cast<int>(first); tile < last; ++tile) f(tile);
    }
}

/// Per-thread running dot sums (registers).
struct DotAccumulator {
    double xx = 0.0, yx_re = 0.0, yx_im = 0.0;
};

/// Finishes one (row, column) element: y = scale (acc - shift x) + beta y, and adds the
/// element's share of <x|x> and <y|x>. `xi` is x at the element, `index` its offset.
template <bool Dots>
__device__ __forceinline__ void finish_element(double acc_re, double acc_im, double2 xi, std::int64_t index,
                                               double2* __restrict__ y, const SweepScalars& s,
                                               DotAccumulator& dots)
{
    double yr = s.scale * (acc_re - s.shift * xi.x);
    double yi = s.scale * (acc_im - s.shift * xi.y);
    // beta == 0: y may hold anything (even NaN); never read it. The branch is uniform.
    if (s.beta != 0.0) {
        const double2 old = y[index];
        yr += s.beta * old.x;
        yi += s.beta * old.y;
    }
    y[index] = make_double2(yr, yi);
    if (Dots) {
        dots.xx += xi.x * xi.x + xi.y * xi.y;
        dots.yx_re += yr * xi.x + yi * xi.y;  // Re conj(y) x
        dots.yx_im += yr * xi.y - yi * xi.x;  // Im conj(y) x
    }
}

/// acc += v * xv for complex numbers in (re, im) doubles.
__device__ __forceinline__ void complex_fma(double2 v, double2 xv, double& acc_re, double& acc_im)
{
    acc_re = fma(v.x, xv.x, acc_re);
    acc_re = fma(-v.y, xv.y, acc_re);
    acc_im = fma(v.x, xv.y, acc_im);
    acc_im = fma(v.y, xv.x, acc_im);
}

/// Block-level reduction of the three dot quantities per column; writes
/// partials[(q * gridDim.x + blockIdx.x) * W + c] for q = xx, Re yx, Im yx. All threads of
/// the block must call it.
template <int W>
__device__ __forceinline__ void reduce_dots_to_partials(DotAccumulator d, double* __restrict__ partials)
{
    static_assert(W >= 1 && W <= 32 && (32 % W) == 0, "W must divide the warp size");
#pragma unroll
    for (int offset = 16; offset >= W; offset >>= 1) {
        d.xx += __shfl_xor_sync(0xffffffffu, d.xx, offset);
        d.yx_re += __shfl_xor_sync(0xffffffffu, d.yx_re, offset);
        d.yx_im += __shfl_xor_sync(0xffffffffu, d.yx_im, offset);
    }
    __shared__ double shared[3][warps_per_block][W];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane < W) {
        shared[0][warp][lane] = d.xx;
        shared[1][warp][lane] = d.yx_re;
        shared[2][warp][lane] = d.yx_im;
    }
    __syncthreads();
    if (threadIdx.x < 3 * W) {
        const int q = threadIdx.x / W, c = threadIdx.x % W;
        double sum = 0.0;
#pragma unroll
        for (int w = 0; w < warps_per_block; ++w) sum += shared[q][w][c];
        partials[(static_cast<std::int64_t>(q) * gridDim.x + blockIdx.x) * W + c] = sum;
    }
}

}  // namespace topokpm::numerics::kernels::cuda::detail
