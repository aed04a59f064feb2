// Augmented SpMMV over SELL-C-σ on the GPU:
//
//     y[row_of_slot[p], c] = scale * (sum_k val[p, k] x[col[p, k], c] - shift x[row, c]) + beta y[row, c]
//
// with p = chunk * C + r a slot of the σ-sorted order, entry k of slot p stored at
// chunk_start[chunk] + k C + r (column-major inside the chunk), and padding entries of
// value 0 with a repeated valid column (sell_matrix.hpp), so the inner loop has no branch.
// Block vectors are row-major, element (i, c) at i R + c. See augmented_common.cuh for the
// thread mapping and the dot reduction.
//
// Minimum traffic per sweep (the project's model): 20 bytes per stored entry (16 value +
// 4 column) + 4 bytes per row (row_of_slot) + 48 bytes per row and column (x read, y read
// and written); flops 8 per entry and column + 34 per row and column. In single precision
// (V2 = float2, augmented_common.cuh) 12 bytes per stored entry and 24 per row and column.
//
// This header holds the device code; sell_kernels.cu launches it. Apart, so that
// tests/unit/cuda/emulated_kernels_test.cpp runs the same source on the host.

#pragma once

#include <cstdint>
#include <type_traits>

#include "numerics/cuda/augmented_common.cuh"
#include "numerics/spmmv/sell_kernels.hpp"

namespace topokpm::numerics::kernels::cuda::sell {

using detail::block_threads;
using detail::DotAccumulator;
using detail::SweepScalars;

/// Resident blocks per SM the register allocation must allow. At R = 1 the sweep streams the
/// matrix, and the bytes in flight per SM bound its bandwidth (Little's law): the H200 needs
/// about 1.4 times the H100's for its 1.4 times the bandwidth, and reached 0.72 of its copy
/// bandwidth where the H100 reached 0.85 with the same code. Unbounded, ptxas gives the dots
/// kernels 60-62 registers (4 blocks of 256 threads per SM); 5 blocks cap them at 48, which
/// ptxas (sm_90, CUDA 13) fits without spilling in every instance; 6 spill. The results are
/// unchanged: the PTX's floating-point operations are the same sequence (checked on all 18
/// instances), only the integer address arithmetic is scheduled differently.
constexpr int sell_min_blocks_per_sm = 5;

/// P = 2 (single precision, paired_columns): a thread owns two adjacent columns of its row,
/// loaded and stored as 16-byte words, W / 2 threads per row: each stored entry's value and
/// column are loaded once for both. Each element's products and epilogue are those of P = 1.
template <int W, int P, bool Dots, class V2>
__global__ void __launch_bounds__(block_threads, sell_min_blocks_per_sm)
    sell_augmented_kernel(BasicSellView<V2> a, const V2* __restrict__ x, V2* __restrict__ y, SweepScalars s,
                          double* __restrict__ partials)
{
    using Acc = typename detail::Lanes<V2>::real;
    using Cols = detail::Columns<V2, P>;
    static_assert(W % P == 0, "P columns per thread must divide the strip");
    constexpr int T = W / P;  // threads per row
    constexpr int rows_per_tile = block_threads / T;
    const int c = (threadIdx.x % T) * P;
    const int local = threadIdx.x / T;
    const int chunk_height = a.chunk_height;
    // Slots fit 32 bits (local_index rows); 32-bit division is several times cheaper.
    const int num_slots = a.num_chunks * chunk_height;
    const int num_tiles = (num_slots + rows_per_tile - 1) / rows_per_tile;
    const V2* __restrict__ values = a.values;
    const int* __restrict__ columns = a.columns;
    DotAccumulator dots[P];

    detail::for_each_tile(num_tiles, s.tile_group, [&](int tile) {
        const int slot = tile * rows_per_tile + local;
        if (slot >= num_slots) return;
        const int row = __ldg(&a.row_of_slot[slot]);
        if (row < 0) return;  // padding row of the last chunk
        const int chunk = slot / chunk_height;
        const int r = slot - chunk * chunk_height;
        const int length = __ldg(&a.chunk_length[chunk]);
        std::int64_t e = __ldg(&a.chunk_start[chunk]) + r;
        Acc acc_re[P], acc_im[P];
#pragma unroll
        for (int j = 0; j < P; ++j) acc_re[j] = acc_im[j] = 0;
        // Unrolled so several independent x gathers are in flight per thread.
#pragma unroll 4
        for (int k = 0; k < length; ++k, e += chunk_height) {
            const V2 v = __ldg(&values[e]);
            const int col = __ldg(&columns[e]);
            V2 xv[P];
            Cols::load_read_only(&x[static_cast<std::int64_t>(col) * s.ld + s.c0 + c], xv);
#pragma unroll
            for (int j = 0; j < P; ++j) detail::complex_fma(v, xv[j], acc_re[j], acc_im[j]);
        }
        const std::int64_t self = static_cast<std::int64_t>(row) * s.ld + s.c0 + c;
        V2 xs[P];
        Cols::load_read_only(&x[self], xs);
        detail::finish_columns<Dots, P>(acc_re, acc_im, xs, s.shift, self, y, s, dots);
    });
    if (Dots) detail::reduce_dots_to_partials<W, P>(dots, partials);
}

/// A view with host-typed values (complex_double, complex_single) as the kernel's (double2,
/// float2): the same layout, the value pointer reinterpreted.
template <class T>
BasicSellView<typename detail::DeviceComplex<T>::type> device_typed(const BasicSellView<T>& v)
{
    using V2 = typename detail::DeviceComplex<T>::type;
    BasicSellView<V2> a;
    a.num_rows = v.num_rows;
    a.num_chunks = v.num_chunks;
    a.chunk_height = v.chunk_height;
    a.chunk_start = v.chunk_start;
    a.chunk_length = v.chunk_length;
    a.columns = v.columns;
    a.values = reinterpret_cast<const V2*>(v.values);
    a.row_of_slot = v.row_of_slot;
    return a;
}

/// The kernel a strip of width W runs, handed to `launch(kernel, units, threads_per_unit,
/// shared_bytes)` (the stencil's launch shape; no dynamic shared memory here):
/// two columns per thread in single precision where `pairing` is on and paired_columns()
/// allows, else one. One choice for sell_kernels.cu's launches and the host emulation.
template <int W, bool Dots, class V2, class Launch>
auto with_sell_kernel(const BasicSellView<V2>& a, const SweepScalars& s, const V2* x, const V2* y, bool pairing,
                      Launch&& launch)
{
    const std::int64_t slots = static_cast<std::int64_t>(a.num_chunks) * a.chunk_height;
    if constexpr (std::is_same_v<V2, float2> && W >= 2)
        if (pairing && detail::paired_columns(s, x, y))
            return launch(sell_augmented_kernel<W, 2, Dots, V2>, slots, W / 2, std::size_t(0));
    return launch(sell_augmented_kernel<W, 1, Dots, V2>, slots, W, std::size_t(0));
}

}  // namespace topokpm::numerics::kernels::cuda::sell
