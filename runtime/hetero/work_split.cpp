#include "runtime/hetero/work_split.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "runtime/base/error.hpp"
#include "runtime/base/parse.hpp"

namespace topokpm::hetero {

namespace {

[[noreturn]] void bad_weights(const std::string& text, const std::string& why)
{
    throw InputError(detail::concat("{weights} '", text, "': ", why,
                                    " (allowed: \"w0:w1:...\" with one positive finite weight per rank, or \"auto\")"));
}

/// The measured rates' sum; InputError for none or one that is not positive and finite.
double checked_rate_sum(const std::vector<double>& rates)
{
    TOPOKPM_USER_REQUIRE(!rates.empty(), "auto weights need one measured rate per rank, got none");
    double sum = 0.0;
    for (std::size_t r = 0; r < rates.size(); ++r) {
        TOPOKPM_USER_REQUIRE(std::isfinite(rates[r]) && rates[r] > 0.0, "{weights} auto: the measured rate of rank ",
                             r, " is ", rates[r], "; every rank needs a positive finite rate");
        sum += rates[r];
    }
    return sum;
}

}  // namespace

bool is_auto_weights(const std::string& text) { return text == "auto"; }

std::vector<double> weights_from_rates(const std::vector<double>& rates)
{
    const double mean = checked_rate_sum(rates) / static_cast<double>(rates.size());
    std::vector<double> weights;
    for (double rate : rates) weights.push_back(std::max(0.01, std::round(100.0 * rate / mean) / 100.0));
    return weights;
}

std::vector<double> weights_from_rates(const std::vector<double>& rates, const std::vector<double>& halo_rows,
                                       double total_rows)
{
    if (halo_rows.empty()) return weights_from_rates(rates);
    const double rate_sum = checked_rate_sum(rates);
    TOPOKPM_REQUIRE(halo_rows.size() == rates.size(), halo_rows.size(), " halo sizes for ", rates.size(), " ranks");
    TOPOKPM_REQUIRE(std::isfinite(total_rows) && total_rows > 0.0, "auto weights of ", total_rows, " rows");
    double halo_sum = 0.0;
    for (std::size_t q = 0; q < rates.size(); ++q) {
        TOPOKPM_REQUIRE(std::isfinite(halo_rows[q]) && halo_rows[q] >= 0.0, "halo of ", halo_rows[q], " rows on rank ", q);
        halo_sum += halo_rows[q];
    }
    // Rows at time T: sum_q max(0, T r_q - c h_q), non-decreasing in T; at T_hi every term is
    // at least T_hi r_q - c h_q, whose sum is total_rows. Bisection to a relative 1e-12.
    const auto rows_at = [&](double t) {
        double n = 0.0;
        for (std::size_t q = 0; q < rates.size(); ++q) n += std::max(0.0, t * rates[q] - halo_row_cost * halo_rows[q]);
        return n;
    };
    double lo = 0.0, hi = (total_rows + halo_row_cost * halo_sum) / rate_sum;
    for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; ++it) {
        const double mid = 0.5 * (lo + hi);
        (rows_at(mid) < total_rows ? lo : hi) = mid;
    }
    const double mean = total_rows / static_cast<double>(rates.size());
    std::vector<double> weights;
    for (std::size_t q = 0; q < rates.size(); ++q) {
        const double n = std::max(0.0, hi * rates[q] - halo_row_cost * halo_rows[q]);
        weights.push_back(std::max(0.01, std::round(100.0 * n / mean) / 100.0));
    }
    return weights;
}

std::vector<double> parse_weights(const std::string& text, int num_ranks)
{
    TOPOKPM_REQUIRE(num_ranks >= 1, "number of ranks must be at least 1, got ", num_ranks);
    if (text.empty()) return std::vector<double>(static_cast<std::size_t>(num_ranks), 1.0);
    if (is_auto_weights(text))
        bad_weights(text, "'auto' takes measured rates (weights_from_rates), not a list");

    std::vector<double> weights;
    std::size_t start = 0;
    while (true) {
        const std::size_t colon = text.find(':', start);
        const std::string field =
            text.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        // Items are named by their number (from 1), not their text: a --config value is
        // left out of the message (app/cli), and so must be each piece of it.
        const std::size_t item = weights.size() + 1;
        if (field.empty()) bad_weights(text, detail::concat("empty weight number ", item));
        double w = 0.0;
        if (!parse::real(field, w))
            bad_weights(text, detail::concat("weight number ", item, " is not a number (finite, decimal)"));
        if (!(w > 0.0))
            bad_weights(text, detail::concat("weight number ", item, " is not positive and finite"));
        weights.push_back(w);
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    if (weights.size() != static_cast<std::size_t>(num_ranks))
        bad_weights(text, detail::concat(weights.size(), " weights for ", num_ranks, " ranks"));
    return weights;
}

std::vector<RowRange> split_rows(std::uint64_t num_rows, std::uint64_t block,
                                 const std::vector<double>& weights)
{
    TOPOKPM_REQUIRE(!weights.empty(), "split_rows needs at least one weight");
    TOPOKPM_USER_REQUIRE(block >= 1, "block (orbitals per site) must be at least 1, got ", block);
    TOPOKPM_USER_REQUIRE(num_rows % block == 0, "number of rows ", num_rows,
                         " is not a multiple of the block (orbitals per site) ", block);
    long double total = 0.0L;
    for (double w : weights) {
        TOPOKPM_REQUIRE(std::isfinite(w) && w > 0.0, "weights must be positive and finite, got ", w);
        total += w;
    }
    const std::uint64_t blocks = num_rows / block;
    const std::uint64_t ranks = weights.size();
    TOPOKPM_USER_REQUIRE(blocks >= ranks, "cannot split ", num_rows, " rows (", blocks,
                         " sites of ", block, " orbitals) over ", ranks,
                         " ranks: every rank needs at least one site; use at most ", blocks, " ranks");

    // Boundaries in blocks: the rounded cumulative share, then clamped so that every
    // rank keeps at least one block (forward pass) and leaves one for each rank after
    // it (backward pass). Both passes keep the boundaries ascending.
    std::vector<std::uint64_t> bound(ranks + 1, 0);
    long double cumulative = 0.0L;
    for (std::uint64_t i = 1; i < ranks; ++i) {
        cumulative += weights[i - 1];
        const long double exact = static_cast<long double>(blocks) * cumulative / total;
        bound[i] = static_cast<std::uint64_t>(std::llround(exact));
    }
    bound[ranks] = blocks;
    for (std::uint64_t i = 1; i < ranks; ++i) bound[i] = std::max(bound[i], bound[i - 1] + 1);
    for (std::uint64_t i = ranks - 1; i >= 1; --i) bound[i] = std::min(bound[i], bound[i + 1] - 1);

    std::vector<RowRange> ranges(ranks);
    for (std::uint64_t i = 0; i < ranks; ++i) ranges[i] = {bound[i] * block, bound[i + 1] * block};
    return ranges;
}

}  // namespace topokpm::hetero
