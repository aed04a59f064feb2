#pragma once
/// @file cholesky.hpp
/// Tile Cholesky factorization A = L L^H (right-looking; seed 001 Algorithm 1 with
/// square tiles; docs/dense.md). Step k: POTRF(A_kk); TRSM A_ik := A_ik L_kk^{-H}
/// (i > k); HERK A_ii -= A_ik A_ik^H and GEMM A_ij -= A_ik A_jk^H (k < j < i). Tasks are
/// submitted in this serial order, so every tile receives its updates in increasing k:
/// the factor is bitwise the same for any number of workers, window or device split.
/// Priorities follow the critical path: the panel of step k before the updates, the
/// updates of column k+1 (the next panel) before the rest.

#include "numerics/dense/execution.hpp"
#include "numerics/dense/tile_matrix.hpp"

namespace topokpm::numerics::dense {

/// Overwrites the lower triangle of the Hermitian positive definite `a` (square, mb ==
/// nb; only the lower triangle is read) with L; the strict upper tiles are not touched.
/// Throws InputError for a non-square matrix or tiles, NumericalError when A is not
/// positive definite, naming the first failing column (0-based global index).
template <class T>
DenseReport cholesky(TileMatrix<T>& a, const DenseExecution& execution);

/// LAWN 41 flop count of complex Cholesky: 6 real flops per complex multiply-add,
/// n^3/3 multiply-adds -> (4/3) n^3 (lower-order terms included).
double cholesky_flops(double n);

}  // namespace topokpm::numerics::dense
