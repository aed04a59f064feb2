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

#include <type_traits>

#include "numerics/cuda/augmented_common.cuh"
#include "numerics/cuda/sweep_driver.cuh"
#include "numerics/spmmv/sell_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"

namespace topokpm::numerics::kernels::cuda {
namespace {

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

template <int W, bool Dots, class V2>
__global__ void __launch_bounds__(block_threads, sell_min_blocks_per_sm)
    sell_augmented_kernel(BasicSellView<V2> a, const V2* __restrict__ x, V2* __restrict__ y, SweepScalars s,
                          double* __restrict__ partials)
{
    using Acc = typename detail::Lanes<V2>::real;
    constexpr int rows_per_tile = block_threads / W;
    const int c = threadIdx.x % W;
    const int local = threadIdx.x / W;
    const int chunk_height = a.chunk_height;
    // Slots fit 32 bits (local_index rows); 32-bit division is several times cheaper.
    const int num_slots = a.num_chunks * chunk_height;
    const int num_tiles = (num_slots + rows_per_tile - 1) / rows_per_tile;
    const V2* __restrict__ values = a.values;
    const int* __restrict__ columns = a.columns;
    DotAccumulator dots;

    detail::for_each_tile(num_tiles, s.tile_group, [&](int tile) {
        const int slot = tile * rows_per_tile + local;
        if (slot >= num_slots) return;
        const int row = __ldg(&a.row_of_slot[slot]);
        if (row < 0) return;  // padding row of the last chunk
        const int chunk = slot / chunk_height;
        const int r = slot - chunk * chunk_height;
        const int length = __ldg(&a.chunk_length[chunk]);
        std::int64_t e = __ldg(&a.chunk_start[chunk]) + r;
        Acc acc_re = 0, acc_im = 0;
        // Unrolled so several independent x gathers are in flight per thread.
#pragma unroll 4
        for (int k = 0; k < length; ++k, e += chunk_height) {
            const V2 v = __ldg(&values[e]);
            const int col = __ldg(&columns[e]);
            const V2 xv = __ldg(&x[static_cast<std::int64_t>(col) * s.ld + s.c0 + c]);
            detail::complex_fma(v, xv, acc_re, acc_im);
        }
        const std::int64_t self = static_cast<std::int64_t>(row) * s.ld + s.c0 + c;
        detail::finish_element<Dots>(acc_re, acc_im, __ldg(&x[self]), s.shift, self, y, s, dots);
    });
    if (Dots) detail::reduce_dots_to_partials<W>(dots, partials);
}

template <int W, bool Dots, class V2>
int launch(const BasicSellView<V2>& a, const V2* x, V2* y, const SweepScalars& s, DotWorkspace& workspace)
{
    auto kernel = sell_augmented_kernel<W, Dots, V2>;
    const std::int64_t num_slots = static_cast<std::int64_t>(a.num_chunks) * a.chunk_height;
    const int grid = detail::grid_for(num_slots, W, detail::resident_grid(kernel));
    double* partials = Dots ? workspace.partials(3 * static_cast<std::size_t>(grid) * W) : nullptr;
    kernel<<<grid, block_threads>>>(a, x, y, s, partials);
    return grid;
}

}  // namespace

/// Both precisions: T the host complex type, the view and blocks reinterpreted as its
/// device type (same size and layout).
template <class T>
SweepInfo sell_spmmv(const BasicSellView<T>& host_view, const T* x, T* y, int num_cols, const AugmentedOps& ops,
                     DotWorkspace& workspace, DotSums* dots)
{
    TOPOKPM_REQUIRE(x != y, "sell_spmmv: x and y are the same block (", x, ")");
    using V2 = typename detail::DeviceComplex<T>::type;
    TOPOKPM_REQUIRE(host_view.chunk_height >= 1, "sell_spmmv: chunk height ", host_view.chunk_height);
    BasicSellView<V2> a;
    a.num_rows = host_view.num_rows;
    a.num_chunks = host_view.num_chunks;
    a.chunk_height = host_view.chunk_height;
    a.chunk_start = host_view.chunk_start;
    a.chunk_length = host_view.chunk_length;
    a.columns = host_view.columns;
    a.values = reinterpret_cast<const V2*>(host_view.values);
    a.row_of_slot = host_view.row_of_slot;
    const auto* xd = reinterpret_cast<const V2*>(x);
    auto* yd = reinterpret_cast<V2*>(y);
    constexpr bool single = std::is_same_v<T, complex_single>;
    return detail::run_strips<single>(num_cols, ops, workspace, dots, [&](auto w, const SweepScalars& s, auto d) {
        return launch<decltype(w)::value, decltype(d)::value>(a, xd, yd, s, workspace);
    });
}

template SweepInfo sell_spmmv(const BasicSellView<complex_double>&, const complex_double*, complex_double*, int,
                              const AugmentedOps&, DotWorkspace&, DotSums*);
template SweepInfo sell_spmmv(const BasicSellView<complex_single>&, const complex_single*, complex_single*, int,
                              const AugmentedOps&, DotWorkspace&, DotSums*);

}  // namespace topokpm::numerics::kernels::cuda
