// Matrix-free augmented SpMMV on the GPU: the rows of H are generated from a BlockStencil
// (numerics/base/block_stencil.hpp) instead of being read from memory,
//
//     y[i, c] = scale * (sum_t sum_b T_t[o, b] x[(s + d_t, b), c] + V x[i, c] - shift x[i, c]) + beta y[i, c]
//
// for row i = o + B s, site s = z + nz (y + ny x), term 0 being the on-site block. The
// non-zero block entries (a few hundred bytes) are staged in shared memory once per block,
// where threads of different orbitals read them without serialising; only the potential
// (8 bytes per site or row) and the vectors come from device memory, so a sweep moves
// 48 bytes per row and column plus the potential. Thread mapping and dots as in
// augmented_common.cuh.

#include "numerics/cuda/augmented_common.cuh"
#include "numerics/cuda/sweep_driver.cuh"

namespace topokpm::numerics::kernels::cuda {
namespace {

using detail::block_threads;
using detail::DotAccumulator;
using detail::SweepScalars;

/// Shared-memory layout of the stencil tables: [term offsets 3T][entry_begin BT+1]
/// [entry_column E] (ints, padded to 16 bytes) then [entry_value E] (double2).
__host__ __device__ inline int table_ints(const StencilView& s)
{
    const int ints = 3 * s.num_terms + s.orbitals * s.num_terms + 1 + s.num_entries;
    return (ints + 3) / 4 * 4;
}

inline std::size_t table_bytes(const StencilView& s)
{
    return table_ints(s) * sizeof(int) + s.num_entries * sizeof(double2);
}

/// Neighbour coordinate along one direction, or -1 when it leaves an open boundary.
__device__ __forceinline__ int neighbour(int v, int d, int extent, int periodic)
{
    int w = v + d;
    if (w < 0 || w >= extent) {
        if (!periodic) return -1;
        w %= extent;
        if (w < 0) w += extent;
    }
    return w;
}

template <int W, bool Dots>
__global__ void __launch_bounds__(block_threads)
    stencil_augmented_kernel(StencilView st, const double2* __restrict__ x, double2* __restrict__ y, SweepScalars s,
                             double* __restrict__ partials)
{
    extern __shared__ __align__(16) unsigned char table[];
    int* offsets = reinterpret_cast<int*>(table);
    int* begin = offsets + 3 * st.num_terms;
    int* column = begin + st.orbitals * st.num_terms + 1;
    double2* value = reinterpret_cast<double2*>(reinterpret_cast<int*>(table) + table_ints(st));
    for (int k = threadIdx.x; k < 3 * st.num_terms; k += block_threads) offsets[k] = st.term_offset[k];
    for (int k = threadIdx.x; k <= st.orbitals * st.num_terms; k += block_threads) begin[k] = st.entry_begin[k];
    for (int k = threadIdx.x; k < st.num_entries; k += block_threads) {
        column[k] = st.entry_column[k];
        value[k] = reinterpret_cast<const double2*>(st.entry_value)[k];
    }
    __syncthreads();

    constexpr int rows_per_tile = block_threads / W;
    const int c = threadIdx.x % W;
    const int local = threadIdx.x / W;
    const int nb = st.orbitals;
    const int num_tiles = (st.num_rows + rows_per_tile - 1) / rows_per_tile;
    DotAccumulator dots;

    const detail::TileRange tiles = detail::block_tiles(num_tiles);
    for (int tile = tiles.begin; tile < tiles.end; ++tile) {
        const int row = tile * rows_per_tile + local;
        if (row >= st.num_rows) continue;
        const int site = row / nb;
        const int o = row - site * nb;
        const int pz = site % st.nz;
        const int rest = site / st.nz;
        const int py = rest % st.ny;
        const int px = rest / st.ny;
        const std::int64_t self = static_cast<std::int64_t>(row) * s.ld + s.c0 + c;
        const double v = __ldg(&st.potential[st.potential_per_row ? row : site]);
        const double2 xs = __ldg(&x[self]);
        double acc_re = v * xs.x, acc_im = v * xs.y;
        for (int t = 0; t < st.num_terms; ++t) {
            const int qx = neighbour(px, offsets[3 * t], st.nx, st.periodic[0]);
            const int qy = neighbour(py, offsets[3 * t + 1], st.ny, st.periodic[1]);
            const int qz = neighbour(pz, offsets[3 * t + 2], st.nz, st.periodic[2]);
            if ((qx | qy | qz) < 0) continue;  // across an open boundary
            const std::int64_t first = (static_cast<std::int64_t>(qz + st.nz * (qy + st.ny * qx)) * nb) * s.ld + s.c0 + c;
            const int end = begin[o * st.num_terms + t + 1];
            for (int e = begin[o * st.num_terms + t]; e < end; ++e)
                detail::complex_fma(value[e], __ldg(&x[first + static_cast<std::int64_t>(column[e]) * s.ld]), acc_re,
                                    acc_im);
        }
        detail::finish_element<Dots>(acc_re, acc_im, self, x, y, s, dots);
    }
    if (Dots) detail::reduce_dots_to_partials<W>(dots, partials);
}

template <int W, bool Dots>
int launch(const StencilView& st, const complex_type* x, complex_type* y, const SweepScalars& s,
           DotWorkspace& workspace)
{
    auto kernel = stencil_augmented_kernel<W, Dots>;
    const int grid = detail::grid_for(st.num_rows, W, detail::resident_grid(kernel));
    double* partials = Dots ? workspace.partials(3 * static_cast<std::size_t>(grid) * W) : nullptr;
    kernel<<<grid, block_threads, table_bytes(st)>>>(st, reinterpret_cast<const double2*>(x),
                                                     reinterpret_cast<double2*>(y), s, partials);
    return grid;
}

template <bool Dots>
int launch_width(int w, const StencilView& st, const complex_type* x, complex_type* y, const SweepScalars& s,
                 DotWorkspace& workspace)
{
    switch (w) {
    case 1: return launch<1, Dots>(st, x, y, s, workspace);
    case 2: return launch<2, Dots>(st, x, y, s, workspace);
    case 4: return launch<4, Dots>(st, x, y, s, workspace);
    case 8: return launch<8, Dots>(st, x, y, s, workspace);
    case 16: return launch<16, Dots>(st, x, y, s, workspace);
    case 32: return launch<32, Dots>(st, x, y, s, workspace);
    default: TOPOKPM_REQUIRE(false, "no stencil kernel for strip width ", w);
    }
    return 0;
}

}  // namespace

SweepInfo stencil_spmmv(const StencilView& st, const complex_type* x, complex_type* y, int num_cols,
                        const AugmentedOps& ops, DotWorkspace& workspace, DotSums* dots)
{
    TOPOKPM_REQUIRE(num_cols >= 1 && x != y, "stencil_spmmv: ", num_cols, " columns, x ", x, ", y ", y);
    // The tables must fit the default 48 KiB of shared memory (checked by the operator too).
    TOPOKPM_REQUIRE(table_bytes(st) <= 48 * 1024, "stencil tables of ", table_bytes(st), " bytes");
    return detail::run_strips(num_cols, ops, workspace, dots, [&](int w, const SweepScalars& s, bool want_dots) {
        return want_dots ? launch_width<true>(w, st, x, y, s, workspace)
                         : launch_width<false>(w, st, x, y, s, workspace);
    });
}

}  // namespace topokpm::numerics::kernels::cuda
