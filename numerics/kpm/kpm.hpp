#pragma once
/// @file kpm.hpp
/// The Kernel Polynomial Method moments driver, written once against the Operator seam
/// (models.md §4, seed 004 Fig. 5). Every backend (SELL-C-σ, matrix-free, naive, later
/// CUDA and MPI-distributed operators) runs through the same loop.

#include <cstdint>
#include <functional>
#include <vector>

#include "numerics/base/block_vector.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/base/row_source.hpp"

namespace topokpm::numerics {

/// Ht = (H - b) / a maps the spectrum into [-1 + eps/2, 1 - eps/2] (models.md §4).
struct KpmScaling {
    double a = 1.0;  ///< half-width of the scaled interval, energy units
    double b = 0.0;  ///< centre, energy units
};

/// a = (Emax - Emin) / (2 - epsilon), b = (Emax + Emin) / 2. Throws InputError if
/// Emax <= Emin or epsilon is not in [0, 1).
KpmScaling kpm_scaling(const SpectralBounds& bounds, double epsilon);

/// Called after every sweep with (moments done, moments total); may be empty.
using KpmProgress = std::function<void(int moments_done, int num_moments)>;

/// Raw Chebyshev moments of a block of start vectors, one row per column r:
/// raw[r * M + n] = <r| T_n(Ht) |r> (not divided by anything). `start` (N x R) is
/// consumed (used as workspace). Uses 1 + floor((M-1)/2) augmented sweeps, each giving two
/// moments: mu_2k = 2<v_k|v_k> - mu_0 and mu_2k+1 = 2 Re<v_k+1|v_k> - mu_1.
/// Requires M >= 2.
std::vector<double> chebyshev_moments(const Operator& op, BlockVector& start, int num_moments,
                                      const KpmScaling& scaling, const KpmProgress& progress = {});

/// Number of augmented sweeps chebyshev_moments() makes for M moments.
int kpm_num_sweeps(int num_moments);

/// Stochastic-trace result (models.md §4).
struct KpmMoments {
    std::vector<double> moments;     ///< mu_n, n = 0..M-1 (mu_0 = 1 up to rounding)
    std::vector<double> per_vector;  ///< mu_n^(r), row-major [R, M]; empty for the exact trace
    std::int64_t num_vectors = 0;    ///< R (N for the exact trace)
    std::int64_t num_sweeps = 0;     ///< augmented SpMMV calls made, each on a block
    int block_width = 0;             ///< columns per sweep
};

/// Stochastic trace over R random-phase vectors |r>_j = exp(2 pi i uniform(S_v, r N + j)),
/// S_v = splitmix64(vector_seed, 2); mu_n^(r) = <r|T_n|r> / N.
KpmMoments kpm_stochastic_trace(const Operator& op, int num_moments, int num_vectors,
                                std::uint64_t vector_seed, const KpmScaling& scaling,
                                const KpmProgress& progress = {});

/// Exact trace mu_n = (1/N) sum_j <j|T_n|j> over all N unit vectors, in blocks of
/// `block_width` columns.
KpmMoments kpm_exact_trace(const Operator& op, int num_moments, int block_width,
                           const KpmScaling& scaling, const KpmProgress& progress = {});

/// Throws NumericalError if some |mu_n| exceeds 1 + tolerance: the spectrum then lies
/// outside the scaled interval (bounds too tight) and the moments grow without limit.
void check_moments_bounded(const std::vector<double>& moments, double tolerance = 1e-8);

}  // namespace topokpm::numerics
