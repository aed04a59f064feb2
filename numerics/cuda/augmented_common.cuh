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
//
// Precision: every kernel is a template on the complex value of the device blocks, V2 =
// double2 (double) or float2 (`--precision single`, numerics/spmmv/sell_kernels.hpp). In
// single, a row's sum over its entries is float (Lanes<float2>::real), the epilogue and the
// dots are double: the stored floats are widened, y is rounded once to float, and the dots
// are formed from the float y as stored. In double every conversion is the identity and the
// code is the double kernel's, operation for operation.

#include <cuda_runtime.h>

#include <complex>
#include <cstdint>

namespace topokpm::numerics::kernels::cuda::detail {

/// The device type of a host complex value: complex double -> double2, complex float -> float2.
template <class T>
struct DeviceComplex;
template <>
struct DeviceComplex<std::complex<double>> {
    using type = double2;
};
template <>
struct DeviceComplex<std::complex<float>> {
    using type = float2;
};
static_assert(sizeof(double2) == sizeof(std::complex<double>) && sizeof(float2) == sizeof(std::complex<float>),
              "device and host complex values differ in size: blocks are reinterpreted between them");

/// Per device complex type: the real type of a row's sum, and the one rounding of the
/// double epilogue's result into storage (round to nearest; the identity in double).
template <class V2>
struct Lanes;
template <>
struct Lanes<double2> {
    using real = double;
    __device__ __forceinline__ static double2 make(double re, double im) { return make_double2(re, im); }
};
template <>
struct Lanes<float2> {
    using real = float;
    __device__ __forceinline__ static float2 make(double re, double im)
    {
        return make_float2(__double2float_rn(re), __double2float_rn(im));
    }
};

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

/// Finishes one (row, column) element in double: y = scale (acc - shift x) + beta y, rounded
/// once to V2, and adds the element's share of <x|x> and <y|x> (from the stored y). `xi` is x
/// at the element, `index` its offset; `shift` is the sweep's (s.shift), or s.shift - V where
/// the single stencil kernels leave the potential V to the epilogue.
template <bool Dots, class V2>
__device__ __forceinline__ void finish_element(double acc_re, double acc_im, V2 xi, double shift, std::int64_t index,
                                               V2* __restrict__ y, const SweepScalars& s, DotAccumulator& dots)
{
    const double xr = xi.x, xim = xi.y;
    double yr = s.scale * (acc_re - shift * xr);
    double yi = s.scale * (acc_im - shift * xim);
    // beta == 0: y may hold anything (even NaN); never read it. The branch is uniform.
    if (s.beta != 0.0) {
        const V2 old = y[index];
        yr += s.beta * static_cast<double>(old.x);
        yi += s.beta * static_cast<double>(old.y);
    }
    const V2 out = Lanes<V2>::make(yr, yi);
    y[index] = out;
    if (Dots) {
        const double or_ = out.x, oi = out.y;  // = yr, yi in double
        dots.xx += xr * xr + xim * xim;
        dots.yx_re += or_ * xr + oi * xim;  // Re conj(y) x
        dots.yx_im += or_ * xim - oi * xr;  // Im conj(y) x
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

/// The same in float (single precision: a row's sum is float).
__device__ __forceinline__ void complex_fma(float2 v, float2 xv, float& acc_re, float& acc_im)
{
    acc_re = fmaf(v.x, xv.x, acc_re);
    acc_re = fmaf(-v.y, xv.y, acc_re);
    acc_im = fmaf(v.x, xv.y, acc_im);
    acc_im = fmaf(v.y, xv.x, acc_im);
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
