// SELL-C-σ storage: the layout of a hand-checked tiny matrix, CRS as SELL-1-1, the
// σ-permutation, padding, and the errors of SellMatrix::build.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "numerics/sparse/sell_matrix.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/dense_oracle.hpp"
#include "tests/support/random_source.hpp"

using namespace topokpm;
using namespace topokpm::numerics;
using topokpm::testing::RandomSparseSource;

namespace {

/// The example drawn in sell_matrix.hpp: rows of lengths 1, 3, 0, 2; entry k of row i is
/// (i + 1) + k i in column k (columns need not make a Hermitian matrix for the layout).
class DrawingSource : public RowSource {
public:
    global_index num_rows() const override { return 4; }
    int max_row_length() const override { return 3; }
    int row(global_index i, global_index* cols, complex_type* vals) const override
    {
        const int len[] = {1, 3, 0, 2};
        for (int k = 0; k < len[i]; ++k) {
            cols[k] = k;
            vals[k] = complex_type(double(i + 1), double(k));
        }
        return len[i];
    }
};

/// One row whose only column is beyond 32 bits (a huge matrix's rank owning row 0).
class HugeSource : public RowSource {
public:
    global_index num_rows() const override { return (global_index(1) << 31) + 5; }
    int max_row_length() const override { return 1; }
    int row(global_index, global_index* cols, complex_type* vals) const override
    {
        cols[0] = (global_index(1) << 31) + 1;
        vals[0] = 1.0;
        return 1;
    }
};

template <class V>
std::vector<typename V::value_type> as_vector(const V& v)
{
    return {v.begin(), v.end()};
}

}  // namespace

TEST(SellMatrix, HandCheckedTinyMatrixMatchesTheHeaderDrawing)
{
    const DrawingSource src;

    const SellMatrix m = SellMatrix::build(src, 0, 4, {2, 4});

    EXPECT_EQ(m.num_chunks(), 2);
    EXPECT_EQ(as_vector(m.row_of_slot()), (std::vector<local_index>{1, 3, 0, 2}));
    EXPECT_EQ(m.chunk_length(), (std::vector<local_index>{3, 1}));
    EXPECT_EQ(m.chunk_start(), (std::vector<std::int64_t>{0, 6, 8}));
    EXPECT_EQ(m.num_nonzeros(), 6);
    EXPECT_EQ(m.num_stored(), 8);
    EXPECT_DOUBLE_EQ(m.fill_efficiency(), 0.75);  // 6 / 8
    // values | b e | c f | d 0 | a 0 | with b c d = row 1, e f = row 3, a = row 0
    const std::vector<complex_type> expected{{2, 0}, {4, 0}, {2, 1}, {4, 1}, {2, 2}, {0, 0}, {1, 0}, {0, 0}};
    EXPECT_EQ(as_vector(m.values()), expected);
    // padding: row 3 repeats its last column 1; empty row 2 uses itself
    EXPECT_EQ(as_vector(m.columns()), (std::vector<local_index>{0, 0, 1, 1, 2, 1, 0, 2}));
    // both chunks hold σ-sorted (non-consecutive) rows
    EXPECT_EQ(m.chunk_first_row(), (std::vector<local_index>{-1, -1}));
    // 8 x (16 + 4) + 3 chunk starts x 8 + 2 lengths x 4 + 2 first rows x 4 + 4 slots x 4
    EXPECT_DOUBLE_EQ(m.storage_bytes(), 160.0 + 24.0 + 8.0 + 8.0 + 16.0);
}

TEST(SellMatrix, ChunkHeightOneSigmaOneIsCrs)
{
    const RandomSparseSource src(33, 5);

    const SellMatrix m = SellMatrix::build(src, 0, 33, {1, 1});

    std::vector<global_index> cols(33);
    std::vector<complex_type> vals(33);
    for (global_index i = 0; i < 33; ++i) {
        const int len = src.row(i, cols.data(), vals.data());
        EXPECT_EQ(m.row_of_slot()[i], i);
        EXPECT_EQ(m.chunk_length()[i], len);  // row pointer differences of CRS
        for (int k = 0; k < len; ++k) {
            EXPECT_EQ(m.columns()[m.chunk_start()[i] + k], cols[k]);
            EXPECT_EQ(m.values()[m.chunk_start()[i] + k], vals[k]);
        }
    }
    EXPECT_DOUBLE_EQ(m.fill_efficiency(), 1.0);
}

