#pragma once
/// @file block_cyclic.hpp
/// Tile Cholesky across MPI ranks (seed 001 §5.4 / issue 14; docs/dense.md): the n x n
/// matrix is cut into B x B large tiles, distributed 2-D block-cyclically over a
/// Pr x Pc process grid (tile (i, j) on grid position (i mod Pr, j mod Pc), rank
/// row * Pc + col of the communicator). Each rank runs its tiles' tasks on its own
/// dataflow runtime (DenseExecution: workers, host-memory device, window); the master
/// thread moves the panel between ranks: L_kk down process column k mod Pc, then each
/// L_ik along process row i mod Pr and down process column i mod Pc (the ranks whose
/// tiles read it). Every tile receives the same kernels on the same bytes in the same
/// order as in cholesky() with B x B tiles, so the factor is bitwise that of one rank.

#include <mpi.h>

#include <vector>

#include "numerics/dense/execution.hpp"

namespace topokpm::numerics::dense {

/// Pr x Pc with Pr <= Pc and Pr the largest divisor of the rank count <= its square root.
struct ProcessGrid {
    int rows = 1, cols = 1;  ///< Pr, Pc
    int row = 0, col = 0;    ///< this rank's position
    static ProcessGrid of(MPI_Comm comm);
    int rank_of(int r, int c) const { return r * cols + c; }
};

/// This rank's large tiles of an m x n matrix (square: m = n) in a 2-D block-cyclic layout.
template <class T>
class BlockCyclicMatrix {
public:
    /// Throws InputError for m, n or tile < 1.
    BlockCyclicMatrix(global_index m, global_index n, int tile, const ProcessGrid& grid);
    BlockCyclicMatrix(global_index n, int tile, const ProcessGrid& grid) : BlockCyclicMatrix(n, n, tile, grid) {}
    global_index m() const { return m_; }  ///< rows
    global_index n() const { return n_; }  ///< columns
    int tile() const { return b_; }
    int mt() const { return mt_; }  ///< tile rows
    int nt() const { return nt_; }  ///< tile columns
    int tile_rows(int i) const { return static_cast<int>(std::min<global_index>(b_, m_ - global_index(i) * b_)); }
    int tile_cols(int j) const { return static_cast<int>(std::min<global_index>(b_, n_ - global_index(j) * b_)); }
    const ProcessGrid& grid() const { return grid_; }
    bool mine(int i, int j) const { return i % grid_.rows == grid_.row && j % grid_.cols == grid_.col; }
    /// Tile (i, j), column major with leading dimension tile_rows(i); only for mine(i, j).
    T* tile(int i, int j) { return tiles_[index(i, j)].data(); }
    /// Copies this rank's tiles in from the full column-major matrix `a` (leading dim lda).
    void from_global(const T* a, global_index lda);
    /// The full matrix, column major (lda = m), on `root` (empty elsewhere); tiles of the
    /// strict upper triangle are sent too. Collective.
    std::vector<T> gather(int root, MPI_Comm comm) const;

private:
    std::size_t index(int i, int j) const { return static_cast<std::size_t>(i) * nt_ + j; }
    global_index m_, n_;
    int b_, mt_, nt_;
    ProcessGrid grid_;
    std::vector<std::vector<T>> tiles_;  ///< per tile index; empty when not mine
};

/// Factors the HPD matrix (lower triangle read) in place: every rank's lower tiles hold
/// L, as cholesky() on B x B tiles gives them, bit for bit. Collective over `comm`
/// (the grid of `a`). Throws InputError for a matrix that is not square, NumericalError on
/// every rank, naming the first failing column, when A is not positive definite. The
/// report's stats are this rank's.
template <class T>
DenseReport block_cyclic_cholesky(BlockCyclicMatrix<T>& a, const DenseExecution& execution, MPI_Comm comm);

}  // namespace topokpm::numerics::dense

namespace topokpm::numerics::dense {

/// Tile Householder QR across MPI ranks (docs/dense.md "QR across ranks"): A = Q R for the
/// m x n matrix (m >= n) of `a` in its 2-D block-cyclic layout; Q is m x m. Step k reduces tile column k with a
/// fixed two-level tree over the tile rows i >= k: tile row i belongs to domain i mod D
/// (D = `domains`); each domain is reduced by a flat chain (GEQRT of its first row, TSQRT
/// of the others onto it, in row order), then the domains' R factors are combined by a
/// binary tree of TTQRT (xTPQRT with a triangular lower block) in the order of their first
/// rows, ending in row k. Every trailing tile column j > k receives the same
/// transformations (UNMQR / TSMQR / TTMQR) in the same order. The tree depends on the tile
/// indices and D only, so the factors are bitwise those of one rank with the same D; with
/// D = 1 the tree is the flat one of qr() on B x B tiles (bitwise equal to it). When Pr
/// divides D, the chains stay inside one process row and only the D - 1 tree nodes per
/// step move tiles between process rows.
template <class T>
struct BlockCyclicQr {
    BlockCyclicMatrix<T> a;              ///< R on and above the diagonal, reflectors below (this rank's tiles)
    std::vector<std::vector<T>> t, t2;   ///< per tile index i * nt + k: GEQRT/TSQRT and TTQRT factors (ib x w)
    int inner_block = 0;
    int domains = 1;
};

/// Factors `a` (moved in). Collective over `comm`, the grid of `a`. Throws InputError for
/// domains < 1 or m < n. Rank-deficient A is fine (Householder QR needs no pivoting for
/// stability; R then has small trailing diagonal entries). The report's stats are this
/// rank's.
template <class T>
BlockCyclicQr<T> block_cyclic_qr(BlockCyclicMatrix<T> a, const DenseExecution& execution, MPI_Comm comm,
                                 int domains = 2, DenseReport* report = nullptr);

/// c := Q c (trans 'N') or Q^H c (trans 'C') for the Q of `f`; c has f.a's m rows, tile
/// and grid, and any number of columns (InputError otherwise). Collective over `comm`.
template <class T>
DenseReport block_cyclic_apply_q(const BlockCyclicQr<T>& f, char trans, BlockCyclicMatrix<T>& c,
                                 const DenseExecution& execution, MPI_Comm comm);

}  // namespace topokpm::numerics::dense
