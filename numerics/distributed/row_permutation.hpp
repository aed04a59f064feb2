#pragma once
/// @file row_permutation.hpp
/// The row order of a decomposition whose ranks do not own one range of the canonical
/// order (a 2-D (x, y) tiling, docs/scaling.md): rank-major, canonical order inside a rank.
///
/// Rank p owns the canonical runs runs[p] (ascending, disjoint); its rows get the
/// consecutive positions [bounds[p], bounds[p+1]) of the permuted order, in the order of
/// its runs. So each rank's rows are one contiguous range again and the distributed
/// operator, the SELL builder and the kernels work unchanged on PermutedRows, the matrix
/// P A P^T in that order. Vectors in memory are in the local order; the global vectors
/// (start vectors, checkpoints) stay defined on canonical rows via the runs.

#include <vector>

#include "numerics/base/row_source.hpp"
#include "numerics/base/types.hpp"

namespace topokpm::numerics {

class RowPermutation {
public:
    /// runs[p]: the canonical rows of rank p. Together they must cover [0, N) exactly once
    /// (DimensionMismatch otherwise). Memory and construction: O(number of runs).
    explicit RowPermutation(const std::vector<RowRuns>& runs);

    global_index num_rows() const { return bounds_.back(); }
    /// P + 1 positions: rank p's rows are [bounds[p], bounds[p+1]) of the permuted order.
    const std::vector<global_index>& bounds() const { return bounds_; }
    /// Position of canonical row `row` (0 <= row < N) in the permuted order; O(log runs).
    global_index to_permuted(global_index row) const;
    /// Canonical row at position `position` of the permuted order; O(log runs).
    global_index to_canonical(global_index position) const;

private:
    struct Run {
        global_index canonical = 0, permuted = 0, length = 0;
    };
    std::vector<Run> by_canonical_, by_permuted_;
    std::vector<global_index> bounds_;
};

/// The rows of `source` in the permuted order with columns renumbered alike (and sorted
/// ascending, as a RowSource must): the matrix P A P^T. `source` and `order` must outlive it.
class PermutedRows final : public RowSource {
public:
    PermutedRows(const RowSource& source, const RowPermutation& order);
    global_index num_rows() const override { return source_.num_rows(); }
    int max_row_length() const override { return source_.max_row_length(); }
    bool real_valued() const override { return source_.real_valued(); }
    int row(global_index row, global_index* cols, complex_type* values) const override;

private:
    const RowSource& source_;
    const RowPermutation& order_;
};

}  // namespace topokpm::numerics