// For any (C, σ): row_of_slot is a permutation of the rows followed by -1 for the last
// chunk's padding slots, rows never leave their σ-window, lengths do not increase inside a
// window, a chunk is as wide as its longest row, padding is (0, valid column), the stored
// entries reproduce the matrix exactly, and chunk_first_row follows its definition slot by
// slot (an R = 1 sweep writes the C rows from the first one on where it is >= 0, so a wrong
// entry would write rows the chunk does not hold).
TEST(SellMatrix, SigmaSortingIsAPermutationInsideWindowsAndStoresTheMatrixExactly)
{
    int consecutive_chunks = 0, other_chunks = 0;
    for (const global_index n : {1, 7, 33, 257}) {
        const RandomSparseSource src(n, 11);
        const std::vector<complex_type> dense = topokpm::testing::dense_matrix(src);
        std::vector<global_index> cols(n);
        std::vector<complex_type> vals(n);
        std::vector<local_index> length(n);
        for (global_index i = 0; i < n; ++i) length[i] = src.row(i, cols.data(), vals.data());
        for (const int c : {1, 2, 4, 8, 32})
            for (const int sigma : {1, c, 64, static_cast<int>(n), 1000}) {
                SCOPED_TRACE("n=" + std::to_string(n) + " C=" + std::to_string(c) + " sigma=" + std::to_string(sigma));

                const SellMatrix m = SellMatrix::build(src, 0, n, {c, sigma});

                ASSERT_EQ(m.num_chunks(), (n + c - 1) / c);
                EXPECT_EQ(m.sigma() == 1 || m.sigma() % c == 0, true);
                const auto& slot = m.row_of_slot();
                ASSERT_EQ(static_cast<global_index>(slot.size()), m.num_chunks() * c);
                std::vector<local_index> sorted(slot.begin(), slot.begin() + n);
                std::sort(sorted.begin(), sorted.end());
                for (global_index i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
                for (size_t p = n; p < slot.size(); ++p) EXPECT_EQ(slot[p], -1);
                const global_index window = m.sigma();
                for (global_index p = 0; p < n; ++p) {
                    EXPECT_EQ(slot[p] / window, p / window) << "row left its window";
                    if (window > 1 && p % window != 0) {
                        EXPECT_GE(length[slot[p - 1]], length[slot[p]]);
                    }
                }
                std::vector<complex_type> rebuilt(static_cast<size_t>(n * n));
                std::int64_t real_entries = 0;
                for (local_index ch = 0; ch < m.num_chunks(); ++ch) {
                    local_index widest = 0;
                    for (int r = 0; r < c; ++r) {
                        const local_index row = slot[static_cast<size_t>(ch) * c + r];
                        const local_index len = row >= 0 ? length[row] : 0;
                        widest = std::max(widest, len);
                        for (local_index k = 0; k < m.chunk_length()[ch]; ++k) {
                            const std::int64_t idx = m.chunk_start()[ch] + static_cast<std::int64_t>(k) * c + r;
                            ASSERT_GE(m.columns()[idx], 0);
                            ASSERT_LT(m.columns()[idx], n);
                            if (k >= len) {
                                EXPECT_EQ(m.values()[idx], complex_type(0.0));
                            } else {
                                rebuilt[static_cast<size_t>(row + m.columns()[idx] * n)] += m.values()[idx];
                                ++real_entries;
                            }
                        }
                    }
                    EXPECT_EQ(m.chunk_length()[ch], widest);
                    bool consecutive = true;
                    for (int r = 0; r < c; ++r)
                        consecutive = consecutive && slot[static_cast<size_t>(ch) * c + r] >= 0 &&
                                      slot[static_cast<size_t>(ch) * c + r] == slot[static_cast<size_t>(ch) * c] + r;
                    EXPECT_EQ(m.chunk_first_row()[ch], consecutive ? slot[static_cast<size_t>(ch) * c] : -1) << ch;
                    ++(consecutive ? consecutive_chunks : other_chunks);
                }
                EXPECT_EQ(real_entries, m.num_nonzeros());
                EXPECT_EQ(rebuilt, dense);
                EXPECT_GT(m.fill_efficiency(), 0.0);
                EXPECT_LE(m.fill_efficiency(), 1.0);
            }
    }
    EXPECT_GT(consecutive_chunks, 0);  // both kinds of chunk occur
    EXPECT_GT(other_chunks, 0);
}

TEST(SellMatrix, SortingShrinksPaddingOfRaggedRows)
{
    const RandomSparseSource src(257, 3);

    const double unsorted = SellMatrix::build(src, 0, 257, {8, 1}).fill_efficiency();
    const double sorted = SellMatrix::build(src, 0, 257, {8, 257}).fill_efficiency();

    EXPECT_GT(sorted, unsorted);
}

TEST(SellMatrix, SubRangeHoldsOnlyItsRowsWithGlobalColumns)
{
    const RandomSparseSource src(40, 2);

    const SellMatrix m = SellMatrix::build(src, 10, 30, {4, 8});

    EXPECT_EQ(m.num_rows(), 20);
    EXPECT_EQ(m.num_cols(), 40);
    EXPECT_EQ(m.num_nonzeros(), src.num_nonzeros(10, 30));
}

TEST(SellMatrix, RejectsBadChunkHeightAndSigmaNamingTheOption)
{
    const DrawingSource src;
    try {
        SellMatrix::build(src, 0, 4, {0, 1});
        FAIL() << "C = 0 accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("{sell_chunk_height}"), std::string::npos) << e.what();
    }
    try {
        SellMatrix::build(src, 0, 4, {4, 0});
        FAIL() << "sigma = 0 accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("{sell_sigma}"), std::string::npos) << e.what();
    }
}

TEST(SellMatrix, ColumnBeyond32BitsIsAResourceError)
{
    const HugeSource src;
    EXPECT_THROW(SellMatrix::build(src, 0, 1, {32, 1}), ResourceError);
}

// The threaded build (every pass static over chunks, first touch by the sweeping thread)
// stores the same bits whatever the thread count: 1 (the serial build), 2 and 3 threads,
// for sorted and unsorted windows, a ragged last chunk and both value types.
template <class T>
void expect_same_build_on_1_2_3_threads(const RowSource& src, const SellParams& p)
{
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const auto serial = BasicSellMatrix<T>::build(src, 0, src.num_rows(), p);
    for (const int threads : {2, 3}) {
        omp_set_num_threads(threads);
        const auto m = BasicSellMatrix<T>::build(src, 0, src.num_rows(), p);
        const std::string what = "C=" + std::to_string(p.chunk_height) + " sigma=" + std::to_string(p.sigma) +
                                 " threads=" + std::to_string(threads);
        EXPECT_EQ(as_vector(m.row_of_slot()), as_vector(serial.row_of_slot())) << what;
        EXPECT_EQ(m.chunk_start(), serial.chunk_start()) << what;
        EXPECT_EQ(m.chunk_length(), serial.chunk_length()) << what;
        EXPECT_EQ(as_vector(m.columns()), as_vector(serial.columns())) << what;
        EXPECT_EQ(m.num_nonzeros(), serial.num_nonzeros()) << what;
        ASSERT_EQ(m.values().size(), serial.values().size()) << what;
        EXPECT_EQ(0, std::memcmp(m.values().data(), serial.values().data(), m.values().size() * sizeof(T))) << what;
    }
    omp_set_num_threads(saved);
}

TEST(SellMatrix, ThreadedBuildIsBitwiseTheSerialBuild)
{
    const RandomSparseSource src(1003, 17, 0.1, 0.02);  // 1003 rows: the last chunk is ragged for C = 8, 32
    for (const SellParams p : {SellParams{8, 1}, SellParams{8, 64}, SellParams{32, 256}, SellParams{1, 1}}) {
        expect_same_build_on_1_2_3_threads<complex_double>(src, p);
        expect_same_build_on_1_2_3_threads<complex_single>(src, p);
    }
}
