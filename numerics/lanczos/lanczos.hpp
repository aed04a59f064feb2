#pragma once
/// @file lanczos.hpp
/// Extremal eigenvalues by the Lanczos method, written against the Operator seam,
/// used for the KPM spectral bounds (models.md §4: "from Lanczos with a safety margin").

#include <cstdint>

#include "numerics/base/operator.hpp"
#include "numerics/base/row_source.hpp"

namespace topokpm::numerics {

struct LanczosBounds {
    double lowest_ritz = 0.0;   ///< smallest Ritz value (an upper bound of E_min)
    double highest_ritz = 0.0;  ///< largest Ritz value (a lower bound of E_max)
    double residual_low = 0.0;  ///< |beta_m s_m| of the lowest Ritz pair (energy units)
    double residual_high = 0.0; ///< same for the highest
    int iterations = 0;         ///< Lanczos steps taken
    bool enclosure_taken = false;  ///< bounds are the given rigorous enclosure (see below)
    SpectralBounds bounds;      ///< Ritz values widened by residual + margin, or the enclosure
};

/// Runs up to `max_steps` Lanczos steps (no reorthogonalisation: extremal Ritz values are
/// not affected by the loss of orthogonality, only duplicated) from a start vector of random
/// signs, (+-1 +-i) / sqrt(2 N), of stream splitmix64(seed, 3). With width w = highest - lowest Ritz value, the
/// bounds are
///     [lowest - residual_low - margin w, highest + residual_high + margin w],
/// margin = `relative_margin`. It stops as soon as both extremal residuals are at most
/// `tolerance` w: KPM needs the bounds to contain the spectrum, not sharp eigenvalues, so
/// `tolerance` = `relative_margin` (0.005: some 30-40 steps on the lattice models) gives
/// bounds at most 2 margin w outside the Ritz values; a tiny `tolerance` (1e-10) converges
/// the extremal eigenvalues themselves.
///
/// `enclosure` (optional): bounds known to contain the spectrum (Gershgorin). When they lie
/// within margin w of the Ritz values (lower >= lowest - margin w and upper <= highest +
/// margin w), no Lanczos bound can be tighter: the run stops and returns them
/// (enclosure_taken; clean graphene, whose Gershgorin discs end at the band edges +-3 t).
///
/// Throws NumericalError for a zero operator, InputError for max_steps < 2.
LanczosBounds lanczos_bounds(const Operator& op, int max_steps, std::uint64_t seed, double relative_margin,
                             double tolerance = 1e-4, const SpectralBounds* enclosure = nullptr);

}  // namespace topokpm::numerics
