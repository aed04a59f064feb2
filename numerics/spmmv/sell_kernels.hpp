#pragma once
/// @file sell_kernels.hpp
/// The kernel contract of the augmented SpMMV over SELL-C-σ, one namespace per backend:
/// cpu (numerics/cpu/sell_kernels.cpp), reference (numerics/reference/naive_kernels.cpp)
/// and cuda (numerics/cuda/sell_kernels.cu; device blocks, see reduce_kernels.hpp).
///
/// Every kernel computes, for all R columns of the row-major blocks x and y (element
/// (i, c) at [i * R + c]):
///     y := scale * (A - shift) * x + beta * y        (beta == 0: y overwritten, never read)
/// and with dots != nullptr: dots->xx[c] = <x_c|x_c>, dots->yx[c] = <y_c|x_c> (new y).
/// Cost per sweep (counted as in seed 004 Table I, perf_model.hpp): per block column
/// 8 flops per stored entry (one complex multiply-add) + 34 per row (shift, scale, axpby and
/// the two dots with complex scalars; 138 flops per row at 13 entries). With the real
/// scale/shift/beta of AugmentedOps the kernels execute 10 + 12 = 22 of those 34.
/// Minimum traffic per sweep: 20 bytes per stored entry (16-byte value, 4-byte column) +
/// 48 bytes per row and column (x read, y read, y written), i.e. the code balance
/// B_min(R) = (260/R + 48)/138 bytes/flop for 13 entries per row.
///
/// @param a         the matrix; its row_of_slot() maps storage slots to canonical rows
/// @param x         input block, a.num_rows() x num_cols, canonical row order
/// @param y         output block, same shape, must not alias x
/// @param num_cols  block width R >= 1
/// @param ops       scale, shift, beta (any finite reals) as above
/// @param dots      nullptr: no dots; else reset to R columns and filled

#include "numerics/base/operator.hpp"
#include "numerics/sparse/sell_matrix.hpp"
#include "numerics/sparse/sell_schedule.hpp"
#include "numerics/spmmv/reduce_kernels.hpp"

