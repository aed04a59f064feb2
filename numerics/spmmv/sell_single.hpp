#pragma once
/// @file sell_single.hpp
/// `--precision single`: SELL-C-σ with complex-float values and the fused augmented SpMMV
/// on complex-float blocks (seed 004's kernel at half the bytes per value).
///
/// What is single and what is double (the error analysis is in docs/performance.md,
/// "Single precision"):
///   * matrix values and the KPM vectors: complex float (8 bytes instead of 16);
///   * a row's sum over its entries: float (at most ~13 terms, relative error <= 13 u_f);
///   * the row epilogue y = scale (sum - shift x) + beta y: double, rounded once to float
///     (scale and shift are not rounded, so the spectrum is mapped exactly as in double);
///   * the dot products <x|x>, <y|x>: accumulated in double over the rows, from the
///     stored float values (so the moments describe the vectors the recurrence carries).
/// Minimum traffic per row and column: 12 bytes per stored entry (8-byte value, 4-byte
/// column) + 24 bytes per row and column, B_min(R) = (156/R + 24) / 138 bytes/flop at
/// 13 entries per row (half of double's vector traffic, 60 % of its matrix traffic).

#include <cstdint>
#include <memory>
#include <vector>

#include "numerics/base/operator.hpp"
#include "numerics/sparse/sell_matrix.hpp"
#include "numerics/sparse/sell_schedule.hpp"

namespace topokpm::numerics {

/// The structure of a SellMatrix (copied) with its values rounded to complex float. The
/// double matrix may be released once this exists.
struct SellSingleMatrix {
    local_index num_rows = 0;
    int chunk_height = 1;
    int sigma = 1;
    std::int64_t num_nonzeros = 0;
    std::vector<std::int64_t> chunk_start;  ///< size chunks + 1
    std::vector<local_index> chunk_length;
    std::vector<local_index> columns;
    std::vector<complex_single> values;
    std::vector<local_index> row_of_slot;

    local_index num_chunks() const { return static_cast<local_index>(chunk_length.size()); }
    /// Bytes held: values (8) and columns (4) per stored entry, chunk data, row_of_slot.
    double storage_bytes() const;
    /// Copies the structure of `m` and rounds its values to the nearest complex float.
    static SellSingleMatrix from(const SellMatrix& m);
};

namespace kernels::cpu {
/// y := scale (A - shift) x + beta y on complex-float row-major blocks, one sweep, with
/// <x|x> and <y|x> per column (new y) accumulated in double; beta == 0: y is not read.
/// R = 2, 4 or a multiple of 8: register-blocked (a row's complex floats in 128-, 256- or
/// 512-bit vectors); R = 1: the rows of a chunk side by side; other widths a generic loop.
/// `schedule` (may be null: the static split): the chunk order of the cache-blocked sweep,
/// as for the double kernel (numerics/cpu/chunk_schedule.hpp).
void sell_spmmv_single(const SellSingleMatrix& a, const complex_single* x, complex_single* y, int num_cols,
                       const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule = nullptr);
}  // namespace kernels::cpu

/// The single-precision SELL operator: precision() is Single, apply_single() runs the
/// kernel above, apply() (Lanczos bounds, tests) rounds x to float, sweeps in single and
/// widens y back to double.
std::unique_ptr<Operator> make_sell_single_operator(const SellMatrix& matrix);
/// The same with the cache-blocked (y-tiled) sweep order of make_sell_operator(matrix,
/// lattice): the schedules for R = 8, 16, 32 at the current thread count are built here,
/// from the double matrix's structure (other widths and thread counts: the static split).
/// The tile budget counts 16 bytes per value, so a single tile holds twice the rows' worth
/// of cache it could; measured equal within noise (docs/performance.md).
std::unique_ptr<Operator> make_sell_single_operator(const SellMatrix& matrix, const LatticeRowOrder& lattice,
                                                   const TileOptions& options = {});

}  // namespace topokpm::numerics
