#pragma once
/// @file qr.hpp
/// Tile Householder QR A = Q R (seed 001 Algorithm 2 with square tiles, flat tree;
/// docs/dense.md). Step k: GEQRT(A_kk); UNMQR A_kj := Q_kk^H A_kj (j > k); for each
/// i > k: TSQRT of [R_kk; A_ik] and TSMQR of [A_kj; A_ij] (j > k). Inner blocking ib
/// (DenseExecution::inner_block) inside every kernel. Submission in this serial order
/// makes every tile's updates happen in a fixed order: bitwise the same result for any
/// number of workers, window or device split.

#include "numerics/dense/execution.hpp"
#include "numerics/dense/tile_matrix.hpp"

namespace topokpm::numerics::dense {

/// The factored form: R on and above the diagonal of `a`, the Householder vectors
/// below it and in the tiles below the diagonal, the block-reflector factors in `t`.
template <class T>
struct TileQr {
    TileMatrix<T> a;  ///< R and V
    TileMatrix<T> t;  ///< ib x nb factor per tile: mt * ib rows, a.cols() columns, ib x nb tiles
    int inner_block = 0;
};

/// Factors `a` (moved in; mb == nb) in place. Throws InputError for non-square tiles.
template <class T>
TileQr<T> qr(TileMatrix<T> a, const DenseExecution& execution, DenseReport* report = nullptr);

/// c := Q c (trans 'N') or Q^H c (trans 'C') for the Q of `f`; c has a.rows() rows and
/// the same row tiling (mb). Throws InputError otherwise.
template <class T>
DenseReport apply_q(const TileQr<T>& f, char trans, TileMatrix<T>& c, const DenseExecution& execution);

/// The first cols() columns of Q (rows x cols, tiled like f.a).
template <class T>
TileMatrix<T> form_q(const TileQr<T>& f, const DenseExecution& execution);

/// LAWN 41 flop count of complex Householder QR of an m x n matrix (m >= n).
double qr_flops(double m, double n);

}  // namespace topokpm::numerics::dense
