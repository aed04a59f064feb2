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
//   In single precision a thread owns two adjacent columns where the strip allows (P = 2,
//   16-byte loads and stores), so the per-site work serves two columns.
// * row kernel (any B <= 8, the generic fallback): a thread owns one (row, column) element
//   and loops over the non-zero entries of its row orbital.
//
// Thread mapping and dots as in augmented_common.cuh (a "row" there is a site for the site
// kernel). Single precision (V2 = float2): the block values and vectors are float, the
// potential double; a row's sum over the block entries is float and the potential joins the
// shift in the double epilogue (start_row), so V is never rounded.
//
// A magnetic field runs the row kernel for every B: each entry is the double block value
// times its Peierls factor (peierls_phase_entry, block_stencil.hpp), rounded to V2
// (stencil_kernels.hpp says what it costs).
//
// This header holds the device code; stencil_kernels.cu launches it. Apart, so that
// tests/unit/cuda/emulated_kernels_test.cpp runs the same source on the host through
// tests/support/cuda_emulation (CUDA threads emulated by host threads).

#pragma once

#include <cstdint>
#include <type_traits>

#include "numerics/cuda/augmented_common.cuh"
#include "numerics/spmmv/stencil_kernels.hpp"

namespace topokpm::numerics::kernels::cuda::stencil {

using detail::block_threads;
using detail::DotAccumulator;
using detail::Lanes;
using detail::SweepScalars;

/// Shared-memory layout of the stencil tables: [terms 4T (dx, dy, dz, mask)][entry_begin BT+1]
/// [entry_column E] (ints, padded to 16 bytes) then [entry_value E] (V2).
template <class V>
__host__ __device__ inline int table_ints(const BasicStencilView<V>& s)
{
    const int ints = 4 * s.num_terms + s.orbitals * s.num_terms + 1 + s.num_entries;
    return (ints + 3) / 4 * 4;
}

template <class V>
inline std::size_t table_bytes(const BasicStencilView<V>& s)
{
    return table_ints(s) * sizeof(int) + s.num_entries * sizeof(V);
}

/// The first accumulator value of a row and the shift its epilogue applies: in double the
/// potential term V x starts the sum (the double kernel's arithmetic); in single the float
/// sum holds the block entries only and V joins the shift in the double epilogue.
template <class V2>
__device__ __forceinline__ void start_row(double v, V2 xs, typename Lanes<V2>::real& acc_re,
                                          typename Lanes<V2>::real& acc_im, double& shift, double sweep_shift)
{
    if constexpr (std::is_same_v<V2, double2>) {
        acc_re = v * xs.x;
        acc_im = v * xs.y;
        shift = sweep_shift;
    } else {
        acc_re = 0;
        acc_im = 0;
        shift = sweep_shift - v;
    }
}

/// A field's entry (o, b) of term t in the row of site (px, py): the double block value times
/// its Peierls factor (peierls_phase_entry, the CPU stencil's own function), rounded once to V2.
template <class V2>
__device__ __forceinline__ V2 field_entry(const BasicStencilView<V2>& st, int t, int o, int b, int px, int py, int dy)
{
    const double* v = st.field_blocks + 2 * ((t * st.orbitals + o) * st.orbitals + b);
    double re = __ldg(v), im = __ldg(v + 1);
    peierls_phase_entry(st.field, t, o, b, px, py, dy, re, im);
    if constexpr (std::is_same_v<V2, double2>) return make_double2(re, im);
    else return make_float2(__double2float_rn(re), __double2float_rn(im));
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

template <int W, bool Dots, class V2>
__global__ void __launch_bounds__(block_threads)
    stencil_augmented_kernel(BasicStencilView<V2> st, const V2* __restrict__ x, V2* __restrict__ y, SweepScalars s,
                             double* __restrict__ partials)
{
    using Acc = typename Lanes<V2>::real;
    unsigned char* table = detail::dynamic_shared_memory();
    int* offsets = reinterpret_cast<int*>(table);
    int* begin = offsets + 4 * st.num_terms;
    int* column = begin + st.orbitals * st.num_terms + 1;
    V2* value = reinterpret_cast<V2*>(reinterpret_cast<int*>(table) + table_ints(st));
    for (int k = threadIdx.x; k < 4 * st.num_terms; k += block_threads) offsets[k] = st.terms[k];
    for (int k = threadIdx.x; k <= st.orbitals * st.num_terms; k += block_threads) begin[k] = st.entry_begin[k];
    for (int k = threadIdx.x; k < st.num_entries; k += block_threads) {
        column[k] = st.entry_column[k];
        value[k] = st.entry_value[k];
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
        const V2 xs = __ldg(&x[self]);
        Acc acc_re, acc_im;
        double shift;
        start_row(v, xs, acc_re, acc_im, shift, s.shift);
        for (int t = 0; t < st.num_terms; ++t) {
            const int qx = neighbour(px, offsets[4 * t], st.nx, st.periodic[0]);
            const int qy = neighbour(py, offsets[4 * t + 1], st.ny, st.periodic[1]);
            const int qz = neighbour(pz, offsets[4 * t + 2], st.nz, st.periodic[2]);
            if ((qx | qy | qz) < 0) continue;  // across an open boundary
            const std::int64_t first = (static_cast<std::int64_t>(qz + st.nz * (qy + st.ny * qx)) * nb) * s.ld + s.c0 + c;
            const int end = begin[o * st.num_terms + t + 1];
            if (st.field.along == nullptr) {
                for (int e = begin[o * st.num_terms + t]; e < end; ++e)
                    detail::complex_fma(value[e], __ldg(&x[first + static_cast<std::int64_t>(column[e]) * s.ld]),
                                        acc_re, acc_im);
            } else {  // a field (the same branch for the whole grid)
                for (int e = begin[o * st.num_terms + t]; e < end; ++e)
                    detail::complex_fma(field_entry(st, t, o, column[e], px, py, offsets[4 * t + 1]),
                                        __ldg(&x[first + static_cast<std::int64_t>(column[e]) * s.ld]), acc_re, acc_im);
            }
        }
        detail::finish_element<Dots>(acc_re, acc_im, xs, shift, self, y, s, dots);
    });
    if (Dots) detail::reduce_dots_to_partials<W>(dots, partials);
}

/// Shared memory of the site kernel: [per term one int4 (dx, dy, dz, mask): st.terms][dense
/// blocks T B B V2]. One 16-byte load per term says where the neighbour is and which entries
/// to load.
template <class V>
__host__ __device__ inline int site_table_ints(const BasicStencilView<V>& s) { return 4 * s.num_terms; }

template <class V>
inline std::size_t site_table_bytes(const BasicStencilView<V>& s)
{
    return site_table_ints(s) * sizeof(int) +
           static_cast<std::size_t>(s.num_terms) * s.orbitals * s.orbitals * sizeof(V);
}

/// P = 2 (single precision, paired_columns): a thread owns two adjacent columns of its site,
/// loaded and stored as 16-byte words, so W / 2 threads share a site: the per-site work of a
/// thread (the neighbour's coordinates, the term and block values from shared memory, the
/// branches) serves two columns, and a warp's x load moves 512 bytes as in double. Each
/// element's products and epilogue are those of P = 1, in the same order.
template <int W, int B, int P, bool Dots, class V2>
__global__ void __launch_bounds__(block_threads)
    stencil_site_kernel(BasicStencilView<V2> st, const V2* __restrict__ x, V2* __restrict__ y, SweepScalars s,
                        double* __restrict__ partials)
{
    using Acc = typename Lanes<V2>::real;
    using Cols = detail::Columns<V2, P>;
    static_assert(B * B <= 32, "the mask of a block's non-zero entries is one int");
    static_assert(W % P == 0, "P columns per thread must divide the strip");
    unsigned char* table = detail::dynamic_shared_memory();
    const int4* terms = reinterpret_cast<const int4*>(table);
    V2* blocks = reinterpret_cast<V2*>(reinterpret_cast<int*>(table) + site_table_ints(st));
    for (int k = threadIdx.x; k < 4 * st.num_terms; k += block_threads) reinterpret_cast<int*>(table)[k] = st.terms[k];
    for (int k = threadIdx.x; k < st.num_terms * B * B; k += block_threads) blocks[k] = st.dense_blocks[k];
    __syncthreads();

    constexpr int T = W / P;  // threads per site
    constexpr int sites_per_tile = block_threads / T;
    const int c = (threadIdx.x % T) * P;
    const int local = threadIdx.x / T;
    const int num_sites = st.num_rows / B;
    const int num_tiles = (num_sites + sites_per_tile - 1) / sites_per_tile;
    DotAccumulator dots[P];

    detail::for_each_tile(num_tiles, s.tile_group, [&](int tile) {
        const int site = tile * sites_per_tile + local;
        if (site >= num_sites) return;
        const int pz = site % st.nz;
        const int rest = site / st.nz;
        const int py = rest % st.ny;
        const int px = rest / st.ny;
        const std::int64_t self = static_cast<std::int64_t>(site) * B * s.ld + s.c0 + c;
        V2 xs[B][P];
        Acc acc_re[B][P], acc_im[B][P];
        double shift[B];
#pragma unroll
        for (int o = 0; o < B; ++o) {
            Cols::load_read_only(&x[self + static_cast<std::int64_t>(o) * s.ld], xs[o]);
            const double v = __ldg(&st.potential[st.potential_per_row ? site * B + o : site]);
#pragma unroll
            for (int j = 0; j < P; ++j) start_row(v, xs[o][j], acc_re[o][j], acc_im[o][j], shift[o], s.shift);
        }
        for (int t = 0; t < st.num_terms; ++t) {
            const V2* blk = blocks + t * B * B;
            const int4 term = terms[t];
            V2 xn[B][P];
            if (t == 0) {  // on-site block: the site's own values, already loaded
#pragma unroll
                for (int b = 0; b < B; ++b)
#pragma unroll
                    for (int j = 0; j < P; ++j) xn[b][j] = xs[b][j];
            } else {
                const int qx = neighbour(px, term.x, st.nx, st.periodic[0]);
                const int qy = neighbour(py, term.y, st.ny, st.periodic[1]);
                const int qz = neighbour(pz, term.z, st.nz, st.periodic[2]);
                if ((qx | qy | qz) < 0) continue;  // across an open boundary
                const std::int64_t first =
                    static_cast<std::int64_t>(qz + st.nz * (qy + st.ny * qx)) * B * s.ld + s.c0 + c;
#pragma unroll
                for (int b = 0; b < B; ++b) Cols::load_read_only(&x[first + static_cast<std::int64_t>(b) * s.ld], xn[b]);
            }
            // Structural zeros (half of every ti block) are skipped by the mask, before their
            // value is loaded; the branch is the same for the whole warp. A row's products are
            // added in the order (o, b) as before, so the sums are unchanged bit for bit.
#pragma unroll
            for (int o = 0; o < B; ++o)
#pragma unroll
                for (int b = 0; b < B; ++b)
                    if ((term.w >> (o * B + b)) & 1) {
                        const V2 value = blk[o * B + b];
#pragma unroll
                        for (int j = 0; j < P; ++j) detail::complex_fma(value, xn[b][j], acc_re[o][j], acc_im[o][j]);
                    }
        }
#pragma unroll
        for (int o = 0; o < B; ++o)
            detail::finish_columns<Dots, P>(acc_re[o], acc_im[o], xs[o], shift[o],
                                            self + static_cast<std::int64_t>(o) * s.ld, y, s, dots);
    });
    if (Dots) detail::reduce_dots_to_partials<W, P>(dots, partials);
}

/// A view with host-typed values (complex_double, complex_single) as the kernels' (double2,
/// float2): the same layout, the value pointers reinterpreted.
template <class T>
BasicStencilView<typename detail::DeviceComplex<T>::type> device_typed(const BasicStencilView<T>& v)
{
    using V2 = typename detail::DeviceComplex<T>::type;
    BasicStencilView<V2> st;
    st.nx = v.nx;
    st.ny = v.ny;
    st.nz = v.nz;
    st.orbitals = v.orbitals;
    for (int k = 0; k < 3; ++k) st.periodic[k] = v.periodic[k];
    st.num_terms = v.num_terms;
    st.num_entries = v.num_entries;
    st.terms = v.terms;
    st.entry_begin = v.entry_begin;
    st.entry_column = v.entry_column;
    st.entry_value = reinterpret_cast<const V2*>(v.entry_value);
    st.dense_blocks = reinterpret_cast<const V2*>(v.dense_blocks);
    st.potential = v.potential;
    st.potential_per_row = v.potential_per_row;
    st.num_rows = v.num_rows;
    st.field = v.field;
    st.field_blocks = v.field_blocks;
    return st;
}

/// The kernel a strip of width W runs, handed to `launch(kernel, units, threads_per_unit,
/// shared_bytes)` (every kernel of one V2 and Dots has the same type): the site kernel for
/// B = 2, 4 without a field, over sites, with two columns per thread (W / 2 threads per
/// site) in single precision where `pairing` is on and paired_columns() allows; otherwise
/// the row kernel, over rows, W threads each. One choice for stencil_kernels.cu's launches
/// and the host emulation's (tests/unit/cuda/emulated_kernels_test.cpp).
template <int W, bool Dots, class V2, class Launch>
auto with_stencil_kernel(const BasicStencilView<V2>& st, const SweepScalars& s, const V2* x, const V2* y,
                         bool pairing, Launch&& launch)
{
    const bool field = st.field.along != nullptr;  // a field: the row kernel (stencil_kernels.hpp)
    const std::int64_t sites = st.num_rows / (st.orbitals > 0 ? st.orbitals : 1);
    if constexpr (std::is_same_v<V2, float2> && W >= 2)
        if (!field && pairing && detail::paired_columns(s, x, y)) {
            if (st.orbitals == 4) return launch(stencil_site_kernel<W, 4, 2, Dots, V2>, sites, W / 2, site_table_bytes(st));
            if (st.orbitals == 2) return launch(stencil_site_kernel<W, 2, 2, Dots, V2>, sites, W / 2, site_table_bytes(st));
        }
    if (st.orbitals == 4 && !field) return launch(stencil_site_kernel<W, 4, 1, Dots, V2>, sites, W, site_table_bytes(st));
    if (st.orbitals == 2 && !field) return launch(stencil_site_kernel<W, 2, 1, Dots, V2>, sites, W, site_table_bytes(st));
    return launch(stencil_augmented_kernel<W, Dots, V2>, static_cast<std::int64_t>(st.num_rows), W, table_bytes(st));
}

}  // namespace topokpm::numerics::kernels::cuda::stencil
