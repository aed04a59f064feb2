#pragma once
/// @file tall_skinny.hpp
/// Orthonormalization of an N x k block with N >> k (docs/dense.md), stored as a
/// TileMatrix with one tile column (nb = k) of row blocks of mb >= k rows (the last
/// block too). Both functions overwrite the block with the explicit Q (N x k,
/// Q^H Q = I) and return R (k x k upper triangular, A = Q R), with the row blocks as tasks.
///
/// - tsqr: Householder QR of every row block (GEQRT), then a binary tree of TPQRT on
///   the k x k R factors; Q by applying the tree and the leaves to [I; 0]. Backward
///   stable for any A (orthogonality ~ u, independent of cond(A)).
/// - cholqr2: G = A^H A (per-block partial Gram matrices summed in a fixed order),
///   G = U^H U, A := A U^{-1}, repeated once (CholQR2). Falls back to tsqr on the
///   original block when the Cholesky of G fails or cond(G) is too large for CholQR2's
///   guarantee: Yamamoto et al. (ETNA 44, 2015) show orthogonality O(u) when
///   8 kappa2(A) sqrt((N k + k(k+1)) u) <= 1, i.e. kappa2(G) <= 1 / (64 (N k + k(k+1)) u);
///   kappa is estimated in the 1-norm (xPOCON), which is >= kappa2, so the test errs
///   towards the fallback.

#include "numerics/dense/execution.hpp"
#include "numerics/dense/tile_matrix.hpp"

namespace topokpm::numerics::dense {

enum class OrthoMethod {
    cholqr2,  ///< CholQR2 succeeded
    tsqr,     ///< Householder TSQR (asked for, or CholQR2's fallback)
};

template <class T>
struct TallSkinnyResult {
    std::vector<T> r;      ///< k x k column major, upper triangular (zeros below)
    OrthoMethod method = OrthoMethod::tsqr;
    double gram_rcond = 0.0;  ///< cholqr2: estimated 1/kappa1(G) of the first pass (0 if not reached)
    DenseReport report;
};

/// Throws InputError when `a` has more than one tile column or a row block with fewer
/// than k rows.
template <class T>
TallSkinnyResult<T> tsqr(TileMatrix<T>& a, const DenseExecution& execution);

/// As tsqr(); see the file comment for the fallback rule.
template <class T>
TallSkinnyResult<T> cholqr2(TileMatrix<T>& a, const DenseExecution& execution);

/// The largest 1/kappa1(G) for which cholqr2 falls back: 64 (N k + k(k+1)) u.
template <class T>
double cholqr2_rcond_threshold(global_index rows, int k);

}  // namespace topokpm::numerics::dense
