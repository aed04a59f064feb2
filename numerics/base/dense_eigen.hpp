#pragma once
/// @file dense_eigen.hpp
/// Eigenvalues of a small dense Hermitian matrix by LAPACK zheev, with the workspaces
/// padded against an out-of-bounds read in Debian 12's OpenBLAS 0.3.21.
///
/// The defect: zhetrd -> zlatrd -> zgemv_n (the Haswell, SkylakeX and CooperLake kernels
/// alike) reads a few KiB past the end of its operands. Usually that lands in mapped
/// memory and is harmless; once the process has started OpenMP worker threads, glibc
/// places large allocations right below a thread stack's guard page and the read faults
/// (SIGSEGV). Reproduced on the 2-vCPU AMD EPYC (Zen 4) build machine with a small
/// program: one `omp parallel for`, then LAPACKE_zheev on a random 480 x 480 Hermitian
/// matrix. OMP_NUM_THREADS=1 before start hides it, omp_set_num_threads(1) at the call
/// does not; padding the matrix and the work array by 8 KiB each does, for n = 300..1000.

#include <vector>

#include "numerics/base/types.hpp"

namespace topokpm::numerics {

/// All eigenvalues (ascending) of the Hermitian n x n matrix `a` (column-major, n * n
/// entries; only the triangle `uplo` ('L' or 'U') is read). Throws NumericalError when
/// LAPACK reports failure.
std::vector<double> hermitian_eigenvalues(const std::vector<complex_type>& a, int n, char uplo = 'L');

/// Eigenvalues (ascending) and orthonormal eigenvectors of a Hermitian n x n matrix.
struct HermitianEigensystem {
    std::vector<double> values;
    std::vector<complex_type> vectors;  ///< column-major n x n: column i belongs to values[i]
};

/// All eigenpairs of the Hermitian matrix `a` (as above) by LAPACK zheevd (divide and
/// conquer). Throws NumericalError when LAPACK reports failure.
HermitianEigensystem hermitian_eigensystem(const std::vector<complex_type>& a, int n, char uplo = 'L');

}  // namespace topokpm::numerics
