#pragma once
/// @file graphene_stencil.hpp
/// The honeycomb lattice, bonds and on-site potential of the `graphene` model
/// (models.md §3), shared by GrapheneModel::row() and the matrix-free operator so that
/// both produce the same entries in the same (ascending column) order.
///
/// Conventions (models.md §3): row(m, n, s) = s + 2 (n + Ny m), s = 0 (A) / 1 (B);
/// A(m, n) bonds to B(m, n), B(m+1, n-1), B(m, n-1) with -t; the diagonal (V_i) is
/// always stored, so a row has 4 entries when both directions are periodic. In a magnetic
/// field (ModelParams::flux, models.md §9) every hop carries its Peierls phase
/// (hamiltonians/field/magnetic_field.hpp), with A at m a1 + n a2, B at that + (0, 1) and
/// the gauge origin at -(a1 + a2)/6.

#include <array>
#include <cstdint>
#include <memory>

#include "hamiltonians/model.hpp"
#include "hamiltonians/onsite_potential.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/base/types.hpp"

namespace topokpm::hamiltonians::graphene {

class GrapheneStencil {
public:
    static constexpr int atoms_per_cell = 2;   ///< A and B
    static constexpr int max_row_length = 4;   ///< diagonal + 3 bonds

    /// @param params  validated parameters (make_model()), boundary filled in ("pp"-style).
    explicit GrapheneStencil(const ModelParams& params);

    global_index num_cells() const { return num_cells_; }
    global_index num_rows() const { return atoms_per_cell * num_cells_; }

    /// The stored entries of `row` given its potential V; columns strictly ascending.
    /// Returns the count (4 in the bulk, fewer next to an open edge).
    int row_entries(global_index row, double potential, global_index* cols, complex_type* vals) const;

    /// V_i of models.md §3: dot term, then plus the disorder term uniform(S_d, row).
    double potential(global_index row) const;

    /// Whether the atom (m, n, s) lies inside a dot: squared minimum-image distance to the
    /// nearest dot centre < dot_radius^2 + 1e-9 (false when dot_period == 0).
    bool inside_dot(int m, int n, int s) const;

    /// Exact number of stored entries of the whole matrix (no rows generated).
    global_index num_nonzeros() const;

    /// The backend-neutral description: x = m, y = n, nz = 1, B = 2 (s = 0 A, 1 B); the
    /// A(m,n)-B(m,n) bond on site, the bonds to B(m+1, n-1) and B(m, n-1) and their
    /// conjugates as four terms, and V_i per row (the dots distinguish A from B). In a
    /// magnetic field each bond's Peierls factor as the stencil's field tables (StencilField:
    /// by the row's n, across the n wrap by its m).
    BlockStencil block_stencil() const;

    /// Whether a magnetic field puts Peierls phases on the hops (then row values are complex).
    bool in_field() const { return gauge_.active(); }

private:
    std::array<int, 2> extent_{};     // Nx, Ny (cells)
    std::array<bool, 2> periodic_{};  // along a1, a2
    global_index num_cells_ = 0;
    double hopping_ = 0.0;            // -t
    OnsitePotential onsite_;          // dots and disorder
    MagneticFlux flux_;
    PeierlsGauge gauge_;
};


}  // namespace topokpm::hamiltonians::graphene
