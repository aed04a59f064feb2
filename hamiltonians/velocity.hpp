#pragma once
/// @file velocity.hpp
/// The velocity operators of models.md §9, v_a = i [H, r_a] (hbar = 1: energy x length),
///     (v_a)_ij = i (r_a,j - r_a,i) H_ij,
/// as a RowSource over the model's own rows (so every stored kind is built from it by
/// numerics::make_operator, the Peierls phases of a field included), with r_j - r_i the
/// minimum-image separation of LatticeGeometry::separation. v_a has the sparsity of H less
/// the diagonal and the entries whose separation along a is 0 (they are not stored).

#include <string>

#include "hamiltonians/model.hpp"

namespace topokpm::hamiltonians {

/// A Cartesian direction of a conductivity component: 0 (x), 1 (y), 2 (z).
using Axis = int;

/// Reads a component `ab` (--conductivity: two letters of x, y, z) for `model`: the two
/// axes. Throws InputError naming {conductivity}, the value and the allowed ones when the
/// text is not two of x, y, z, when the model has no positions, when a z component is
/// asked of a 2-D model or of a slab open in z (sheet conductance: allowed xx, xy, yx, yy).
std::array<Axis, 2> parse_conductivity_component(const std::string& text, const Model& model);

/// The normalisation of the conductivity: the supercell's area (2-D models and slabs open
/// in z: a sheet conductance) or volume (3-D bulk, z periodic: per unit length), and its name.
struct ConductivityMeasure {
    double value = 0.0;
    std::string name;  ///< "area" | "volume"
};
ConductivityMeasure conductivity_measure(const Model& model);

class VelocityRows final : public RowSource {
public:
    /// `model` must have a geometry() (InputError naming {conductivity} otherwise) and
    /// outlive this.
    VelocityRows(const Model& model, Axis axis);

    global_index num_rows() const override { return model_->num_rows(); }
    int max_row_length() const override { return model_->max_row_length(); }
    int row(global_index row, global_index* cols, complex_type* values) const override;

private:
    const Model* model_;
    LatticeGeometry geometry_;
    Axis axis_;
};

}  // namespace topokpm::hamiltonians
