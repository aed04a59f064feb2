#pragma once
/// @file random_source.hpp
/// A seeded random sparse Hermitian matrix as a RowSource, for the storage and kernel
/// tests: row lengths vary strongly (so σ-sorting and padding matter) and some rows are
/// empty (an isolated site, e.g. a vacancy), which exercises the padding of empty rows.

#include <cstdint>

#include "numerics/base/row_source.hpp"

namespace topokpm::testing {

class RandomSparseSource : public RowSource {
public:
    /// @param num_rows       N >= 0
    /// @param seed           any; the same seed gives the same matrix on any thread count
    /// @param empty_fraction probability in [0, 1] that a row (and its column) is empty
    /// @param max_density    in (0, 1]: row i gets a density d_i uniform in [0, max_density],
    ///                       and the pair (i, j) is stored with probability min(d_i, d_j)
    RandomSparseSource(global_index num_rows, std::uint64_t seed, double empty_fraction = 0.1,
                       double max_density = 0.5);

    global_index num_rows() const override { return n_; }
    int max_row_length() const override { return static_cast<int>(n_); }
    /// Diagonal real in [-1, 1); off-diagonal entries with real and imaginary parts in
    /// [-0.5, 0.5), A_ji = conj(A_ij). O(N) per row: meant for N up to a few thousand.
    int row(global_index i, global_index* cols, complex_type* values) const override;

    bool is_empty_row(global_index i) const;

private:
    double density(global_index i) const;
    global_index n_;
    std::uint64_t seed_;
    double empty_fraction_;
    double max_density_;
};

/// The real parts of another source's entries, marked real_valued (the factory then stores
/// one real per entry): of a Hermitian source, a real symmetric matrix.
class RealPartSource final : public RowSource {
public:
    explicit RealPartSource(const RowSource& source) : source_(source) {}
    global_index num_rows() const override { return source_.num_rows(); }
    int max_row_length() const override { return source_.max_row_length(); }
    bool real_valued() const override { return true; }
    int row(global_index row, global_index* cols, complex_type* values) const override
    {
        const int len = source_.row(row, cols, values);
        for (int k = 0; k < len; ++k) values[k] = complex_type(values[k].real(), 0.0);
        return len;
    }

private:
    const RowSource& source_;
};

}  // namespace topokpm::testing
