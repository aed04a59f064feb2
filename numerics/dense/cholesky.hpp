#pragma once
/// @file cholesky.hpp
/// Tile Cholesky factorization A = L L^H (right-looking; seed 001 Algorithm 1;
/// docs/dense.md) on square tiles or on hybrid tiles (hybrid_widths(): B-row tiles whose
/// tile columns are narrow host slices and wide device slices). Step k, for tile column k
/// whose diagonal block is rows [o, o + w) of tile row t: POTF2' (POTRF of the diagonal
/// block, TRSM of the rows below it in that tile); TRSM A_ik := A_ik L_kk^{-H} (i > t);
/// for every later column j: HERK on its diagonal block and GEMMs below it. With square
/// tiles this is POTRF/TRSM/HERK/GEMM of the classic tile algorithm. Column k is
/// released (tasks::DataflowRuntime::release) after step k. Tasks are
/// submitted in this serial order, so every tile receives its updates in increasing k:
/// the factor is bitwise the same for any number of workers, window or device split.
/// Priorities follow the critical path: the panel of step k before the updates, the
/// updates of column k+1 (the next panel) before the rest.

#include "numerics/dense/execution.hpp"
#include "numerics/dense/tile_matrix.hpp"

namespace topokpm::numerics::dense {

/// Overwrites the lower triangle of the Hermitian positive definite `a` (square; only the
/// lower triangle is read) with L; entries above the diagonal are not touched.
/// Throws InputError for a non-square matrix or a tile column that straddles a tile-row
/// boundary (column_steps()), NumericalError when A is not
/// positive definite, naming the first failing column (0-based global index).
template <class T>
DenseReport cholesky(TileMatrix<T>& a, const DenseExecution& execution);

/// LAWN 41 flop count of complex Cholesky: 6 real flops per complex multiply-add,
/// n^3/3 multiply-adds -> (4/3) n^3 (lower-order terms included).
double cholesky_flops(double n);

}  // namespace topokpm::numerics::dense
