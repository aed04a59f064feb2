#pragma once
/// @file model_params.hpp
/// The tests' model parameters: a named model on a lattice with its boundary (and a field),
/// every other parameter at its default. Tests add dots, disorder or couplings on top.

#include <string>

#include "hamiltonians/model.hpp"

namespace topokpm::testing {

/// `name` ("ti", "graphene") on nx x ny x nz sites or cells (graphene: nz = 1), `boundary`
/// "ppo"-style, `flux` the field (none by default).
inline hamiltonians::ModelParams lattice_params(const std::string& name, int nx, int ny, int nz,
                                                const std::string& boundary, hamiltonians::MagneticFlux flux = {})
{
    hamiltonians::ModelParams p;
    p.name = name;
    p.nx = nx;
    p.ny = ny;
    p.nz = nz;
    p.boundary = boundary;
    p.flux = flux;
    return p;
}

}  // namespace topokpm::testing
