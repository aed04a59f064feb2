#pragma once
/// @file chebfd.hpp
/// Every eigenpair of a Hermitian Operator in a window [Emin, Emax] by Chebyshev filter
/// diagonalization (ChebFD: Pieper, Kreutzer, Alvermann, Galgon, Fehske, Hager, Lang,
/// Wellein, J. Comput. Phys. 325 (2016) 226), written once against the Operator seam, so
/// it runs on every operator kind and, unchanged, on the MPI-distributed one (models.md §6,
/// `--window Emin:Emax --method chebfd`).
///
/// Filter. With Ht = (H - b) / a (the KPM scaling of `bounds`, models.md §4) and the window
/// [x_l, x_r] = ([Emin, Emax] - b) / a, theta = arccos x, the filter is the damped
/// Chebyshev series of the window's indicator
///     p(x) = sum_{n=0}^{M-1} g_n c_n T_n(x),   c_0 = (theta_l - theta_r) / pi,
///     c_n = 2 (sin(n theta_l) - sin(n theta_r)) / (n pi),
/// g_n the damping factors of `damping` (Jackson: a Gaussian-like step of width
/// sigma_theta ~ pi / M in theta). p is applied to a block X by the three-term recurrence
/// v_{n+1} = 2 Ht v_n - v_{n-1}, one augmented sweep per degree (scale 2/a, shift b, beta
/// -1), in strips of registered widths, accumulating Y += g_n c_n v_n in the sweeps
/// themselves (AugmentedOps::accumulate: every third sweep adds v_{k-2}, v_{k-1}, v_k).
///
/// Degree and search space, from one stochastic KPM trace (`dos_vectors` random-phase
/// vectors, 4 M0 moments, models.md §4; a damped series q weighs tr q(Ht) = sum_n q_n N mu_n
/// eigenvalues). The guard interval of degree M is the window widened by 3 sigma_theta =
/// 3 pi / M on each side in theta (beyond it the filter is below ~1e-3 of its inside value).
/// Degree rule: M0 = ceil(4 pi / (theta_l - theta_r)), at least 16 (the filter's edge a
/// quarter of the window's width in theta); M is the first of M0, 1.5 M0, 2.25 M0, ... (at
/// most 4 M0) whose guard holds at most twice the window's expected count + 8 (a search
/// space about twice the target count is the cheapest, Pieper et al.; a window in a gap
/// next to dense bands takes the larger degrees). The search space is ceil(safety x the
/// guard's count) + 8 vectors (at most N). When a Rayleigh-Ritz step shows more certain
/// Ritz values (below) in the window than search space / safety, locked ones included, the
/// space grows to safety x guard/window x that number + 8, with fresh random vectors.
///
/// A pass: filter the unlocked block (the terms accumulated three at a time in the sweep's
/// epilogue where the operator fuses it, Operator::fuses_accumulation: the accumulator read
/// and written once per three degrees besides the sweeps' 3 streams per degree); orthogonalize it against the locked
/// vectors (block classical Gram-Schmidt, twice) and orthonormalize it (equilibrated CholQR2
/// in place, shifted passes first while its condition rule rejects the block, TSQR fallback
/// from numerics/dense; across ranks: the Gram matrix summed over the ranks, the fallback a
/// local TSQR and a QR of the ranks' stacked R factors; numerics/eigs/subspace.hpp), both
/// once more when vectors are locked (orthonormalizing the ill-conditioned filtered block
/// brings back up to eps x its condition along them; the block is orthonormal by then, so
/// one projection pass and one CholQR pass);
/// Rayleigh-Ritz (G = Q^H H Q from strips of H Q, LAPACK zheevd, the Ritz vectors written
/// over Q in row chunks: no second n x k block) and the residuals ||H x - theta x|| of the
/// Ritz pairs inside the window, by one blocked apply of those vectors; Ritz pairs inside
/// the window with residual <= tolerance / 2 are
/// locked (the other half covers the re-measurement by measured_pairs()). The unlocked Ritz
/// vectors with the largest |p(theta)| form the next block (search space minus locked, at
/// least 8).
///
/// Spurious Ritz values and the stop. An unlocked Ritz pair inside the window is certain when
/// its residual r is below its distance to the window's edges ([theta - r, theta + r] then
/// holds an eigenvalue, inside). The others may be mixtures of eigenvectors on both sides
/// of the window, whose Ritz values fall in between and never converge; they are not waited
/// for. The run stops after >= 3 passes when a pass locked nothing and neither it nor the
/// one before left a certain pair: a missing eigenvector of the window has by then been
/// amplified over every direction outside the search space by the filter ratio (~1e2-1e3)
/// at least three times and would be a certain pair. It stops sooner, after >= 2 passes with
/// pairs locked, when every unlocked Ritz value left inside the window is spurious beyond
/// doubt (residual >= half the window's width: a real eigenvector filtered twice is far
/// closer), which saves the confirming pass. Degenerate levels (the ti slab's
/// Kramers pairs) are found whole because the space is larger than the window's count.
///
/// Cost per pass: (search - locked) x M single-vector applies in the filter, as many again
/// / M plus the window's count for Rayleigh-Ritz, one or two orthonormalizations of an
/// N x (search - locked) block and two products of it with a k x k matrix (G, the Ritz
/// vectors): the dense work per filter sweep scales as k / M.

