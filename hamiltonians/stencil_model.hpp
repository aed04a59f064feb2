#pragma once
/// @file stencil_model.hpp
/// What a built-in lattice model (ti, graphene) answers from its parameters and its stencil
/// alone, once for both: the parameters, the stencil's block form (in a magnetic field with
/// its Peierls phases, BlockStencil::field) and nonzero count. The model adds its rows,
/// potential, sizes and attributes.

#include "hamiltonians/model.hpp"

namespace topokpm::hamiltonians {

/// Stencil: constructible from the ModelParams; block_stencil(), num_nonzeros().
template <class Stencil>
class StencilModel : public Model {
public:
    const ModelParams& params() const override { return params_; }
    BlockStencil block_stencil() const override { return stencil_.block_stencil(); }
    global_index estimated_nonzeros() const override { return stencil_.num_nonzeros(); }

protected:
    /// @param params  validated by make_model() for this model.
    explicit StencilModel(const ModelParams& params) : params_(params), stencil_(params) {}

    ModelParams params_;
    Stencil stencil_;
};

}  // namespace topokpm::hamiltonians
