#include "numerics/distributed/row_permutation.hpp"

#include <algorithm>
#include <numeric>

#include "runtime/base/error.hpp"

namespace topokpm::numerics {

RowPermutation::RowPermutation(const std::vector<RowRuns>& runs)
{
    bounds_.push_back(0);
    for (const RowRuns& mine : runs) {
        global_index position = bounds_.back();
        for (const auto& [b, e] : mine) {
            TOPOKPM_REQUIRE(b < e, "empty run [", b, ", ", e, ")");
            by_permuted_.push_back({b, position, e - b});
            position += e - b;
        }
        bounds_.push_back(position);
    }
    by_canonical_ = by_permuted_;
    std::sort(by_canonical_.begin(), by_canonical_.end(),
              [](const Run& a, const Run& b) { return a.canonical < b.canonical; });
    global_index next = 0;
    for (const Run& r : by_canonical_) {
        TOPOKPM_REQUIRE(r.canonical == next, "row runs do not cover the rows exactly once: gap or overlap at row ",
                        std::min(r.canonical, next));
        next = r.canonical + r.length;
    }
    TOPOKPM_REQUIRE(next == bounds_.back(), "row runs cover ", next, " of ", bounds_.back(), " rows");
}

global_index RowPermutation::to_permuted(global_index row) const
{
    const auto it = std::upper_bound(by_canonical_.begin(), by_canonical_.end(), row,
                                     [](global_index v, const Run& r) { return v < r.canonical; });
    const Run& r = *std::prev(it);
    return r.permuted + (row - r.canonical);
}

global_index RowPermutation::to_canonical(global_index position) const
{
    const auto it = std::upper_bound(by_permuted_.begin(), by_permuted_.end(), position,
                                     [](global_index v, const Run& r) { return v < r.permuted; });
    const Run& r = *std::prev(it);
    return r.canonical + (position - r.permuted);
}

PermutedRows::PermutedRows(const RowSource& source, const RowPermutation& order) : source_(source), order_(order)
{
    TOPOKPM_REQUIRE(order.num_rows() == source.num_rows(), "permutation of ", order.num_rows(), " rows for ",
                    source.num_rows());
}

int PermutedRows::row(global_index row, global_index* cols, complex_type* values) const
{
    const int len = source_.row(order_.to_canonical(row), cols, values);
    bool sorted = true;
    for (int k = 0; k < len; ++k) {
        cols[k] = order_.to_permuted(cols[k]);
        sorted = sorted && (k == 0 || cols[k - 1] < cols[k]);
    }
    if (sorted) return len;
    // At most a few dozen entries: sort the pairs through an index.
    int index[256];
    TOPOKPM_REQUIRE(len <= 256, "row of ", len, " entries");
    std::iota(index, index + len, 0);
    std::sort(index, index + len, [&](int a, int b) { return cols[a] < cols[b]; });
    global_index c[256];
    complex_type v[256];
    for (int k = 0; k < len; ++k) {
        c[k] = cols[index[k]];
        v[k] = values[index[k]];
    }
    std::copy(c, c + len, cols);
    std::copy(v, v + len, values);
    return len;
}

}  // namespace topokpm::numerics
