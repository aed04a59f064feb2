#pragma once
// Device code shared by the SELL and stencil augmented kernels: the thread mapping, the
// row update y = scale (acc - shift x) + beta y, and the on-the-fly dot reduction.
//
// Thread mapping (seed 004, Fig. 6): a block of 256 threads works on a "tile" of 256 / W
// rows; thread t owns column c = t % W of row t / W. With W in {1, ..., 32} dividing the
// warp size, one warp covers 32 / W whole rows: at W = 32 a warp is one row and its loads
// of x are 32 consecutive 16-byte values (512 B, perfectly coalesced) while the matrix entry
// is one broadcast; at W = 1 a warp is 32 rows = one SELL-32 chunk and the matrix loads are
// coalesced instead. A kernel may give a thread P adjacent columns instead (Columns; the
// single-precision site kernel: P = 2, W / 2 threads per row). Blocks loop over the tiles
// grid-stride (the grid is sized to fill the GPU once), so the per-block dot partials stay
// few and their count does not grow with N.
//
// Dots: threads of one column sit at lane distance W (W / P), so xor-shuffles with offsets
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

#include <algorithm>
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

#ifndef TOPOKPM_CUDA_EMULATION
/// The launch's dynamic shared memory (16-byte aligned). The host emulation of the tests
/// (tests/support/cuda_emulation) provides its own.
__device__ __forceinline__ unsigned char* dynamic_shared_memory()
{
    extern __shared__ __align__(16) unsigned char memory[];
    return memory;
}
#endif

/// Grid for `num_rows` rows (or sites) of w threads each: enough blocks to cover them once,
/// at most `resident` (sweep_driver.cuh's resident_grid).
inline int grid_for(std::int64_t num_rows, int w, int resident)
{
    const std::int64_t rows_per_tile = block_threads / w;
    const std::int64_t tiles = (num_rows + rows_per_tile - 1) / rows_per_tile;
    return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(tiles, resident)));
}

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

/// P adjacent columns of one row moved as one word: P = 1 the value itself; P = 2 two
/// float2 as one 16-byte float4 (single precision: a warp's load of x then moves 512 bytes per
/// instruction, as the double kernel's does). The address must be 16-byte aligned for P = 2
/// (paired_columns()).
template <class V2, int P>
struct Columns;
template <class V2>
struct Columns<V2, 1> {
    __device__ __forceinline__ static void load_read_only(const V2* p, V2 (&v)[1]) { v[0] = __ldg(p); }
    __device__ __forceinline__ static void load(const V2* p, V2 (&v)[1]) { v[0] = *p; }
    __device__ __forceinline__ static void store(V2* p, const V2 (&v)[1]) { *p = v[0]; }
};
template <>
struct Columns<float2, 2> {
    __device__ __forceinline__ static void split(float4 w, float2 (&v)[2])
    {
        v[0] = make_float2(w.x, w.y);
        v[1] = make_float2(w.z, w.w);
    }
    __device__ __forceinline__ static void load_read_only(const float2* p, float2 (&v)[2])
    {
        split(__ldg(reinterpret_cast<const float4*>(p)), v);
    }
    __device__ __forceinline__ static void load(const float2* p, float2 (&v)[2])
    {
        split(*reinterpret_cast<const float4*>(p), v);
    }
    __device__ __forceinline__ static void store(float2* p, const float2 (&v)[2])
    {
        *reinterpret_cast<float4*>(p) = make_float4(v[0].x, v[0].y, v[1].x, v[1].y);
    }
};

/// Whether a launch may pair columns (Columns<V2, 2>): every (row, c0 + 2k) element of x and y
/// starts a 16-byte word, i.e. the row stride and the strip's first column are even and both
/// blocks are 16-byte aligned (device allocations are 256-byte aligned).
template <class V2>
inline bool paired_columns(const SweepScalars& s, const V2* x, const V2* y)
{
    return s.ld % 2 == 0 && s.c0 % 2 == 0 && reinterpret_cast<std::uintptr_t>(x) % 16 == 0 &&
           reinterpret_cast<std::uintptr_t>(y) % 16 == 0;
}

