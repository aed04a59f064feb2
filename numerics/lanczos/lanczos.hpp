#pragma once
/// @file lanczos.hpp
/// Extremal eigenvalues by the Lanczos method, written against the Operator seam,
/// used for the KPM spectral bounds (models.md §4: "from Lanczos with a safety margin").

#include <cstdint>
#include <vector>

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
/// With an enclosure of nonzero width (and N >= 16) the steps are made from Chebyshev moments
/// of the operator scaled into it: one fused sweep per step (y = 2 Ht x - y with the two dots,
/// the KPM kernel) and no vector pass; where the operator fuses two sweeps per pass over
/// memory (fused_steps(1) == 2), sweeps 1-2, 3-4, ... run as one apply_two_steps, as in the
/// KPM, and are judged one after the other (the same answer, at most one sweep more than
/// `iterations`). The tridiagonal is jacobi_from_chebyshev_moments of
/// the moments, equal to the three-term recurrence's in exact arithmetic. `iterations` then
/// counts sweeps: after s sweeps the enclosure test uses the s Ritz values, the residuals
/// and the tolerance test the s - 1 pairs (their residual needs the moment of sweep s), so
/// max_steps pairs take max_steps + 1 sweeps. Lanczos bounds beyond the enclosure are cut
/// back to it. The moment form runs at most N / 4 sweeps (the moments determine the
/// coefficients less well as the steps near the number of distinct eigenvalues); a system
/// that needs more, or whose Ritz values leave the enclosure, exhausts its start vector
/// (beta at the rounding level), runs the three-term recurrence instead.
///
/// `inside` (optional, with an enclosure): an interval inside the hull of the spectrum
/// (Rayleigh quotients: the model's plane waves, plane_wave_rayleigh_bounds, for any operator
/// of its matrix). When the enclosure lies within margin w of it (w its width), the enclosure
/// is returned before any sweep: iterations = 0, lowest_ritz / highest_ritz = its ends,
/// enclosure_taken (clean graphene: plane waves at k = 0 give +-3 t, the Gershgorin bounds;
/// 17 sweeps found that before).
///
/// Throws NumericalError for a zero operator, InputError for max_steps < 2.
LanczosBounds lanczos_bounds(const Operator& op, int max_steps, std::uint64_t seed, double relative_margin,
                             double tolerance = 1e-4, const SpectralBounds* enclosure = nullptr,
                             const SpectralBounds* inside = nullptr);

/// The Jacobi matrix (Lanczos tridiagonal) of a measure on [-1, 1] from its Chebyshev
/// moments mu_l = int T_l(t) dlambda(t), l = 0 .. L-1: diagonal alpha[0 .. m-1], squared
/// off-diagonals beta[1 .. m-1] (beta[0] = mu_0); for a spectral measure <v|delta(t - Ht)|v>
/// the m x m matrix is the one m Lanczos steps from v give (without rounding). From L
/// moments: m = floor(L / 2) and, for odd L, beta[m] (the residual coefficient of the m
/// pairs). `exhausted`: some beta_k <= `rounding` (or not finite): the measure has (to the
/// moments' accuracy) only k points; then m = k and beta[k] = max(beta_k, 0) is the last entry.
/// Empty when L = 0 or mu_0 <= 0.
struct JacobiMatrix {
    std::vector<double> alpha;
    std::vector<double> beta;
    bool exhausted = false;
    /// sqrt(beta[1 ..]): the off-diagonal of the tridiagonal.
    std::vector<double> off_diagonal() const;
};
JacobiMatrix jacobi_from_chebyshev_moments(const std::vector<double>& mu, double rounding);

}  // namespace topokpm::numerics
