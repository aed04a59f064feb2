// Matrix-free augmented SpMMV on the GPU: the rows of H are generated from a BlockStencil
// (numerics/base/block_stencil.hpp) instead of being read from memory,
//
//     y[i, c] = scale * (sum_t sum_b T_t[o, b] x[(s + d_t, b), c] + V x[i, c] - shift x[i, c]) + beta y[i, c]
//
// for row i = o + B s, site s = z + nz (y + ny x), term 0 being the on-site block. Only the
// potential (8 bytes per site or row) and the vectors come from device memory, so a sweep
// moves 48 bytes per row and column plus the potential; the blocks (a few hundred bytes) are
// staged in shared memory once per thread block. Two kernels:
//
// * site kernel (B = 2, 4; both models): a thread owns one column of a whole site and keeps
//   its B rows in registers. Each neighbour value x[(s + d, b), c] is loaded once and used by
//   all B rows, which halves the x loads of ti (28 instead of 52 per site): at large R the
//   sweep is bound by L2 -> SM traffic of x, not by DRAM (measured, see docs/cuda_backend.md).
// * row kernel (any B <= 8, the generic fallback): a thread owns one (row, column) element
//   and loops over the non-zero entries of its row orbital.
//
// Thread mapping and dots as in augmented_common.cuh (a "row" there is a site for the site
// kernel).

#include "numerics/cuda/augmented_common.cuh"
#include "numerics/cuda/sweep_driver.cuh"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"

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

    detail::for_each_tile(num_tiles, s.tile_group, [&](int tile) {
        const int row = tile * rows_per_tile + local;
        if (row >= st.num_rows) return;
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
        detail::finish_element<Dots>(acc_re, acc_im, xs, self, y, s, dots);
    });
    if (Dots) detail::reduce_dots_to_partials<W>(dots, partials);
}

/// Shared memory of the site kernel: [term offsets 3T ints, padded to 16 bytes][dense
/// blocks T B B double2].
__host__ __device__ inline int site_table_ints(const StencilView& s) { return (3 * s.num_terms + 3) / 4 * 4; }

inline std::size_t site_table_bytes(const StencilView& s)
{
    return site_table_ints(s) * sizeof(int) +
           static_cast<std::size_t>(s.num_terms) * s.orbitals * s.orbitals * sizeof(double2);
}

template <int W, int B, bool Dots>
__global__ void __launch_bounds__(block_threads)
    stencil_site_kernel(StencilView st, const double2* __restrict__ x, double2* __restrict__ y, SweepScalars s,
                        double* __restrict__ partials)
{
    extern __shared__ __align__(16) unsigned char table[];
    int* offsets = reinterpret_cast<int*>(table);
    double2* blocks = reinterpret_cast<double2*>(reinterpret_cast<int*>(table) + site_table_ints(st));
    for (int k = threadIdx.x; k < 3 * st.num_terms; k += block_threads) offsets[k] = st.term_offset[k];
    for (int k = threadIdx.x; k < st.num_terms * B * B; k += block_threads)
        blocks[k] = reinterpret_cast<const double2*>(st.dense_blocks)[k];
    __syncthreads();

    constexpr int sites_per_tile = block_threads / W;
    const int c = threadIdx.x % W;
    const int local = threadIdx.x / W;
    const int num_sites = st.num_rows / B;
    const int num_tiles = (num_sites + sites_per_tile - 1) / sites_per_tile;
    DotAccumulator dots;

    detail::for_each_tile(num_tiles, s.tile_group, [&](int tile) {
        const int site = tile * sites_per_tile + local;
        if (site >= num_sites) return;
        const int pz = site % st.nz;
        const int rest = site / st.nz;
        const int py = rest % st.ny;
        const int px = rest / st.ny;
        const std::int64_t self = static_cast<std::int64_t>(site) * B * s.ld + s.c0 + c;
        double2 xs[B];
        double acc_re[B], acc_im[B];
#pragma unroll
        for (int o = 0; o < B; ++o) {
            xs[o] = __ldg(&x[self + static_cast<std::int64_t>(o) * s.ld]);
            const double v = __ldg(&st.potential[st.potential_per_row ? site * B + o : site]);
            acc_re[o] = v * xs[o].x;
            acc_im[o] = v * xs[o].y;
        }
        for (int t = 0; t < st.num_terms; ++t) {
            const double2* blk = blocks + t * B * B;
            double2 xn[B];
            if (t == 0) {  // on-site block: the site's own values, already loaded
#pragma unroll
                for (int b = 0; b < B; ++b) xn[b] = xs[b];
            } else {
                const int qx = neighbour(px, offsets[3 * t], st.nx, st.periodic[0]);
                const int qy = neighbour(py, offsets[3 * t + 1], st.ny, st.periodic[1]);
                const int qz = neighbour(pz, offsets[3 * t + 2], st.nz, st.periodic[2]);
                if ((qx | qy | qz) < 0) continue;  // across an open boundary
                const std::int64_t first =
                    static_cast<std::int64_t>(qz + st.nz * (qy + st.ny * qx)) * B * s.ld + s.c0 + c;
#pragma unroll
                for (int b = 0; b < B; ++b) xn[b] = __ldg(&x[first + static_cast<std::int64_t>(b) * s.ld]);
            }
#pragma unroll
            for (int o = 0; o < B; ++o)
#pragma unroll
                for (int b = 0; b < B; ++b) {
                    const double2 v = blk[o * B + b];
                    // Structural zeros (half of every ti block) are skipped; the branch is the
                    // same for the whole warp.
                    if (v.x != 0.0 || v.y != 0.0) detail::complex_fma(v, xn[b], acc_re[o], acc_im[o]);
                }
        }
#pragma unroll
        for (int o = 0; o < B; ++o)
            detail::finish_element<Dots>(acc_re[o], acc_im[o], xs[o], self + static_cast<std::int64_t>(o) * s.ld, y, s,
                                         dots);
    });
    if (Dots) detail::reduce_dots_to_partials<W>(dots, partials);
}

