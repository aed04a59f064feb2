#pragma once
/// @file thick_restart_lanczos.hpp
/// Extremal eigenpairs of a Hermitian Operator by thick-restart Lanczos (Wu & Simon, SIAM
/// J. Matrix Anal. Appl. 22 (2000) 602), written against the Operator seam, so it runs on
/// every operator kind and, unchanged, on the MPI-distributed one (models.md §6,
/// `--extremal lowest:k | highest:k`).
///
/// One cycle extends an orthonormal basis V = [v_0 .. v_m] by Lanczos steps
///     w = H v_j,   w -= V (V^H w)  (classical Gram-Schmidt against the locked vectors
///                                   too, a second pass when the DGKS criterion asks:
///                                   numerics/eigs/subspace.hpp),
///     beta_j = ||w||,  v_{j+1} = w / beta_j,
/// whose projection T = V^H H V is tridiagonal apart from the arrow of a restart. The Ritz
/// pairs (theta_i, V y_i) of T have the residual ||H V y_i - theta_i V y_i|| = |beta_m y_mi|.
/// A restart keeps the Ritz vectors of the wanted end (thick restart) and the last basis
/// vector, so T starts again as diag(theta) with the arrow s_i = beta_m y_mi.
///
/// Degenerate eigenvalues. A single-vector Krylov space holds only one direction of each
/// eigenspace (the projection of its start vector), so a Kramers pair of the ti slab would
/// show up once. Converged pairs are therefore locked and the search repeated from a fresh
/// random vector orthogonal to them until it finds nothing new at the wanted end: every
/// eigenvalue within the wanted count (and every partner degenerate with the last one, to
/// 2 `tolerance`) is returned with its own orthonormal vector.
///
/// Costs per Lanczos step j: one apply of a single column, 1-2 passes of (j + locked) local
/// complex dots and as many axpys, and 2-3 reductions over the ranks for a distributed
/// operator (the inner products of each pass, the norm).

#include <cstdint>
#include <functional>
#include <vector>

#include "numerics/base/operator.hpp"
#include "numerics/base/types.hpp"
#include "numerics/eigs/eigenpairs.hpp"

namespace topokpm::numerics {

/// Which end of the spectrum is wanted.
enum class SpectrumEnd { Lowest, Highest };

/// Where a run stands after a cycle (for progress lines).
struct ThickRestartProgress {
    int locked = 0;              ///< pairs locked by earlier searches
    int converged = 0;           ///< wanted pairs of the current search converged so far
    int wanted = 0;              ///< pairs the current search looks for
    int search = 0;              ///< 0 = the first search, then the searches from fresh vectors
    std::int64_t matvecs = 0;    ///< applications of H to one vector so far
    double next_residual = 0.0;  ///< residual estimate of the first unconverged wanted pair (energy units)
};

struct ThickRestartOptions {
    SpectrumEnd end = SpectrumEnd::Lowest;
    int count = 1;              ///< k >= 1 eigenpairs wanted, k <= N
    double tolerance = 1e-8;    ///< converged when ||H v - lambda v||_2 <= tolerance (energy units), ||v|| = 1
    /// Partners of the count-th value b within level_width(b) of it are searched for and
    /// returned (its degenerate level); empty = 2 tolerance. Shift-invert, whose values are
    /// 1/(E - sigma), gives the width where partners within 2 tolerance in E lie.
    std::function<double(double)> level_width;
    int basis_size = 0;         ///< m, basis vectors per cycle; 0 = max(2 k + 20, 40), at most N
    int max_restarts = 2000;    ///< cycles per search before NumericalError
    std::uint64_t seed = 1;     ///< start vectors: random phases of stream splitmix64(seed, 4), one column per search
    std::function<void(const ThickRestartProgress&)> progress;  ///< called after every cycle (optional)
};

/// The `options.count` eigenpairs at `options.end` of the Hermitian operator `op`, each with
/// residual <= options.tolerance, plus the eigenpairs degenerate (to options.level_width) with the
/// last of them. Collective over the ranks of a distributed operator (every rank gets the
/// values, and its own rows of the vectors).
/// @throws InputError        count < 1 or > N, tolerance <= 0, basis_size in 1..count+1
/// @throws NumericalError    a search does not converge within max_restarts cycles
EigenPairs thick_restart_lanczos(const Operator& op, const ThickRestartOptions& options);

}  // namespace topokpm::numerics
