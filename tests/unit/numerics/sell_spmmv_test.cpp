// The fused augmented SpMMV over SELL-C-σ (kernels::cpu) and the naive path
// (kernels::reference) against a dense long-double loop, for many (C, σ, R) shapes.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "tests/support/dense_oracle.hpp"
#include "tests/support/random_source.hpp"

using namespace topokpm;
using namespace topokpm::numerics;
using topokpm::testing::RandomSparseSource;
using topokpm::testing::RealPartSource;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();  // u = eps / 2; bounds below use eps

// Tolerances, derived. Row i has m_i stored entries. In double, the sum s_i = Σ_k a_ik x_k
// in any order satisfies |ŝ - s| <= γ_{m_i} Σ|a_ik x_k| plus the complex product's own
// error (<= √2 γ_2 |a||x| per term), γ_m = m u / (1 - m u), u = eps / 2; padding adds exact
// zeros. The epilogue y = scale (s - shift x) + beta y adds at most 4 roundings on each term.
// So, to first order and with room for the √2 factors,
//     |ŷ_i - y_i| <= 2 eps [(m_i + 4) |scale| Σ_k |a_ik||x_k| + 4 (|scale shift||x_i| + |beta||y_i|)].
// The reference is accumulated in long double (u = 2^-64), 2^11 times more accurate:
// its own error is below the margin. Dots: xx = Σ|x_i|^2 (non-negative terms) and
// yx = Σ conj(y_i) x_i over N rows: |error| <= 2 (N + 2) eps Σ|x_i|^2, and
// <= 2 (N + 2) eps Σ|y_i||x_i| + Σ bound_i |x_i| (the y error carried into the sum).
struct Reference {
    std::vector<complex_type> y;      // row-major N x R
    std::vector<double> bound;        // per entry of y
    std::vector<double> xx, xx_bound;
    std::vector<complex_type> yx;
    std::vector<double> yx_bound;
};

Reference reference_apply(const std::vector<complex_type>& a, const std::vector<int>& row_length, global_index n,
                          const BlockVector& x, const BlockVector& y0, const AugmentedOps& ops)
{
    using cld = std::complex<long double>;
    const int r = x.num_cols();
    Reference ref;
    ref.y.resize(static_cast<size_t>(n) * r);
    ref.bound.resize(ref.y.size());
    ref.xx.assign(r, 0.0);
    ref.xx_bound.assign(r, 0.0);
    ref.yx.assign(r, 0.0);
    ref.yx_bound.assign(r, 0.0);
    for (int c = 0; c < r; ++c) {
        long double xx = 0;
        cld yx = 0;
        double abs_yx = 0, carried = 0, sum_xx = 0;
        for (global_index i = 0; i < n; ++i) {
            cld s = 0;
            double abs_s = 0;
            for (global_index j = 0; j < n; ++j) {
                s += cld(a[i + j * n]) * cld(x(j, c));
                abs_s += std::abs(a[i + j * n]) * std::abs(x(j, c));
            }
            cld v = cld(ops.scale) * (s - cld(ops.shift) * cld(x(i, c)));
            if (ops.beta != 0.0) v += cld(ops.beta) * cld(y0(i, c));
            const complex_type yi(static_cast<double>(v.real()), static_cast<double>(v.imag()));
            const size_t e = static_cast<size_t>(i) * r + c;
            ref.y[e] = yi;
            ref.bound[e] = 2 * kEps *
                           ((row_length[i] + 4) * std::abs(ops.scale) * abs_s +
                            4 * (std::abs(ops.scale * ops.shift) * std::abs(x(i, c)) +
                                 (ops.beta != 0.0 ? std::abs(ops.beta) * std::abs(y0(i, c)) : 0.0)));
            xx += std::norm(cld(x(i, c)));
            yx += std::conj(v) * cld(x(i, c));
            sum_xx += std::norm(x(i, c));
            abs_yx += std::abs(yi) * std::abs(x(i, c));
            carried += ref.bound[e] * std::abs(x(i, c));
        }
        ref.xx[c] = static_cast<double>(xx);
        ref.yx[c] = complex_type(static_cast<double>(yx.real()), static_cast<double>(yx.imag()));
        ref.xx_bound[c] = 2 * (n + 2) * kEps * sum_xx;
        ref.yx_bound[c] = 2 * (n + 2) * kEps * abs_yx + carried;
    }
    return ref;
}

std::vector<int> row_lengths(const RowSource& src)
{
    std::vector<global_index> cols(src.max_row_length());
    std::vector<complex_type> vals(src.max_row_length());
    std::vector<int> len(src.num_rows());
    for (global_index i = 0; i < src.num_rows(); ++i) len[i] = src.row(i, cols.data(), vals.data());
    return len;
}

void fill_nan(BlockVector& y)
{
    for (size_t i = 0; i < y.size(); ++i) y.data()[i] = complex_type(std::nan(""), std::nan(""));
}

