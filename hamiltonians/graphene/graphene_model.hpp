#pragma once
/// @file graphene_model.hpp
/// Model `graphene` (models.md §3): a honeycomb lattice of Nx x Ny cells (2 atoms each)
/// with nearest-neighbour hopping -t, a quantum-dot superlattice on hexagon centres and
/// Anderson disorder from the counter-based generator (models.md §1).

#include <memory>

#include "hamiltonians/graphene/graphene_stencil.hpp"
#include "hamiltonians/model.hpp"
#include "hamiltonians/stencil_model.hpp"

namespace topokpm::hamiltonians::graphene {

class GrapheneModel final : public StencilModel<GrapheneStencil> {
public:
    /// @param params  parameters already validated by make_model() (name "graphene",
    ///                nz = 1, boundary a 2-letter 'p'/'o' string, periodic extents >= 2,
    ///                P | Nx and P | Ny).
    explicit GrapheneModel(const ModelParams& params);

    global_index num_rows() const override { return stencil_.num_rows(); }
    int max_row_length() const override { return GrapheneStencil::max_row_length; }
    int row(global_index row, global_index* cols, complex_type* values) const override;
    /// Hoppings -t and the potential are real (models.md §3), unless a magnetic field puts
    /// Peierls phases on the hoppings (models.md §9).
    bool real_valued() const override { return !stencil_.in_field(); }

    int orbitals_per_site() const override { return GrapheneStencil::atoms_per_cell; }
    /// V_i of the atom of `row`.
    double potential(global_index row) const override;
    double potential_entries_per_row() const override { return 1.0; }
    /// a1 = (sqrt 3, 0), a2 = (sqrt 3 / 2, 3/2), A at the cell origin, B at (0, 1) (models.md §3).
    std::optional<LatticeGeometry> geometry() const override;
    AttributeList attributes() const override;
};

}  // namespace topokpm::hamiltonians::graphene
