#pragma once
/// @file bands.hpp
/// Eigenvalues of small dense Hermitian matrices (Bloch Hamiltonians H_k of a slab, 4 Nz
/// x 4 Nz), for the band lines drawn over A(k, E).

#include <vector>

#include "numerics/base/types.hpp"

namespace topokpm::analysis {

/// All eigenvalues (ascending) of the Hermitian n x n matrix `a` (column-major; only the
/// lower triangle is read) by LAPACK zheev. Throws NumericalError if LAPACK fails.
std::vector<double> hermitian_eigenvalues(std::vector<complex_type> a, int n);

}  // namespace topokpm::analysis
