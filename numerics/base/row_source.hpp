#pragma once
/// @file row_source.hpp
/// The row-generator interface (GHOST's "matrix from a row function"): a Hamiltonian
/// tells, for any global row, its stored column indices and values. Both storage
/// formats (SELL-C-σ, CRS = SELL-1-1) and the Matrix Market export are built from it,
/// for any [row_begin, row_end) range, so a rank can build only its own rows.

#include <string>

#include "numerics/base/types.hpp"

namespace topokpm {

class RowSource {
public:
    virtual ~RowSource() = default;

    /// Number of rows N (= number of columns; the matrix is square and Hermitian).
    virtual global_index num_rows() const = 0;

    /// Upper bound on the stored entries of any row (size of the buffers given to row()).
    virtual int max_row_length() const = 0;

    /// Writes the stored entries of global row `row` (0 <= row < num_rows()) into
    /// `cols` and `values`, columns strictly ascending; returns their number
    /// (<= max_row_length()). Thread-safe: may be called concurrently.
    virtual int row(global_index row, global_index* cols, complex_type* values) const = 0;

    /// Exact number of stored entries in [row_begin, row_end).
    virtual global_index num_nonzeros(global_index row_begin, global_index row_end) const;

    /// True when every entry of every row has imaginary part exactly 0 (graphene): stored
    /// formats may then keep real values (BasicSellMatrix<double>, 12 instead of 20 bytes
    /// per entry) and multiply them into complex vectors. Default false (always correct).
    virtual bool real_valued() const { return false; }
};

/// Sorts the first `len` entries of a row by column, stably (equal columns keep their order),
/// by insertion: for the short rows of a lattice model (up to a few dozen entries) that
/// row() generators write in lattice order.
inline void insertion_sort_row(int len, global_index* cols, complex_type* values)
{
    for (int a = 1; a < len; ++a) {
        const global_index c = cols[a];
        const complex_type v = values[a];
        int k = a;
        for (; k > 0 && cols[k - 1] > c; --k) {
            cols[k] = cols[k - 1];
            values[k] = values[k - 1];
        }
        cols[k] = c;
        values[k] = v;
    }
}

/// Spectral bounds [lower, upper] of a Hermitian matrix.
struct SpectralBounds {
    double lower = 0.0;
    double upper = 0.0;
};

/// Gershgorin discs of all rows: lower = min_i (Re a_ii - sum_{j!=i} |a_ij|), upper likewise.
SpectralBounds gershgorin_bounds(const RowSource& source);
/// The same over the discs of rows [row_begin, row_end) only (a rank's share; the
/// min/max over the ranks' results is the bound of the whole matrix). An empty range
/// gives [+inf, -inf].
SpectralBounds gershgorin_bounds(const RowSource& source, global_index row_begin, global_index row_end);

}  // namespace topokpm
