#pragma once
/// @file ti_model.hpp
/// Model `ti` (models.md §2): a 3D topological-insulator slab with 4 orbitals per site,
/// Dirac-matrix hopping T_j = -t (G1 - i G_{j+1}) / 2, mass m, quantum-dot superlattice
/// and Anderson disorder from the counter-based generator (models.md §1).

#include <memory>

#include "hamiltonians/model.hpp"
#include "hamiltonians/stencil_model.hpp"
#include "hamiltonians/ti/ti_stencil.hpp"

namespace topokpm::hamiltonians::ti {

class TiModel final : public StencilModel<TiStencil> {
public:
    /// @param params  parameters already validated by make_model() (name "ti", boundary
    ///                a 3-letter 'p'/'o' string, periodic extents >= 3, P | Nx and P | Ny).
    explicit TiModel(const ModelParams& params);

    global_index num_rows() const override { return TiStencil::num_orbitals * stencil_.num_sites(); }
    int max_row_length() const override { return TiStencil::max_row_length; }
    /// Row o + 4 site: the blocks of the site in ascending column order (models.md §2).
    int row(global_index row, global_index* cols, complex_type* values) const override;

    int orbitals_per_site() const override { return TiStencil::num_orbitals; }
    /// V_n of the site of `row` (the same for its 4 orbitals).
    double potential(global_index row) const override;
    /// One per site; one per row with an exchange mass (block_stencil()'s potential).
    double potential_entries_per_row() const override
    {
        return stencil_.has_exchange() ? 1.0 : 1.0 / TiStencil::num_orbitals;
    }
    /// The cubic lattice of spacing 1, the 4 orbitals of a site at the site (models.md §9).
    std::optional<LatticeGeometry> geometry() const override;
    AttributeList attributes() const override;
};

}  // namespace topokpm::hamiltonians::ti
