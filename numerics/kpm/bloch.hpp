#pragma once
/// @file bloch.hpp
/// The Bloch Hamiltonian of a lattice that is translation invariant in x and y, from the
/// model's stencil (numerics/base/block_stencil.hpp) in the plane-wave basis of models.md §4,
/// |k, s> with s = b + B z (B orbitals, the S = B nz states of one (x, y) cell):
///
///   H_k[s', s] = <k, s'| H |k, s>
///              = delta_{z z'} (onsite[o B + b] + delta_{o b} V(z', o))
///                + sum over terms (d, T) with z' + dz = z:  T[o B + b] exp(i (kx dx + ky dy)),
///
/// s' = o + B z', kx = 2 pi mx / nx, ky = 2 pi my / ny (the neighbour z' + dz wraps when z is
/// periodic and is dropped outside an open z). Exact when the stencil's potential does not
/// depend on x and y; V(z', o) is taken from the cell (0, 0). Its eigenvalues are then the
/// bands E_b(k) on which A(k, E) peaks. Cost O(terms B^2 nz): no operator, no vectors, the
/// same on any number of ranks.

#include <vector>

#include "numerics/base/block_stencil.hpp"
#include "numerics/kpm/block_trace.hpp"

namespace topokpm::numerics {

/// H_k column-major (h[s' + S s] = <k,s'|H|k,s>, S x S). Throws InputError when x or y of
/// the stencil is not periodic (momenta are not good quantum numbers then).
std::vector<complex_type> bloch_hamiltonian(const BlockStencil& stencil, const Momentum& k);

}  // namespace topokpm::numerics