#include <cstdint>
#include <functional>
#include <vector>

#include "numerics/base/operator.hpp"
#include "numerics/base/row_source.hpp"
#include "numerics/base/types.hpp"
#include "numerics/eigs/eigenpairs.hpp"
#include "runtime/base/system.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::numerics {

/// Where a run stands after a pass (for progress lines).
struct ChebFdProgress {
    int iteration = 0;            ///< filter passes done (0: sized, before the first pass)
    int locked = 0;               ///< pairs locked (converged, inside the window)
    int in_window = 0;            ///< locked + certain unlocked Ritz values inside the window
    double expected = 0.0;        ///< KPM estimate of the window's count
    int search_size = 0;          ///< search space (locked + unlocked)
    std::int64_t matvecs = 0;     ///< applications of H to one vector so far
    double worst_residual = 0.0;  ///< largest residual of a certain unlocked pair (0: none)
    int filter_degree = 0;        ///< M - 1
    /// Inside a pass (the filter of a large block takes minutes): columns of the block
    /// filtered so far, of filter_columns; both 0 in the line after a pass.
    int filter_columns_done = 0;
    int filter_columns = 0;
    double seconds = 0.0;         ///< wall seconds since the run started (this rank)
    double seconds_spmmv = 0.0;   ///< of them in Operator::apply (ChebFdStats::seconds_spmmv)
    double seconds_filter_spmmv = 0.0;  ///< of those in the filter's sweeps
    double filter_flops = 0.0;    ///< the filter's sweep flops so far (ChebFdStats::filter_flops)
};

struct ChebFdOptions {
    double window_min = 0.0;  ///< energies in t
    double window_max = 0.0;
    double tolerance = 1e-8;  ///< converged when ||H v - lambda v||_2 <= tolerance (energy units), ||v|| = 1
    SpectralBounds bounds;    ///< an enclosure of the spectrum (KPM bounds)
    double epsilon = 0.01;    ///< KPM scaling margin (models.md §4)
    /// The damping factors g_0..g_{M-1} for M coefficients (analysis::damping_factors with
    /// the run's kernel). Required.
    std::function<std::vector<double>(int)> damping;
    int degree = 0;            ///< M coefficients (polynomial degree M - 1), >= 16; 0 = the rule above
    int search_size = 0;       ///< initial search space; 0 = from the KPM estimate
    /// This rank's memory for the search space (the caller's limit less what it holds). The
    /// space k is known only after the KPM count, so before it is allocated, and again before
    /// it grows, ChebFD checks that chebfd_space_bytes(rows, k, threads) fits: the block and
    /// the locked vectors hold at most k + 8 columns together; besides them either the TSQR
    /// fallback's copy of the block (at most k) or the strips of the filter and Rayleigh-Ritz
    /// (three blocks per registered width, at most min(3 k, 3 x 63) columns; released while the block
    /// is orthonormalized); H Q and the Ritz vectors are never stored whole; and the
    /// Rayleigh-Ritz matrices. Throws ResourceError naming the space and the limit's source
    /// otherwise. bytes 0 = no check.
    MemoryLimit memory;
    double safety = 1.5;       ///< search space / expected count of the guard interval, > 1
    int dos_vectors = 16;      ///< random vectors of the count estimate, >= 1
    int max_iterations = 60;   ///< filter passes before NumericalError
    std::uint64_t seed = 1;    ///< start vectors: random-phase stream splitmix64(seed, 2) from column 1 << 20
    /// Once sized, after every strip of the filter and after every pass (optional).
    std::function<void(const ChebFdProgress&)> progress;
};