void expect_matches(const Reference& ref, const BlockVector& y, const DotSums* dots, const std::string& what)
{
    for (size_t e = 0; e < ref.y.size(); ++e)
        ASSERT_LE(std::abs(y.data()[e] - ref.y[e]), ref.bound[e]) << what << " entry " << e;
    if (dots == nullptr) return;
    for (size_t c = 0; c < ref.xx.size(); ++c) {
        ASSERT_LE(std::abs(dots->xx[c] - ref.xx[c]), ref.xx_bound[c]) << what << " xx column " << c;
        ASSERT_LE(std::abs(dots->yx[c] - ref.yx[c]), ref.yx_bound[c]) << what << " yx column " << c;
    }
}

}  // namespace

// Sizes with partial last chunks and empty rows; C in {1, 2, 4, 8, 16, 32}, σ in {1, C, 64, N};
// every specialised width and the generic one (3, 5); beta 0 (with NaN garbage in y),
// -1 (the KPM step) and 0.5; with and without dots.
TEST(SellSpmmv, FusedAndNaiveEqualTheDenseReferenceForManyShapes)
{
    for (const global_index n : {1, 7, 33, 257}) {
        const RandomSparseSource src(n, 42);
        const std::vector<complex_type> dense = topokpm::testing::dense_matrix(src);
        const std::vector<int> length = row_lengths(src);
        std::vector<std::pair<std::string, std::shared_ptr<SellMatrix>>> matrices;
        for (const int c : {1, 2, 4, 8, 16, 32})
            for (const int sigma : {1, c, 64, static_cast<int>(n)})
                matrices.emplace_back("C=" + std::to_string(c) + " sigma=" + std::to_string(sigma),
                                      std::make_shared<SellMatrix>(SellMatrix::build(src, 0, n, {c, sigma})));
        for (const int r : {1, 2, 3, 4, 5, 8, 16, 32}) {
            BlockVector x(n, r), y0(n, r);
            fill_random_phase_vectors(x, 1, 0, n);
            fill_random_phase_vectors(y0, 2, 0, n);
            for (const double beta : {0.0, -1.0, 0.5}) {
                const AugmentedOps ops{0.7, -0.3, beta, true};
                const Reference ref = reference_apply(dense, length, n, x, y0, ops);
                for (const auto& [label, m] : matrices) {
                    const std::string what =
                        "N=" + std::to_string(n) + " " + label + " R=" + std::to_string(r) + " beta=" + std::to_string(beta);
                    for (const bool naive : {false, true}) {
                        const auto op = naive ? make_naive_operator(m) : make_sell_operator(m);
                        for (const bool want_dots : {true, false}) {
                            BlockVector y = y0;
                            if (beta == 0.0) fill_nan(y);  // must be overwritten, never multiplied by 0
                            DotSums dots;
                            AugmentedOps o = ops;
                            o.want_dots = want_dots;

                            op->apply(x, y, o, &dots);

                            expect_matches(ref, y, want_dots ? &dots : nullptr,
                                           what + (naive ? " naive" : " fused") + (want_dots ? " dots" : ""));
                            if (!want_dots) {
                                EXPECT_TRUE(dots.xx.empty()) << what;
                            }
                        }
                    }
                }
            }
        }
    }
}

// Real stored values (one double per entry, graphene's path) against the same dense
// reference: C in {2, 6} (register groups of 2 rows at R = 2: one value per row) and {4, 8, 16}
// (groups of 4 or more rows: R = 2 loads 4 rows' values at once), C = 1 (the generic sweep at
// R = 2); the bounds above hold as they are (a real value times a complex x has fewer roundings).
TEST(SellSpmmv, RealValuesEqualTheDenseReference)
{
    for (const global_index n : {7, 33, 257}) {
        const RandomSparseSource random(n, 17);
        const RealPartSource src(random);
        const std::vector<complex_type> dense = topokpm::testing::dense_matrix(src);
        const std::vector<int> length = row_lengths(src);
        for (const int r : {1, 2, 3, 4, 8}) {
            BlockVector x(n, r), y0(n, r);
            fill_random_phase_vectors(x, 1, 0, n);
            fill_random_phase_vectors(y0, 2, 0, n);
            for (const double beta : {0.0, -1.0}) {
                const AugmentedOps ops{0.7, -0.3, beta, true};
                const Reference ref = reference_apply(dense, length, n, x, y0, ops);
                for (const int c : {1, 2, 4, 6, 8, 16})
                    for (const int sigma : {1, 64}) {
                        const auto m = std::make_shared<const BasicSellMatrix<double>>(
                            BasicSellMatrix<double>::build(src, 0, n, {c, sigma}));
                        const auto op = make_sell_operator(m);
                        const std::string what = op->name() + " N=" + std::to_string(n) + " R=" + std::to_string(r) +
                                                 " beta=" + std::to_string(beta);
                        ASSERT_NE(op->name().find("-real"), std::string::npos) << what;
                        BlockVector y = y0;
                        if (beta == 0.0) fill_nan(y);
                        DotSums dots;
                        op->apply(x, y, ops, &dots);
                        expect_matches(ref, y, &dots, what);
                    }
            }
        }
    }
}

