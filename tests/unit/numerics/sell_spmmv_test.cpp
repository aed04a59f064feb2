// SELL-C-σ storage and the fused augmented SpMMV against a dense loop and the naive path.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/dense_operator.hpp"
#include "tests/support/dense_oracle.hpp"

using namespace topokpm;
using namespace topokpm::numerics;

namespace {

/// Rows of varying length (0 .. n), including empty rows: row i has entries in columns
/// j with a counter-hash test, so lengths differ strongly and σ-sorting matters.
class RaggedSource : public RowSource {
public:
    explicit RaggedSource(global_index n) : n_(n) {}
    global_index num_rows() const override { return n_; }
    int max_row_length() const override { return static_cast<int>(n_); }
    int row(global_index i, global_index* cols, complex_type* vals) const override
    {
        if (i % 7 == 3) return 0;  // empty rows
        const double density = 0.05 + 0.9 * uniform(99, std::uint64_t(i));
        int len = 0;
        for (global_index j = 0; j < n_; ++j)
            if (uniform(5, std::uint64_t(i * n_ + j)) < density) {
                cols[len] = j;
                vals[len++] = complex_type(uniform(6, std::uint64_t(i * n_ + j)) - 0.5, uniform(7, std::uint64_t(i * n_ + j)) - 0.5);
            }
        return len;
    }

private:
    global_index n_;
};

}  // namespace

TEST(SellMatrix, HandCheckedLayoutAndFillEfficiency)
{
    // Lengths of rows 0..4: row 3 is empty (i % 7 == 3); others random. Check invariants
    // that hold for any lengths, then a tiny explicit case.
    RaggedSource src(5);
    const SellMatrix m = SellMatrix::build(src, 0, 5, {2, 4});
    EXPECT_EQ(m.num_chunks(), 3);
    EXPECT_EQ(m.sigma(), 4);
    EXPECT_EQ(m.num_nonzeros(), src.num_nonzeros(0, 5));
    std::vector<local_index> seen(m.row_of_slot());
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<local_index>{-1, 0, 1, 2, 3, 4}));  // a permutation plus one padding slot

    // 3 rows of lengths 1, 3, 2 with C = 2, no sorting: chunks {0,1} width 3, {2,pad} width 2
    // -> stored 2*3 + 2*2 = 10, nnz 6, beta = 0.6. With σ = 2 rows 0, 1 swap inside the window.
    struct Three : RowSource {
        global_index num_rows() const override { return 3; }
        int max_row_length() const override { return 3; }
        int row(global_index i, global_index* c, complex_type* v) const override
        {
            const int len[] = {1, 3, 2};
            for (int k = 0; k < len[i]; ++k) { c[k] = k; v[k] = complex_type(double(i + 1), double(k)); }
            return len[i];
        }
    } three;
    const SellMatrix a = SellMatrix::build(three, 0, 3, {2, 1});
    EXPECT_EQ(a.num_stored(), 10);
    EXPECT_DOUBLE_EQ(a.fill_efficiency(), 0.6);
    EXPECT_EQ(a.chunk_length(), (std::vector<local_index>{3, 2}));
    // padding of row 0 repeats its last column (0) with value 0
    EXPECT_EQ(a.columns()[0 * 2 + 0], 0);
    EXPECT_EQ(a.columns()[1 * 2 + 0], 0);
    EXPECT_EQ(a.values()[1 * 2 + 0], complex_type(0.0));
    const SellMatrix b = SellMatrix::build(three, 0, 3, {2, 2});
    EXPECT_EQ(b.row_of_slot()[0], 1);
    EXPECT_EQ(b.row_of_slot()[1], 0);
    EXPECT_THROW(SellMatrix::build(three, 0, 3, {0, 1}), InputError);
    EXPECT_THROW(SellMatrix::build(three, 0, 3, {1, 0}), InputError);
}

