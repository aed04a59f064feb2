#pragma once
/// @file work_split.hpp
/// Static row decomposition over ranks of unequal speed (docs/scaling.md).
///
/// Rows are split into contiguous [begin, end) ranges whose sizes follow the rank
/// weights; every boundary is a multiple of `block` (the orbitals of one lattice site:
/// 4 for the TI model, 2 for graphene), so a site is never split between ranks. The
/// result depends only on the inputs (no timing, no randomness): every rank computes
/// the same split independently.

#include <cstdint>
#include <string>
#include <vector>

namespace topokpm::hetero {

/// One rank's rows, [begin, end).
struct RowRange {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::uint64_t size() const { return end - begin; }
    bool operator==(const RowRange& o) const { return begin == o.begin && end == o.end; }
};

/// True for the --weights value "auto": weights from a measured rate per rank
/// (weights_from_rates), e.g. a short SpMMV or STREAM run on every rank, allgathered.
bool is_auto_weights(const std::string& text);

/// Parses the --weights option "w0:w1:...": one positive finite weight per rank.
/// "" means equal weights; "auto" is not a list (check is_auto_weights first). Throws InputError naming --weights, the value and the
/// allowed form when the text is malformed, a weight is not positive and finite, or
/// the count differs from `num_ranks`.
std::vector<double> parse_weights(const std::string& text, int num_ranks);

/// `auto` weights: rates (rows/s, GB/s, any unit common to all ranks; one per rank,
/// the same vector on every rank) divided by their mean and rounded to 0.01, at least
/// 0.01. The rounding makes the split insensitive to measurement noise below 0.5 % of
/// the mean, so repeated runs on the same machines get the same rows. Throws InputError
/// naming the rank when a rate is not positive and finite.
std::vector<double> weights_from_rates(const std::vector<double>& rates);

/// Exchange-aware `auto` weights: rank q receives halo_rows[q] rows per sweep whatever its
/// share (the faces of its slab) and spends on each about as long as on
/// halo_row_cost = 2 of its own rows (a CPU copies it in and runs the remote correction on
/// it: ~96 bytes per row and column against the 48 of a matrix-free sweep; a stored matrix
/// moves more per own row, so 2 overstates the halo there and errs towards fewer rows on
/// slow ranks). The rows n_q = max(0, T rates[q] - 2 halo_rows[q]), T chosen so that they
/// sum to total_rows, equalise every rank's time (n_q + 2 halo_rows[q]) / rates[q] that
/// owns rows; weights n_q / mean, rounded to 0.01, at least 0.01 (split_rows gives such a
/// rank one block: a rank cannot be empty). Empty halo_rows: weights_from_rates(rates).
/// Same errors as weights_from_rates, and InputError for a negative or non-finite halo or
/// halo_rows of another length.
std::vector<double> weights_from_rates(const std::vector<double>& rates, const std::vector<double>& halo_rows,
                                       double total_rows);
inline constexpr double halo_row_cost = 2.0;

/// Splits `num_rows` rows into weights.size() contiguous ranges proportional to the
/// weights, boundaries at multiples of `block`. Every range is non-empty (at least one
/// block). Throws InputError when num_rows is not a multiple of block or when there are
/// fewer blocks than ranks; DimensionMismatch on empty or non-positive weights.
/// Each range's block count differs from its exact share (weight fraction times the
/// number of blocks) by less than one block, apart from the one-block minimum.
std::vector<RowRange> split_rows(std::uint64_t num_rows, std::uint64_t block,
                                 const std::vector<double>& weights);

}  // namespace topokpm::hetero
