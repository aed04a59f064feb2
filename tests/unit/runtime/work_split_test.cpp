#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "runtime/base/error.hpp"
#include "runtime/hetero/work_split.hpp"

using namespace topokpm;
using namespace topokpm::hetero;

namespace {

void expect_input_error(const std::string& text, int ranks, const std::string& part)
{
    try {
        parse_weights(text, ranks);
        FAIL() << "no InputError for '" << text << "'";
    } catch (const InputError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("{weights}"), std::string::npos) << msg;
        EXPECT_NE(msg.find("w0:w1:..."), std::string::npos) << msg;
        EXPECT_NE(msg.find(part), std::string::npos) << msg;
    }
}

void expect_valid_split(const std::vector<RowRange>& r, std::uint64_t rows, std::uint64_t block)
{
    ASSERT_FALSE(r.empty());
    EXPECT_EQ(r.front().begin, 0u);
    EXPECT_EQ(r.back().end, rows);
    for (std::size_t i = 0; i < r.size(); ++i) {
        EXPECT_LT(r[i].begin, r[i].end) << "rank " << i << " empty";
        EXPECT_EQ(r[i].begin % block, 0u);
        EXPECT_EQ(r[i].end % block, 0u);
        if (i > 0) {
            EXPECT_EQ(r[i].begin, r[i - 1].end);
        }
    }
}

}  // namespace

TEST(ParseWeights, ParsesColonSeparatedList)
{
    EXPECT_EQ(parse_weights("1:2.75", 2), (std::vector<double>{1.0, 2.75}));
    EXPECT_EQ(parse_weights("3", 1), (std::vector<double>{3.0}));
    EXPECT_EQ(parse_weights("1e-3:2:0.5", 3), (std::vector<double>{1e-3, 2.0, 0.5}));
}

TEST(ParseWeights, EmptyMeansEqual) { EXPECT_EQ(parse_weights("", 3), (std::vector<double>{1, 1, 1})); }

TEST(ParseWeights, RejectsBadText)
{
    expect_input_error("1:2", 3, "2 weights for 3 ranks");
    expect_input_error("1:2:3", 2, "3 weights for 2 ranks");
    expect_input_error("1::2", 3, "empty weight number 2");
    expect_input_error("1:", 2, "empty weight");
    expect_input_error("a:1", 2, "weight number 1 is not a number");
    expect_input_error("1x:1", 2, "weight number 1 is not a number");
    expect_input_error(" 1:1", 2, "not a number");
    expect_input_error("0:1", 2, "not positive and finite");
    expect_input_error("-1:1", 2, "weight number 1 is not positive and finite");
    expect_input_error("1:x", 2, "weight number 2 is not a number");  // by position, not by its text
    expect_input_error("inf:1", 2, "weight number 1 is not a number");
    expect_input_error("nan:1", 2, "weight number 1 is not a number");
    expect_input_error("1e999:1", 2, "weight number 1 is not a number");
    expect_input_error("0x1p1:1", 2, "weight number 1 is not a number");
    expect_input_error("auto", 2, "measured rates");
}

TEST(AutoWeights, FromMeasuredRates)
{
    EXPECT_TRUE(is_auto_weights("auto"));
    EXPECT_FALSE(is_auto_weights("1:1"));
    // Rates 16.4 and 45.1 GB/s (one socket, one GPU, seed 000): mean 30.75.
    EXPECT_EQ(weights_from_rates({16.4, 45.1}), (std::vector<double>{0.53, 1.47}));
    // Equal rates up to noise below 0.5 % of the mean give equal weights, so the split
    // does not move between runs.
    EXPECT_EQ(weights_from_rates({24.0, 24.05, 23.96}), (std::vector<double>{1.0, 1.0, 1.0}));
    // A very slow rank keeps the minimum weight 0.01 (and split_rows still gives it a site).
    EXPECT_EQ(weights_from_rates({1e-6, 100.0}), (std::vector<double>{0.01, 2.0}));
    EXPECT_EQ(split_rows(40, 4, weights_from_rates({1e-6, 100.0})).front().size(), 4u);
}