// y = scale (A - shift) x + beta y per column. Each entry is a sum of <= n products;
// different summation orders differ by <= n eps sum_j |a_ij||x_j| (+ the axpby terms), with
// |a_ij| <= 0.71, |x_j| = 1: tolerance 4 n eps (n + 2) covers it.
TEST(SellSpmmv, FusedEqualsNaiveEqualsDenseForManyShapes)
{
    for (const global_index n : {1, 7, 33, 100}) {
        RaggedSource src(n);
        const topokpm::testing::DenseOperator dense(topokpm::testing::dense_matrix(src), n);
        const double tol = 4.0 * n * (n + 2) * std::numeric_limits<double>::epsilon();
        for (const int c : {1, 2, 4, 8, 32})
            for (const int sigma : {1, c, 64, static_cast<int>(n)}) {
                auto m = std::make_shared<SellMatrix>(SellMatrix::build(src, 0, n, {c, sigma}));
                const auto fused = make_sell_operator(m);
                const auto naive = make_naive_operator(m);
                for (const int r : {1, 2, 3, 4, 5, 8, 16, 32})
                    for (const double beta : {0.0, -1.0, 0.5}) {
                        BlockVector x(n, r), y0(n, r);
                        fill_random_phase_vectors(x, 1, 0, n);
                        fill_random_phase_vectors(y0, 2, 0, n);
                        const AugmentedOps ops{0.7, -0.3, beta, true};
                        BlockVector yd = y0, yf = y0, yn = y0;
                        if (beta == 0.0)  // garbage that must be ignored, not multiplied by 0
                            for (size_t i = 0; i < yf.size(); ++i)
                                yf.data()[i] = yn.data()[i] = complex_type(std::nan(""), std::nan(""));
                        DotSums dd, df, dn;
                        dense.apply(x, yd, ops, &dd);
                        fused->apply(x, yf, ops, &df);
                        naive->apply(x, yn, ops, &dn);
                        for (size_t i = 0; i < yd.size(); ++i) {
                            ASSERT_LT(std::abs(yf.data()[i] - yd.data()[i]), tol) << n << " C=" << c << " s=" << sigma << " R=" << r;
                            ASSERT_LT(std::abs(yn.data()[i] - yd.data()[i]), tol) << n << " C=" << c << " s=" << sigma << " R=" << r;
                        }
                        for (int k = 0; k < r; ++k) {
                            EXPECT_NEAR(df.xx[k], dd.xx[k], tol * n);
                            EXPECT_LT(std::abs(df.yx[k] - dd.yx[k]), tol * n * (n + 2));
                            EXPECT_LT(std::abs(dn.yx[k] - dd.yx[k]), tol * n * (n + 2));
                        }
                    }
            }
    }
}

TEST(SellSpmmv, WithoutDotsLeavesDotSumsAlone)
{
    RaggedSource src(20);
    auto m = std::make_shared<SellMatrix>(SellMatrix::build(src, 0, 20, {4, 8}));
    BlockVector x(20, 2), y(20, 2);
    fill_random_phase_vectors(x, 1, 0, 20);
    DotSums d;
    make_sell_operator(m)->apply(x, y, AugmentedOps{1.0, 0.0, 0.0, false}, &d);
    EXPECT_TRUE(d.xx.empty());
}

// One and two threads: same y bit for bit (rows are independent), dots to rounding.
TEST(SellSpmmv, ThreadCountChangesOnlyTheDotSummationOrder)
{
    const global_index n = 257;
    RaggedSource src(n);
    auto m = std::make_shared<SellMatrix>(SellMatrix::build(src, 0, n, {8, 32}));
    const auto op = make_sell_operator(m);
    BlockVector x(n, 4), y1(n, 4), y2(n, 4);
    fill_random_phase_vectors(x, 3, 0, n);
    DotSums d1, d2;
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    op->apply(x, y1, AugmentedOps{1.0, 0.2, 0.0, true}, &d1);
    omp_set_num_threads(2);
    op->apply(x, y2, AugmentedOps{1.0, 0.2, 0.0, true}, &d2);
    omp_set_num_threads(saved);
    for (size_t i = 0; i < y1.size(); ++i) EXPECT_EQ(y1.data()[i], y2.data()[i]);
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(d1.xx[k], d2.xx[k], 1e-12 * n);
}
