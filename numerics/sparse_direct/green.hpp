#pragma once
/// @file green.hpp
/// The exact broadened local DOS of models.md §7 from the sparse LU:
///
///     rho_j(E) = -Im G_jj(E + i eta) / pi,      G(z) = (z - H)^-1,
///
/// one factorization of H - z I (z = E + i eta) per energy on the analysis of `lu`, and G_jj
/// from solves with the unit vectors e_j in blocks of `block` right-hand sides:
/// x = (H - z I)^-1 e_j = -G e_j, so rho_j(E) = Im x_jj / pi. Units: E and eta in the units of
/// H's entries (t); rho in states per unit t, per row (each row's rho integrates to 1 over
/// the real line, and it is >= 0 for Hermitian H and eta > 0). rho_j is computed as
/// eta ||x||^2 / pi, which equals Im x_j / pi exactly for Hermitian H, is >= 0 by construction
/// and is the more accurate of the two in rounding.
///
/// Near-singular energies (E within about eta of an eigenvalue, eta small): static pivoting
/// (sparse_lu.hpp) may replace pivots, and without row interchanges the factors may grow
/// (graphene at E = 0: first pivots of -i eta); they are then those of a matrix that differs
/// from H - z by more than eta, and the solve's iterative refinement stalls. When a column's
/// componentwise backward error stays above kGreenPolishBackwardError, that energy's columns
/// are solved by restarted flexible GMRES against the unfactored H - z, right-preconditioned by the
/// factors of H - z' with Im z' = max(eta, kGreenPreconditionerEta ||H - z||_1) (a perturbed
/// shift whose pivots are not tiny; it differs from H - z only in the directions of the few
/// eigenvalues within about Im z' of E, which GMRES removes in about as many steps). What
/// remains shows in the backward error and in GreenLdos::worst_error_bound, the relative
/// accuracy the run can promise (eta below about eps ||H||: no double-precision method
/// resolves rho there).

#include <functional>
#include <vector>

#include "numerics/base/types.hpp"
#include "numerics/sparse_direct/sparse_lu.hpp"

namespace topokpm::sparse_direct {

/// Backward error above which a column's refined solve is polished by GMRES.
inline constexpr double kGreenPolishBackwardError = 1e-13;
/// Im z' / ||H - z||_1 of GMRES's preconditioner (at least eta).
inline constexpr double kGreenPreconditionerEta = 1e-6;
/// GMRES: Krylov basis per cycle, and cycles at most.
inline constexpr int kGreenGmresBasis = 16;
inline constexpr int kGreenGmresCycles = 5;

struct GreenLdosOptions {
    double eta = 0.0;             ///< broadening (> 0, finite)
    int block = 16;               ///< right-hand sides per solve, >= 1
    FactorOptions factor;
    SolveOptions solve;
    /// Called after each energy: (energies done, energies in all, factor report of this one).
    std::function<void(int, int, const FactorReport&)> progress;
    /// Called before each energy; true stops the computation there (a signal): the result
    /// then has energies_done < energies.size() and rho is zero from there on.
    std::function<bool()> stop;
};

struct GreenLdos {
    std::vector<double> rho;           ///< [rows, energies] row-major
    global_index tiny_pivots = 0;      ///< summed over the energies
    int preconditioned_energies = 0;   ///< energies solved by GMRES with the factors at z' (see above)
    int gmres_solves = 0;              ///< columns polished by GMRES (see above)
    int gmres_steps = 0;               ///< their GMRES steps, summed
    double worst_backward_error = 0.0; ///< max over energies and rows (componentwise)
    /// max over energies of 4 w ||H - z||_1 / eta (w the backward error): a first-order
    /// bound on the relative error of every rho_j(E) of that energy.
    double worst_error_bound = 0.0;
    int energies_done = 0;             ///< energies computed (all of them unless options.stop)
    int max_refinement_steps = 0;
    double factor_seconds = 0.0, solve_seconds = 0.0;
};

/// Right-hand-side workspace of green_ldos in bytes (b and x blocks, GMRES's basis), for memory checks
/// together with SparseLU::factor_memory_bytes().
double green_workspace_bytes(global_index n, int block);

/// rho_j(E) for every row j of `rows` (0-based, < lu.size()) and every E of `energies`.
/// @throws InputError  {green_eta} not > 0 or not finite, {green_block} < 1, a row out of
///                     range ({ldos}), an energy not finite
GreenLdos green_ldos(SparseLU& lu, const std::vector<global_index>& rows, const std::vector<double>& energies,
                     const GreenLdosOptions& options);

}  // namespace topokpm::sparse_direct
