#pragma once
/// @file chebyshev_extremal.hpp
/// Extremal eigenpairs of a Hermitian Operator by block Chebyshev-filtered subspace
/// iteration (Zhou, Saad, Tiago, Chelikowsky, J. Comput. Phys. 219 (2006) 172), written
/// once against the Operator seam (models.md §6, `--extremal lowest:k | highest:k`,
/// `--method auto | chebfd`). thick_restart_lanczos.hpp solves the same request one vector at
/// a time; this one works on a block of p > k vectors, so a degenerate level (the ti slab's
/// Kramers pairs and 8-fold levels) is found whole in one run, the applies of H are blocked
/// SpMMVs of the registered widths and the orthogonalization is BLAS-3 (subspace.hpp).
///
/// A pass (lowest end; the highest end mirrored):
///   X := T_d((H - c) / e) X     Chebyshev polynomial of degree d on the unwanted interval
///                               [cut, upper] = [c - e, c + e]: |T_d| <= 1 there, and it
///                               grows like cosh(d acosh|x|) below it, the eigenvalues
///                               farthest from the cut most (order kept)
///   X := X - L (L^H X) twice, then orthonormal (CholQR2 / TSQR)   (L: locked vectors)
///   Rayleigh-Ritz with H (G = X^H H X, one block apply) and the residuals ||H x - theta x||
///   lock the converged pairs (residual <= tolerance / 2) among the k - locked nearest the
///   wanted end, then the converged run after them within the boundary below
/// cut = the largest Ritz value of the block (it bounds the (p - locked)-th eigenvalue of the
/// deflated H from above, Cauchy interlacing), upper = the Lanczos bound of E_max (with its
/// residual and margin: the filter must not amplify anything above it). The degree makes the
/// slowest pending Ritz value grow by 1e4 over the cut, or, once the last pass reduced that
/// residual by >= 1 % of what its filter predicted (the cut has settled), by as much as
/// brings it to tolerance / 32; at most 4x the previous degree, 8..600, and T_d at the
/// Lanczos bound of the wanted end below ~1e250.
///
/// Stop: k pairs locked and the lowest unlocked Ritz pair (theta, r) has theta - r above the
/// k-th locked value + 2 tolerance (the boundary). A missing partner of a degenerate last
/// level converges with its locked copies (the filter multiplies the copies alike, and a
/// random block holds each of them) as the lowest unlocked pair, with theta - r below its
/// eigenvalue while r is below the gap (theta - lambda ~ r^2 / gap). The block holds at
/// least the pending pairs + max(p - k, 8) vectors (fresh random ones when locking leaves
/// fewer): a level more degenerate than the guard would leave the cut inside it.
///
/// Costs per pass: (p - locked) d single-vector applies in the filter + (p - locked) for
/// Rayleigh-Ritz, two Gram-Schmidt passes against the locked vectors, one CholQR2 and one
/// Rayleigh-Ritz of an N x (p - locked) block. Collective over the ranks of a distributed
/// operator (every rank the values, and its own rows of the vectors).

#include <cstdint>
#include <functional>

#include "numerics/base/operator.hpp"
#include "numerics/eigs/eigenpairs.hpp"
#include "numerics/eigs/thick_restart_lanczos.hpp"

namespace topokpm::numerics {

struct ChebyshevExtremalOptions {
    SpectrumEnd end = SpectrumEnd::Lowest;
    int count = 1;            ///< k >= 1 eigenpairs wanted, k <= N
    double tolerance = 1e-8;  ///< converged when ||H v - lambda v||_2 <= tolerance (energy units), ||v|| = 1
    int block = 0;            ///< p, vectors of the block; 0 = k + max(8, k / 2), at most N; else >= k + 1
    int max_passes = 400;     ///< filter passes before NumericalError
    std::uint64_t seed = 1;   ///< start block: random phases of stream splitmix64(seed, 6)
    std::function<void(const ThickRestartProgress&)> progress;  ///< after every pass (optional; search = 0)
};

/// The `options.count` eigenpairs at `options.end` of `op`, each with residual <=
/// options.tolerance, plus the ones degenerate (to 2 tolerance) with the last of them,
/// ascending, measured by measured_pairs(); matvecs counts every apply (the bound estimate
/// included), restarts the filter passes.
/// @throws InputError      count < 1 or > N, tolerance <= 0, block in 1..count
/// @throws NumericalError  not converged within max_passes
EigenPairs chebyshev_extremal(const Operator& op, const ChebyshevExtremalOptions& options);

}  // namespace topokpm::numerics