TEST(AutoWeights, ChargeEachRanksHaloAsTwoOwnRows)
{
    // Rates 1 and 3, 10 halo rows each, 100 rows: n_q = T r_q - 2 * 10 with 4 T - 40 = 100,
    // T = 35: rows 15 and 85 (each rank's time (n_q + 20) / r_q = 35), weights n_q / 50.
    EXPECT_EQ(weights_from_rates({1.0, 3.0}, {10.0, 10.0}, 100.0), (std::vector<double>{0.3, 1.7}));
    // Equal rates and halos: equal weights, as without the halo.
    EXPECT_EQ(weights_from_rates({5.0, 5.0, 5.0}, {8.0, 8.0, 8.0}, 300.0), (std::vector<double>{1.0, 1.0, 1.0}));
    // The H200 node (issue 36): GPU 66x the 8-core CPU rank, each slab's halo 2 of 200
    // planes of 32000 rows. Rate-proportional: 0.03 (3 planes, the CPU rank the slower);
    // charged for its halo the CPU rank is worth no rows: the minimum, one plane.
    const std::vector<double> h200 = weights_from_rates({66.0, 1.0}, {64000.0, 64000.0}, 6.4e6);
    EXPECT_EQ(h200, (std::vector<double>{2.0, 0.01}));
    EXPECT_EQ(split_rows(6400000, 32000, h200).back().size(), 32000u);
    EXPECT_EQ(weights_from_rates({66.0, 1.0}), (std::vector<double>{1.97, 0.03}));
    // No halo model (a matrix-market file): the rates alone.
    EXPECT_EQ(weights_from_rates({16.4, 45.1}, {}, 1000.0), weights_from_rates({16.4, 45.1}));
    EXPECT_THROW(weights_from_rates({1.0, 2.0}, {1.0}, 10.0), DimensionMismatch);
    EXPECT_THROW(weights_from_rates({1.0, 0.0}, {1.0, 1.0}, 10.0), InputError);
}

TEST(AutoWeights, RejectsBadRates)
{
    EXPECT_THROW(weights_from_rates({}), InputError);
    EXPECT_THROW(weights_from_rates({1.0, 0.0}), InputError);
    try {
        weights_from_rates({1.0, 2.0, std::nan("")});
        FAIL() << "no InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("rank 2"), std::string::npos) << e.what();
    }
}

TEST(SplitRows, HandCases)
{
    // 8 sites of 4 orbitals, equal: 2 sites each.
    EXPECT_EQ(split_rows(32, 4, {1, 1, 1, 1}),
              (std::vector<RowRange>{{0, 8}, {8, 16}, {16, 24}, {24, 32}}));
    // 1:3 over 8 sites: 2 and 6 sites.
    EXPECT_EQ(split_rows(16, 2, {1, 3}), (std::vector<RowRange>{{0, 4}, {4, 16}}));
    // 1:2.75 over 15 sites: share 4.0 and 11.0.
    EXPECT_EQ(split_rows(60, 4, {1, 2.75}), (std::vector<RowRange>{{0, 16}, {16, 60}}));
    // One rank takes everything.
    EXPECT_EQ(split_rows(12, 4, {5}), (std::vector<RowRange>{{0, 12}}));
    // Block 1: plain row split; 10 over 3 equal: cumulative 3.33, 6.67 -> 3, 7.
    EXPECT_EQ(split_rows(10, 1, {1, 1, 1}), (std::vector<RowRange>{{0, 3}, {3, 7}, {7, 10}}));
}

TEST(SplitRows, ProportionalWithinOneBlock)
{
    const std::vector<std::vector<double>> cases = {
        {1, 2.75}, {1, 1, 1, 1, 1, 1, 1}, {0.3, 5, 1, 2, 0.01, 7}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}};
    for (const auto& w : cases) {
        for (std::uint64_t block : {1u, 2u, 4u}) {
            const std::uint64_t rows = 100003 * block;
            const auto r = split_rows(rows, block, w);
            expect_valid_split(r, rows, block);
            const double total = std::accumulate(w.begin(), w.end(), 0.0);
            for (std::size_t i = 0; i < w.size(); ++i) {
                const double share = static_cast<double>(rows) * w[i] / total;
                EXPECT_LE(std::abs(static_cast<double>(r[i].size()) - share), static_cast<double>(block))
                    << "rank " << i << " block " << block;
            }
        }
    }
}

TEST(SplitRows, EveryRankNonEmptyEvenWithTinyWeights)
{
    // Rank 1's share is far below one site: it still gets exactly one.
    const auto r = split_rows(40, 4, {1000, 1e-6, 1000});
    expect_valid_split(r, 40, 4);
    EXPECT_EQ(r[1].size(), 4u);
    // As many sites as ranks: one site each whatever the weights.
    const auto s = split_rows(12, 4, {1e-9, 5, 1e9});
    EXPECT_EQ(s, (std::vector<RowRange>{{0, 4}, {4, 8}, {8, 12}}));
}

TEST(SplitRows, Deterministic)
{
    const std::vector<double> w = {1.1, 0.9, 2.5, 0.7, 1.3};
    EXPECT_EQ(split_rows(4 * 12345, 4, w), split_rows(4 * 12345, 4, w));
}

TEST(SplitRows, Errors)
{
    EXPECT_THROW(split_rows(8, 4, {1, 1, 1}), InputError);   // 2 sites, 3 ranks
    EXPECT_THROW(split_rows(10, 4, {1}), InputError);        // not whole sites
    EXPECT_THROW(split_rows(8, 0, {1}), InputError);
    EXPECT_THROW(split_rows(8, 4, {}), DimensionMismatch);
    EXPECT_THROW(split_rows(8, 4, {1, -1}), DimensionMismatch);
    try {
        split_rows(8, 4, {1, 1, 1});
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("at most 2 ranks"), std::string::npos) << e.what();
    }
}
