#pragma once
/// @file tall_skinny.hpp
/// Orthonormalization of an N x k block with N >> k (docs/dense.md), stored as a
/// TileMatrix with one tile column (nb = k) of row blocks of mb >= k rows (the last
/// block too).
///
/// - tsqr: Householder QR of every row block (GEQRT with one k x k block reflector per
///   block), then a binary tree of TPQRT on the k x k R factors; Q by applying the tree
///   to [I; 0] and then each leaf's reflector to its k x k part (q_times_top: one GEMM
///   per block). Overwrites the
///   block with the explicit Q (N x k, Q^H Q = I) and returns R (k x k upper triangular,
///   A = Q R), with the row blocks as tasks. Backward stable for any A (orthogonality ~ u,
///   independent of cond(A)).
/// - CholQR2 (G = A^H A, G = U^H U, A := A U^{-1}, twice) has one home, the eigensolvers'
///   orthonormalize() in numerics/eigs/subspace (in place on BLAS columns, the Gram matrix
///   summed over MPI ranks), with tsqr as its fallback when the Cholesky of G fails or
///   cond(G) is too large for CholQR2's guarantee: Yamamoto et al. (ETNA 44, 2015) show
///   orthogonality O(u) when 8 kappa2(A) sqrt((N k + k(k+1)) u) <= 1, i.e.
///   kappa2(G) <= 1 / (64 (N k + k(k+1)) u); cholqr2_rcond_threshold() is that limit.

#include "numerics/dense/execution.hpp"
#include "numerics/dense/tile_matrix.hpp"

namespace topokpm::numerics::dense {

template <class T>
struct TallSkinnyResult {
    std::vector<T> r;      ///< k x k column major, upper triangular (zeros below)
    DenseReport report;
};

/// Throws InputError when `a` has more than one tile column or a row block with fewer
/// than k rows.
template <class T>
TallSkinnyResult<T> tsqr(TileMatrix<T>& a, const DenseExecution& execution);

/// The largest 1/kappa1(G) for which CholQR2 falls back: 64 (N k + k(k+1)) u.
template <class T>
double cholqr2_rcond_threshold(global_index rows, int k);

}  // namespace topokpm::numerics::dense
