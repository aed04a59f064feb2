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
    SpectralBounds bounds;      ///< Ritz values widened by residual + margin
};

/// Runs up to `max_steps` Lanczos steps (no reorthogonalisation: extremal Ritz values are
/// not affected by the loss of orthogonality, only duplicated) from a random-phase start
/// vector of stream splitmix64(seed, 3), stopping early when both extremal residuals
/// fall below `tolerance` times the spectral width (1e-4 is plenty for KPM bounds: the
/// residual is added to the bounds, which then hold rigorously for converged Ritz values). The bounds are
/// [lowest - residual_low - margin*width, highest + residual_high + margin*width].
/// Throws NumericalError for a zero operator, InputError for max_steps < 2.
LanczosBounds lanczos_bounds(const Operator& op, int max_steps, std::uint64_t seed,
                             double relative_margin, double tolerance = 1e-4);

}  // namespace topokpm::numerics
