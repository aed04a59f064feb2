#pragma once
/// @file dense_oracle.hpp
/// The independent reference for small systems: the full matrix of a RowSource as a
/// dense array and its eigenvalues from LAPACK (zheev).

#include <vector>

#include "numerics/base/row_source.hpp"

namespace topokpm::testing {

/// Dense N x N matrix, column-major (a[i + j*N] = A_ij), from every stored entry.
std::vector<complex_type> dense_matrix(const RowSource& source);

/// All eigenvalues (ascending) of the Hermitian matrix, by LAPACKE_zheev.
std::vector<double> dense_eigenvalues(const RowSource& source);

/// Eigenvalues of a dense Hermitian column-major n x n matrix (copied).
std::vector<double> dense_eigenvalues(std::vector<complex_type> a, int n);

/// Exact Chebyshev moments mu_n = (1/N) sum_i T_n((E_i - b)/a), n = 0..M-1, computed
/// with the three-term recurrence in long double from the eigenvalues.
std::vector<double> exact_moments(const std::vector<double>& eigenvalues, int num_moments,
                                  double scale_a, double scale_b);

}  // namespace topokpm::testing