/// Finishes P adjacent (row, column) elements in double: y = scale (acc - shift x) + beta y,
/// rounded once to V2, and adds each element's share of <x|x> and <y|x> (from the stored y) to
/// its column's sums. `xi` is x at the elements, `index` the first one's offset; `shift` is the
/// sweep's (s.shift), or s.shift - V where the single stencil kernels leave the potential V to
/// the epilogue. Each element's arithmetic is the same for every P.
template <bool Dots, int P, class V2, class Acc>
__device__ __forceinline__ void finish_columns(const Acc (&acc_re)[P], const Acc (&acc_im)[P], const V2 (&xi)[P],
                                               double shift, std::int64_t index, V2* __restrict__ y,
                                               const SweepScalars& s, DotAccumulator (&dots)[P])
{
    double yr[P], yi[P];
#pragma unroll
    for (int j = 0; j < P; ++j) {
        const double xr = xi[j].x, xim = xi[j].y;
        yr[j] = s.scale * (static_cast<double>(acc_re[j]) - shift * xr);
        yi[j] = s.scale * (static_cast<double>(acc_im[j]) - shift * xim);
    }
    // beta == 0: y may hold anything (even NaN); never read it. The branch is uniform.
    if (s.beta != 0.0) {
        V2 old[P];
        Columns<V2, P>::load(y + index, old);
#pragma unroll
        for (int j = 0; j < P; ++j) {
            yr[j] += s.beta * static_cast<double>(old[j].x);
            yi[j] += s.beta * static_cast<double>(old[j].y);
        }
    }
    V2 out[P];
#pragma unroll
    for (int j = 0; j < P; ++j) out[j] = Lanes<V2>::make(yr[j], yi[j]);
    Columns<V2, P>::store(y + index, out);
    if (Dots) {
#pragma unroll
        for (int j = 0; j < P; ++j) {
            const double xr = xi[j].x, xim = xi[j].y;
            const double or_ = out[j].x, oi = out[j].y;  // = yr, yi in double
            dots[j].xx += xr * xr + xim * xim;
            dots[j].yx_re += or_ * xr + oi * xim;  // Re conj(y) x
            dots[j].yx_im += or_ * xim - oi * xr;  // Im conj(y) x
        }
    }
}

/// One element (P = 1): the SELL and row kernels.
template <bool Dots, class V2>
__device__ __forceinline__ void finish_element(double acc_re, double acc_im, V2 xi, double shift, std::int64_t index,
                                               V2* __restrict__ y, const SweepScalars& s, DotAccumulator& dots)
{
    const double re[1] = {acc_re}, im[1] = {acc_im};
    const V2 x1[1] = {xi};
    DotAccumulator d[1] = {dots};
    finish_columns<Dots, 1>(re, im, x1, shift, index, y, s, d);
    dots = d[0];
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
/// partials[(q * gridDim.x + blockIdx.x) * W + c] for q = xx, Re yx, Im yx. Thread t holds
/// the sums of columns P (t % (W / P)) + j in d[j] (P = 1: column t % W). All threads of the
/// block must call it.
template <int W, int P = 1>
__device__ __forceinline__ void reduce_dots_to_partials(DotAccumulator (&d)[P], double* __restrict__ partials)
{
    static_assert(W >= 1 && W <= 32 && (32 % W) == 0, "W must divide the warp size");
    static_assert(P >= 1 && W % P == 0, "P must divide W");
    constexpr int T = W / P;  // threads per row: those of one column sit at lane distance T
#pragma unroll
    for (int j = 0; j < P; ++j)
#pragma unroll
        for (int offset = 16; offset >= T; offset >>= 1) {
            d[j].xx += __shfl_xor_sync(0xffffffffu, d[j].xx, offset);
            d[j].yx_re += __shfl_xor_sync(0xffffffffu, d[j].yx_re, offset);
            d[j].yx_im += __shfl_xor_sync(0xffffffffu, d[j].yx_im, offset);
        }
    __shared__ double shared[3][warps_per_block][W];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane < T) {
#pragma unroll
        for (int j = 0; j < P; ++j) {
            shared[0][warp][lane * P + j] = d[j].xx;
            shared[1][warp][lane * P + j] = d[j].yx_re;
            shared[2][warp][lane * P + j] = d[j].yx_im;
        }
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

/// One column per thread (P = 1): the SELL, row and column-dot kernels.
template <int W>
__device__ __forceinline__ void reduce_dots_to_partials(DotAccumulator d, double* __restrict__ partials)
{
    DotAccumulator one[1] = {d};
    reduce_dots_to_partials<W, 1>(one, partials);
}

}  // namespace topokpm::numerics::kernels::cuda::detail
