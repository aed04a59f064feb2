#pragma once
/// @file qr.hpp
/// Tile Householder QR A = Q R (seed 001 Algorithm 2, flat tree; docs/dense.md) on
/// square or hybrid tiles (hybrid_widths()). Step k, tile column k starting at row o of
/// tile row t: GEQRT of rows [o, end) of A_tk; UNMQR of the same rows of A_tj (j > k);
/// for each tile row i > t: TSQRT of [R_tk; A_ik] and TSMQR of [A_tj rows o..o+w; A_ij]
/// (j > k). Column k of A and T is released after step k. Inner blocking ib
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
    TileMatrix<T> t;  ///< ib x w factor per tile: mt * ib rows, a's tile columns
    int inner_block = 0;
};

/// Factors `a` (moved in) in place. Throws InputError for a tile column that straddles a
/// tile-row boundary (column_steps()).
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