namespace topokpm::numerics::kernels {

namespace cpu {
/// Fused kernel, OpenMP over chunks; R in {1, 2, 4, 8, 16, 32} compile-time specialised,
/// other widths a generic loop (one PERFWARNING per width). Dots are reduced per thread
/// and summed in thread order (deterministic for a fixed thread count).
void sell_spmmv(const SellMatrix& a, const complex_type* x, complex_type* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots);

/// The same with the chunks visited in the order of `schedule` (sell_schedule.hpp; e.g.
/// lattice_chunk_schedule(a, lattice, num_cols, omp_get_max_threads())). nullptr, or a
/// schedule for another thread count or chunk count: the static split as above. Dots are
/// summed per thread in schedule order, then in thread order (deterministic for a fixed
/// schedule and thread count; equal to the static split's up to rounding).
void sell_spmmv(const SellMatrix& a, const complex_type* x, complex_type* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule);

/// Single precision (`--precision single`): the same contract on complex-float blocks and
/// values; a row's sum over its entries is float, the epilogue y = scale (sum - shift x) +
/// beta y is double rounded once to float, and the dots are accumulated in double from the
/// stored floats, except in the register-blocked groups at R >= 2, whose epilogue is float
/// (scale and -shift dithered over the rows, dots in float runs of kSingleDotRun rows; the
/// contract of numerics/spmmv/stencil_kernels.hpp, kernels::cpu::FloatRowEpilogue).
/// R = 2, 4 or a multiple of 8: register-blocked (a row's complex floats in
/// 128-, 256- or 512-bit vectors); R = 1: the rows of a chunk side by side; other widths
/// a generic loop. Minimum traffic 12 bytes per stored entry + 24 per row and column.
void sell_spmmv(const BasicSellMatrix<complex_single>& a, const complex_single* x, complex_single* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule);

/// Real-valued matrices (RowSource::real_valued(), e.g. graphene) with complex vectors: the
/// same contract, arithmetic and widths, each stored value multiplying both parts of x (one
/// product per part instead of a complex one). Minimum traffic 12 (double) or 8 (float)
/// bytes per stored entry + 48 or 24 per row and column.
void sell_spmmv(const BasicSellMatrix<double>& a, const complex_double* x, complex_double* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule);
void sell_spmmv(const BasicSellMatrix<float>& a, const complex_single* x, complex_single* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule);

/// The SIMD instruction set the CPU kernels were compiled for ("AVX-512", "AVX2" or the
/// portable fallback); printed by kpm-dos and spmmv-bench so a run says which path ran.
const char* compiled_isa();
}  // namespace cpu

namespace reference {
/// The naive path of seed 004, Fig. 3: per column a plain SpMV into a temporary, then
/// separate sweeps for shift/scale, axpby and each dot product.
void sell_spmmv(const SellMatrix& a, const complex_type* x, complex_type* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots);
}  // namespace reference

namespace cuda {
/// A SELL-C-σ matrix in device memory (layout of numerics/sparse/sell_matrix.hpp), with
/// values of type T: complex_double (16 bytes per stored entry) or complex_single (8).
template <class T>
struct BasicSellView {
    local_index num_rows = 0;
    local_index num_chunks = 0;
    int chunk_height = 32;                      ///< C (any C >= 1; 32 = one warp per chunk at R = 1)
    const std::int64_t* chunk_start = nullptr;  ///< num_chunks + 1 offsets into columns/values
    const local_index* chunk_length = nullptr;  ///< entries per row of each chunk (with padding)
    const local_index* columns = nullptr;       ///< canonical column of each stored entry
    const T* values = nullptr;                  ///< one per stored entry
    const local_index* row_of_slot = nullptr;   ///< num_chunks * C; -1 for padding rows
};
using SellView = BasicSellView<complex_double>;

/// A view of `m`'s arrays in host memory: the CUDA operator replaces each pointer by its
/// device copy's; tests/unit/cuda/emulated_kernels_test.cpp sweeps it on the host emulation.
template <class T>
BasicSellView<T> host_sell_view(const BasicSellMatrix<T>& m)
{
    BasicSellView<T> view;
    view.num_rows = static_cast<local_index>(m.num_rows());
    view.num_chunks = static_cast<local_index>(m.num_chunks());
    view.chunk_height = m.chunk_height();
    view.chunk_start = m.chunk_start().data();
    view.chunk_length = m.chunk_length().data();
    view.columns = m.columns().data();
    view.values = m.values().data();
    view.row_of_slot = m.row_of_slot().data();
    return view;
}

/// The augmented SpMMV over a SELL-C-σ matrix, T = complex_double or complex_single (both
/// instantiated in sell_kernels.cu). x and y are device pointers to N x R blocks
/// (N = a.num_rows) that must not alias.
///
/// Single precision (`--precision single` on the GPU): the same sweep on complex-float
/// values and blocks. A row's sum over its entries is float (fused multiply-adds, the double
/// kernel's order); the epilogue y = scale (sum - shift x) + beta y is double (scale, shift,
/// beta not rounded) and rounded once to float; the dots are summed in double from the
/// stored float x and y, as in double (per thread, warp shuffles, the fixed-order reduction:
/// bitwise reproducible). Only the kernels with dots are compiled in single (every caller
/// wants them): without dots the same kernel runs and its sums are dropped (y is the same).
/// Minimum traffic 12 bytes per stored entry + 24 per row and column.
template <class T>
SweepInfo sell_spmmv(const BasicSellView<T>& a, const T* x, T* y, int num_cols, const AugmentedOps& ops,
                     DotWorkspace& workspace, DotSums* dots);
}  // namespace cuda

}  // namespace topokpm::numerics::kernels
