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
/// the real line, and it is >= 0 for Hermitian H and eta > 0).

#include <functional>
#include <vector>

#include "numerics/base/types.hpp"
#include "numerics/sparse_direct/sparse_lu.hpp"

namespace topokpm::sparse_direct {

struct GreenLdosOptions {
    double eta = 0.0;             ///< broadening (> 0, finite)
    int block = 16;               ///< right-hand sides per solve, >= 1
    FactorOptions factor;
    SolveOptions solve;
    /// Called after each energy: (energies done, energies in all, factor report of this one).
    std::function<void(int, int, const FactorReport&)> progress;
};

struct GreenLdos {
    std::vector<double> rho;           ///< [rows, energies] row-major
    global_index tiny_pivots = 0;      ///< summed over the energies
    double worst_backward_error = 0.0; ///< max over energies and rows (componentwise)
    int max_refinement_steps = 0;
    double factor_seconds = 0.0, solve_seconds = 0.0;
};

/// Right-hand-side workspace of green_ldos in bytes (b and x blocks), for memory checks
/// together with SparseLU::factor_memory_bytes().
double green_workspace_bytes(global_index n, int block);

/// rho_j(E) for every row j of `rows` (0-based, < lu.size()) and every E of `energies`.
/// @throws InputError  {green_eta} not > 0 or not finite, {green_block} < 1, a row out of
///                     range ({ldos}), an energy not finite
GreenLdos green_ldos(SparseLU& lu, const std::vector<global_index>& rows, const std::vector<double>& energies,
                     const GreenLdosOptions& options);

}  // namespace topokpm::sparse_direct
