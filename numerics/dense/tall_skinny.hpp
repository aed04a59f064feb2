#pragma once
/// @file tall_skinny.hpp
/// Orthonormalization of an N x k block with N >> k (docs/dense.md), stored as a
/// TileMatrix with one tile column (nb = k) of row blocks of mb >= k rows (the last
/// block too).
///
/// - tsqr: Householder QR of every row block (geqrt_recursive: one k x k block reflector
///   per block), then a binary tree of TPQRT on the k x k R factors; Q by applying the tree
///   to [I; 0] and then each leaf's reflector to its k x k part (q_times_top: one GEMM
///   per block; the leaf's T kept in the block's upper triangle meanwhile, the tree's R, V
///   and C in one k x k slot per block). Overwrites the
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

/// One phase of tsqr: the workers' wall and thread-CPU seconds inside its task bodies
/// (summed over workers) and its share of tsqr_flops().
struct TsqrPhase {
    double seconds = 0;
    double cpu_seconds = 0;
    double flops = 0;
};

/// tsqr's phases: the leaves' QR with their T (geqrt_recursive), the tree's TPQRT, the
/// tree's TPMQRT on [I; 0], the leaves' rows of Q (q_times_top).
struct TsqrPhases {
    TsqrPhase leaf_qr, tree_qr, tree_q, leaf_q;
    double leaf_t_flops = 0;  ///< of leaf_qr.flops, those of T (xLARFT's and the T_12 blocks)
    double total_flops() const { return leaf_qr.flops + tree_qr.flops + tree_q.flops + leaf_q.flops; }
};

/// Rows per block for tsqr's callers (dense-bench's default --tile, the eigensolvers' blocks):
/// the fastest leaf height measured for k = 64 (a 4 MiB complex leaf per worker; the tree adds
/// one O(k^3) node per leaf; docs/dense.md, "TSQR: 4096-row leaves").
inline constexpr int kTsqrBlockRows = 4096;

template <class T>
struct TallSkinnyResult {
    std::vector<T> r;      ///< k x k column major, upper triangular (zeros below)
    DenseReport report;
    double flops = 0;      ///< tsqr_flops() of this run's row blocks: the work it did
    TsqrPhases phases;     ///< flops sum to `flops`
};

/// Throws InputError when `a` has more than one tile column or a row block with fewer
/// than k rows.
template <class T>
TallSkinnyResult<T> tsqr(TileMatrix<T>& a, const DenseExecution& execution);

/// Real flops (complex: 8 per multiply-add, 2 per add, as LAWN 41) of the kernel calls
/// tsqr makes on row blocks of `block_rows` rows, k columns and tree inner block ib,
/// counted from the shapes of those calls: per leaf geqrt_recursive (the QR and its k x k
/// T: xGEQRT3's recursion down to unblocked xGEQR2 + xLARFT work) and q_times_top; per tree node xTPQRT
/// (l = k, inner block ib: xTPQRT2 per block + xTPRFB) and xTPMQRT down the tree. About
/// 20 k^2 N for N = sum of block_rows >> k: 8 (QR) + 4 (T) + 8 (Q) k^2 per row.
double tsqr_flops(const std::vector<int>& block_rows, int k, int ib);

/// tsqr_flops split by phase (seconds left 0).
TsqrPhases tsqr_phase_flops(const std::vector<int>& block_rows, int k, int ib);

/// LAWN 41's count for the same result (an explicit N x k Q and R): xGEQRF(N, k) +
/// xUNGQR(N, k, k), about 16 k^2 N; the count of LAPACK's own path and of the goal.
double tsqr_lawn41_flops(double rows, double k);

/// The largest 1/kappa1(G) for which CholQR2 falls back: 64 (N k + k(k+1)) u.
template <class T>
double cholqr2_rcond_threshold(global_index rows, int k);

}  // namespace topokpm::numerics::dense