/// What a run measured besides the pairs (for the result file and benchmarks).
struct ChebFdStats {
    int filter_degree = 0;          ///< M - 1
    double expected_count = 0.0;    ///< KPM estimate of the window's count
    double expected_guard = 0.0;    ///< and of the guard interval's
    int search_size = 0;            ///< final search space
    std::int64_t filter_matvecs = 0;  ///< single-vector applies inside the filter
    double filter_flops = 0.0;      ///< seed 004's sweep flops of those applies (perf::sweep_flops)
    /// Wall seconds per phase (this rank; names in the order first met):
    ///   estimate            the KPM trace that sizes degree and space (its sweeps)
    ///   filter_spmmv        the filter's sweeps (Operator::apply), with the accumulation
    ///                       Y += g_n c_n v_n they carry (fused, or the passes of an operator
    ///                       without fuses_accumulation)
    ///   filter_accumulate   the accumulator's zero fill and the strips' layout changes
    ///   project             Gram-Schmidt against the locked vectors
    ///   orthonormalize      CholQR2 / TSQR
    ///   rr_spmmv            H Q for Rayleigh-Ritz (Operator::apply)
    ///   rayleigh_ritz       G = Q^H H Q, its eigenpairs, the Ritz vectors, their residuals
    ///   lock                locking and the next block
    ///   measure             measured_pairs() of the locked vectors (one apply + residuals)
    PhaseTimers phases;
    double seconds_total = 0.0;
    int tsqr_fallbacks = 0;         ///< orthonormalizations that took TSQR
    /// Seconds inside Operator::apply (estimate, filter, Rayleigh-Ritz).
    double seconds_spmmv() const
    {
        return phases.get("estimate") + phases.get("filter_spmmv") + phases.get("rr_spmmv");
    }
};

/// Every eigenpair of `op` with eigenvalue in [window_min, window_max], each with residual
/// <= tolerance, ascending, measured by measured_pairs(); matvecs counts every apply
/// (estimate included), restarts the filter passes. Collective over the ranks of a
/// distributed operator (every rank gets the values, and its own rows of the vectors).
/// @throws InputError      window_min >= window_max ({eig_window}), tolerance <= 0,
///                         safety <= 1, dos_vectors < 1, degree in 1..15, no damping
/// @throws NumericalError  not converged within max_iterations passes
EigenPairs chebfd_eigenpairs(const Operator& op, const ChebFdOptions& options, ChebFdStats* stats = nullptr);

/// M0 of the degree rule for a window [x_l, x_r] of the scaled spectrum (clamped to [-1, 1]).
int chebfd_degree(double x_left, double x_right);

/// Bytes a ChebFD search space of k vectors holds on a rank of `rows` rows with `threads`
/// OpenMP threads (ChebFdOptions::memory): 16 rows (k + 8 + max(k, min(3 k, 189))) for the
/// columns (the strips' widths sum to at most k),
/// 16 x 4 k^2 for Rayleigh-Ritz (G, the eigensolver's copy and its vectors, the reordered
/// vectors Y) and 16 x 2048 k per thread for the row chunks of the in-place rotation.
double chebfd_space_bytes(double rows, double k, int threads);

}  // namespace topokpm::numerics
