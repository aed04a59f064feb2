#pragma once
/// @file bloch.hpp
/// The Bloch Hamiltonian of a lattice that is translation invariant in x and y, projected
/// from the full operator onto the plane waves of models.md §4:
///
///   H_k[s', s] = <k, s'| H |k, s>,   s, s' = 0..S-1   (S x S, Hermitian)
///
/// For a clean model with periodic x and y this is exact (H |k,s> = sum_s' |k,s'> H_k[s',s]),
/// so its eigenvalues are the bands E_b(k) on which A(k, E) peaks. With dots, disorder or
/// open x/y it is only the plane-wave average of H, not a band structure.

#include <vector>

#include "numerics/base/operator.hpp"
#include "numerics/kpm/block_trace.hpp"

namespace topokpm::numerics {

/// H_k column-major (h[s' + S s] = <k,s'|H|k,s>), from S applications of `op` (in blocks of
/// at most 8 plane waves) and the projections. Cost: S / 8 sweeps plus O(N S).
std::vector<complex_type> bloch_hamiltonian(const Operator& op, const PlaneWaveLattice& lattice, const Momentum& k);

}  // namespace topokpm::numerics