TEST(SellSpmmv, BetaZeroIgnoresNanAndInfGarbageInY)
{
    const RandomSparseSource src(33, 4);
    auto m = std::make_shared<SellMatrix>(SellMatrix::build(src, 0, 33, {8, 16}));
    BlockVector x(33, 4), clean(33, 4), garbage(33, 4);
    fill_random_phase_vectors(x, 1, 0, 33);
    for (size_t i = 0; i < garbage.size(); ++i)
        garbage.data()[i] = i % 2 ? complex_type(std::nan(""), 0.0) : complex_type(INFINITY, -INFINITY);
    for (const bool naive : {false, true}) {
        const auto op = naive ? make_naive_operator(m) : make_sell_operator(m);
        BlockVector a = clean, b = garbage;
        DotSums da, db;

        op->apply(x, a, AugmentedOps{1.3, 0.1, 0.0, true}, &da);
        op->apply(x, b, AugmentedOps{1.3, 0.1, 0.0, true}, &db);

        for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], b.data()[i]) << (naive ? "naive" : "fused");
        EXPECT_EQ(da.yx, db.yx);
    }
}

// Rows are independent, so y is bit for bit the same on 1 and 2 threads; only the dot sums'
// order changes (to rounding, bounds as above); for a fixed thread count the dots are
// reproducible bit for bit (thread-order reduction, no atomics).
TEST(SellSpmmv, OneAndTwoThreadsAgreeToRoundingAndRepeatBitForBit)
{
    const global_index n = 257;
    const RandomSparseSource src(n, 8);
    auto m = std::make_shared<SellMatrix>(SellMatrix::build(src, 0, n, {8, 32}));
    const auto op = make_sell_operator(m);
    const AugmentedOps ops{0.5, 0.2, -1.0, true};
    for (const int r : {1, 4, 5, 32}) {
        BlockVector x(n, r), y0(n, r);
        fill_random_phase_vectors(x, 3, 0, n);
        fill_random_phase_vectors(y0, 4, 0, n);
        const Reference ref = reference_apply(topokpm::testing::dense_matrix(src), row_lengths(src), n, x, y0, ops);
        BlockVector y1 = y0, y2 = y0, y3 = y0;
        DotSums d1, d2, d3;
        const int saved = omp_get_max_threads();

        omp_set_num_threads(1);
        op->apply(x, y1, ops, &d1);
        omp_set_num_threads(2);
        op->apply(x, y2, ops, &d2);
        op->apply(x, y3, ops, &d3);
        omp_set_num_threads(saved);

        for (size_t i = 0; i < y1.size(); ++i) ASSERT_EQ(y1.data()[i], y2.data()[i]) << "R=" << r;
        for (int c = 0; c < r; ++c) {
            EXPECT_LE(std::abs(d1.xx[c] - d2.xx[c]), 2 * ref.xx_bound[c]);
            EXPECT_LE(std::abs(d1.yx[c] - d2.yx[c]), 2 * ref.yx_bound[c]);
        }
        EXPECT_EQ(d2.xx, d3.xx);
        EXPECT_EQ(d2.yx, d3.yx);
    }
}

TEST(SellSpmmv, OperatorNamesTellLayoutAndPath)
{
    const RandomSparseSource src(10, 1);
    auto crs = std::make_shared<SellMatrix>(SellMatrix::build(src, 0, 10, {1, 1}));
    auto sell = std::make_shared<SellMatrix>(SellMatrix::build(src, 0, 10, {4, 8}));

    EXPECT_EQ(make_sell_operator(crs)->name(), "crs");
    EXPECT_EQ(make_naive_operator(crs)->name(), "naive-crs");
    EXPECT_EQ(make_sell_operator(sell)->name(), "sell-4-8");
    EXPECT_DOUBLE_EQ(make_sell_operator(sell)->cost().nonzeros, double(sell->num_nonzeros()));
}

// C = 64 at R = 1: two register groups of 32 rows per chunk, so a consecutive chunk's second
// group is placed at its first row + 32 (the shapes above have one group per chunk); σ = 1
// (consecutive chunks, a partial last one) and σ = 64 (sorted ones).
TEST(SellSpmmv, TwoGroupsPerChunkAtWidthOneEqualTheDenseReference)
{
    const global_index n = 257;
    const RandomSparseSource src(n, 5);
    const std::vector<complex_type> dense = topokpm::testing::dense_matrix(src);
    const std::vector<int> length = row_lengths(src);
    BlockVector x(n, 1), y0(n, 1);
    fill_random_phase_vectors(x, 1, 0, n);
    fill_random_phase_vectors(y0, 2, 0, n);
    const AugmentedOps ops{0.7, -0.3, -1.0, true};
    const Reference ref = reference_apply(dense, length, n, x, y0, ops);
    for (const int sigma : {1, 64}) {
        const auto m = std::make_shared<SellMatrix>(SellMatrix::build(src, 0, n, {64, sigma}));
        ASSERT_EQ(m->chunk_first_row()[0] >= 0, sigma == 1);
        BlockVector y = y0;
        DotSums dots;
        make_sell_operator(m)->apply(x, y, ops, &dots);
        expect_matches(ref, y, &dots, "C=64 sigma=" + std::to_string(sigma));
    }
}
