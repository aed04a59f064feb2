// The test helper RandomSparseSource: Hermitian, ragged, with empty rows, reproducible.
#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <set>

#include "tests/support/dense_oracle.hpp"
#include "tests/support/random_source.hpp"

using namespace topokpm;
using topokpm::testing::RandomSparseSource;

TEST(RandomSparseSource, IsHermitianWithAscendingColumnsRaggedRowsAndEmptyRows)
{
    const global_index n = 257;
    const RandomSparseSource src(n, 9);

    const auto a = topokpm::testing::dense_matrix(src);

    for (global_index i = 0; i < n; ++i)
        for (global_index j = 0; j < n; ++j) ASSERT_EQ(a[i + j * n], std::conj(a[j + i * n])) << i << "," << j;
    std::vector<global_index> cols(n);
    std::vector<complex_type> vals(n);
    std::set<int> lengths;
    int empty = 0;
    for (global_index i = 0; i < n; ++i) {
        const int len = src.row(i, cols.data(), vals.data());
        EXPECT_TRUE(std::is_sorted(cols.begin(), cols.begin() + len));
        EXPECT_EQ(std::adjacent_find(cols.begin(), cols.begin() + len), cols.begin() + len);
        EXPECT_EQ(len == 0, src.is_empty_row(i));
        lengths.insert(len);
        empty += len == 0;
    }
    EXPECT_GT(empty, 0);
    EXPECT_GT(lengths.size(), 20u);  // strongly varying row lengths
}

TEST(RandomSparseSource, SameSeedSameMatrixOtherSeedOtherMatrix)
{
    EXPECT_EQ(topokpm::testing::dense_matrix(RandomSparseSource(50, 1)),
              topokpm::testing::dense_matrix(RandomSparseSource(50, 1)));
    EXPECT_NE(topokpm::testing::dense_matrix(RandomSparseSource(50, 1)),
              topokpm::testing::dense_matrix(RandomSparseSource(50, 2)));
}