template <int W, int B, bool Dots>
int launch_site(const StencilView& st, const complex_type* x, complex_type* y, const SweepScalars& s,
                DotWorkspace& workspace)
{
    auto kernel = stencil_site_kernel<W, B, Dots>;
    const int grid = detail::grid_for(st.num_rows / B, W, detail::resident_grid(kernel));
    double* partials = Dots ? workspace.partials(3 * static_cast<std::size_t>(grid) * W) : nullptr;
    kernel<<<grid, block_threads, site_table_bytes(st)>>>(st, reinterpret_cast<const double2*>(x),
                                                          reinterpret_cast<double2*>(y), s, partials);
    return grid;
}

template <int W, bool Dots>
int launch(const StencilView& st, const complex_type* x, complex_type* y, const SweepScalars& s,
           DotWorkspace& workspace)
{
    if (st.orbitals == 4) return launch_site<W, 4, Dots>(st, x, y, s, workspace);
    if (st.orbitals == 2) return launch_site<W, 2, Dots>(st, x, y, s, workspace);
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
    return with_width(w, [&](auto width) {
        constexpr int W = decltype(width)::value;
        // run_strips() passes registered widths only (strip_widths()).
        TOPOKPM_REQUIRE(W > 0, "no stencil kernel for strip width ", w);
        return launch<(W > 0 ? W : 1), Dots>(st, x, y, s, workspace);
    });
}

}  // namespace

SweepInfo stencil_spmmv(const StencilView& st, const complex_type* x, complex_type* y, int num_cols,
                        const AugmentedOps& ops, DotWorkspace& workspace, DotSums* dots)
{
    TOPOKPM_REQUIRE(num_cols >= 1 && x != y, "stencil_spmmv: ", num_cols, " columns, x ", x, ", y ", y);
    // The tables must fit the default 48 KiB of shared memory (checked by the operator too).
    TOPOKPM_REQUIRE(table_bytes(st) <= 48 * 1024 && site_table_bytes(st) <= 48 * 1024, "stencil tables of ",
                    table_bytes(st), " / ", site_table_bytes(st), " bytes");
    return detail::run_strips(num_cols, ops, workspace, dots, [&](int w, const SweepScalars& s, bool want_dots) {
        return want_dots ? launch_width<true>(w, st, x, y, s, workspace)
                         : launch_width<false>(w, st, x, y, s, workspace);
    });
}

}  // namespace topokpm::numerics::kernels::cuda
