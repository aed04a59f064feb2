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

/// This rank's large tiles of an n x n matrix in a 2-D block-cyclic layout.
template <class T>
class BlockCyclicMatrix {
public:
    /// Throws InputError for n or tile < 1.
    BlockCyclicMatrix(global_index n, int tile, const ProcessGrid& grid);
    global_index n() const { return n_; }
    int tile() const { return b_; }
    int nt() const { return nt_; }
    int tile_rows(int i) const { return static_cast<int>(std::min<global_index>(b_, n_ - global_index(i) * b_)); }
    const ProcessGrid& grid() const { return grid_; }
    bool mine(int i, int j) const { return i % grid_.rows == grid_.row && j % grid_.cols == grid_.col; }
    /// Tile (i, j), column major with leading dimension tile_rows(i); only for mine(i, j).
    T* tile(int i, int j) { return tiles_[index(i, j)].data(); }
    /// Copies this rank's tiles in from the full column-major matrix `a` (leading dim lda).
    void from_global(const T* a, global_index lda);
    /// The full matrix, column major (lda = n), on `root` (empty elsewhere); tiles of the
    /// strict upper triangle are sent too. Collective.
    std::vector<T> gather(int root, MPI_Comm comm) const;

private:
    std::size_t index(int i, int j) const { return static_cast<std::size_t>(i) * nt_ + j; }
    global_index n_;
    int b_, nt_;
    ProcessGrid grid_;
    std::vector<std::vector<T>> tiles_;  ///< per tile index; empty when not mine
};

/// Factors the HPD matrix (lower triangle read) in place: every rank's lower tiles hold
/// L, as cholesky() on B x B tiles gives them, bit for bit. Collective over `comm`
/// (the grid of `a`). Throws NumericalError on every rank, naming the first failing
/// column, when A is not positive definite. The report's stats are this rank's.
template <class T>
DenseReport block_cyclic_cholesky(BlockCyclicMatrix<T>& a, const DenseExecution& execution, MPI_Comm comm);

}  // namespace topokpm::numerics::dense
