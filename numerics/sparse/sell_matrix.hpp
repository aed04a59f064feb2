#pragma once
/// @file sell_matrix.hpp
/// SELL-C-σ storage (seed 000 §3, seed 002: pJDS is the σ = N limit). CRS is SELL-1-1
/// through the same code.
///
/// Rows are grouped in chunks of C consecutive (permuted) rows; within each window of σ
/// rows, rows are sorted by descending length before chunking, so rows of similar
/// length share a chunk and padding shrinks. Chunk j stores chunk_length[j] columns
/// "column-major inside the chunk": entry k of row r of the chunk is at
/// chunk_start[j] + k*C + r. Short rows are padded with value 0 and a repeated valid
/// column (the row's last real column, or the row itself for empty rows) so the inner
/// loop has no branch.
///
/// Example, C = 2, σ = 4, rows of lengths 1, 3, 0, 2 (a..f the stored entries, "0" padding
/// with a repeated column, slot p = chunk*C + r):
///
///     row 0: a           sorted in the window     chunk 0 (width 3)   chunk 1 (width 1)
///     row 1: b c d       by length: 3, 2, 1, 0    slot 0 = row 1      slot 2 = row 0
///     row 2: (empty)     -> rows 1, 3, 0, 2       slot 1 = row 3      slot 3 = row 2
///     row 3: e f
///                             values:      | b e | c f | d 0 |   | a 0 |
///                             chunk_start:   0                     6       8
///                             row_of_slot:   1 3 0 2;   fill efficiency β = 6 / 8
///
/// The σ-permutation stays internal: block vectors are always in canonical row order
/// (models.md §2); the kernel reads x[col] with canonical columns and writes
/// y[row_of_slot[...]]. Columns are stored as 32-bit indices; for the single-rank spine
/// row_begin = 0 and they are the global columns themselves.

#include <cstdint>
#include <vector>

#include "numerics/base/first_touch.hpp"
#include "numerics/base/row_source.hpp"
#include "numerics/base/types.hpp"

namespace topokpm::numerics {

struct SellParams {
    int chunk_height = 32;  ///< C >= 1
    int sigma = 256;        ///< sorting window σ >= 1 (rounded to a multiple of C); 1 = no sorting
};

/// The index structure of a SELL-C-σ matrix (everything but the values): what the chunk
/// schedules (sell_schedule.hpp) and the cost model read, whatever the value type.
class SellStructure {
public:
    local_index num_rows() const { return num_rows_; }
    global_index num_cols() const { return num_cols_; }
    int chunk_height() const { return chunk_height_; }
    int sigma() const { return sigma_; }
    local_index num_chunks() const { return static_cast<local_index>(chunk_length_.size()); }
    std::int64_t num_nonzeros() const { return num_nonzeros_; }  ///< without padding
    std::int64_t num_stored() const { return static_cast<std::int64_t>(columns_.size()); }
    /// Fill efficiency β = nnz / stored entries (1 = no padding).
    double fill_efficiency() const;
    /// Bytes of the index data: columns (4) per stored entry, chunk starts (8), lengths (4)
    /// and first rows (4) per chunk, row_of_slot (4) per slot.
    double index_bytes() const;

    const std::vector<std::int64_t>& chunk_start() const { return chunk_start_; }  ///< size chunks+1
    const std::vector<local_index>& chunk_length() const { return chunk_length_; }
    const FirstTouchVector<local_index>& columns() const { return columns_; }
    /// row_of_slot[p] = local row stored at position p (p = chunk*C + r); -1 for the
    /// padding rows of the last chunk.
    const FirstTouchVector<local_index>& row_of_slot() const { return row_of_slot_; }
    /// chunk_first_row[j] = row_of_slot[j*C] when the C slots of chunk j hold the rows
    /// row_of_slot[j*C] + 0, 1, ..., C - 1 (no σ reordering and no padding slot inside the
    /// chunk: most chunks of a lattice model), else -1. With it an R = 1 sweep reads 4 bytes
    /// per chunk instead of 4 per row to place a chunk's sums.
    const std::vector<local_index>& chunk_first_row() const { return chunk_first_row_; }

protected:
    local_index num_rows_ = 0;
    global_index num_cols_ = 0;
    int chunk_height_ = 1;
    int sigma_ = 1;
    std::int64_t num_nonzeros_ = 0;
    std::vector<std::int64_t> chunk_start_;
    std::vector<local_index> chunk_length_;
    std::vector<local_index> chunk_first_row_;
    // Per stored entry and per slot: first touched by the thread that sweeps them.
    FirstTouchVector<local_index> columns_;
    FirstTouchVector<local_index> row_of_slot_;
};

/// SELL-C-σ with values of type T: complex_double (SellMatrix) or complex_single
/// (`--precision single`: the model's double values rounded to nearest complex float), or,
/// for a source whose entries are all real (RowSource::real_valued(), graphene), double or
/// float: the real parts only (8 + 4 instead of 16 + 4 bytes per stored entry; build throws
/// DimensionMismatch if an entry has an imaginary part). The kernels multiply them into
/// complex vectors (ValueTraits<T>::vector).
template <class T>
class BasicSellMatrix : public SellStructure {
public:
    using value_type = T;

    BasicSellMatrix() = default;
    /// `structure` with `values` (one per stored entry: DimensionMismatch otherwise).
    BasicSellMatrix(const SellStructure& structure, FirstTouchVector<T> values);

    /// Builds rows [row_begin, row_end) of `source` (rows generated in parallel, OpenMP;
    /// every array sized by rows or entries is first touched in the kernel's static split
    /// over chunks). The result does not depend on the thread count (bit for bit).
    /// @param source     the row generator (thread-safe row())
    /// @param row_begin  first row, 0 <= row_begin <= row_end
    /// @param row_end    one past the last row, <= source.num_rows(); at most 2^31 - 1 rows
    /// @param params     C >= 1 (1 = CRS) and σ >= 1 (1 = no sorting; else rounded up to a
    ///                   multiple of C)
    /// @throws InputError     C < 1 (--sell-C) or σ < 1 (--sell-sigma)
    /// @throws ResourceError  the range or a column index does not fit 32 bits
    static BasicSellMatrix build(const RowSource& source, global_index row_begin, global_index row_end,
                                 const SellParams& params);

    /// Bytes held: index_bytes() plus sizeof(T) (16, 8 or 4) per stored entry.
    double storage_bytes() const;

    const FirstTouchVector<T>& values() const { return values_; }

private:
    FirstTouchVector<T> values_;
};

extern template class BasicSellMatrix<complex_double>;
extern template class BasicSellMatrix<complex_single>;
extern template class BasicSellMatrix<double>;
extern template class BasicSellMatrix<float>;

using SellMatrix = BasicSellMatrix<complex_double>;

/// The same matrix with every value converted to To (double -> single: each part rounded
/// to nearest, the values BasicSellMatrix<complex_single>::build stores).
template <class To, class From>
BasicSellMatrix<To> convert_values(const BasicSellMatrix<From>& m);

}  // namespace topokpm::numerics
