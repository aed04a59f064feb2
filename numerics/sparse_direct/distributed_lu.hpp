#pragma once
/// @file distributed_lu.hpp
/// The supernodal sparse LU of sparse_lu.hpp across MPI ranks (issue 16; docs/sparse_direct.md
/// "Across MPI ranks"), complex double, host only, as SuperLU_DIST distributes it.
///
/// Symbolic phase replicated: every rank analyses the same matrix with the same options (the
/// ordering, elimination tree and supernodes are deterministic and cheap next to the factor);
/// the constructor checks that the ranks' analyses agree. Numeric phase distributed 2-D
/// block-cyclically: the ranks form the Pr x Pc grid of the dense engine
/// (numerics::dense::ProcessGrid: Pr <= Pc, Pr the largest divisor of P <= sqrt P), and block
/// (I, J) of the supernode partition -- the entries with rows in supernode I and columns in
/// supernode J, stored in the L panel of J when I >= J, in the U panel of I otherwise --
/// belongs to grid position (I mod Pr, J mod Pc). Right-looking, step k:
///   1. every rank adds its entries of A - zI to its blocks of supernode k; the owner of the
///      diagonal block (k mod Pr, k mod Pc) factors it (SparseLU's kernel, static pivoting with
///      the same tau) and broadcasts it down process column k mod Pc and along process row
///      k mod Pr;
///   2. process column k mod Pc solves its blocks L(I, k) (TRSM with U_kk), process row k mod Pr
///      its blocks U(k, J) (TRSM with L_kk);
///   3. the L(I, k) are broadcast along process rows, the U(k, J) down process columns;
///   4. every rank updates the blocks (I, J) it owns, A(I, J) -= L(I, k) U(k, J): one GEMM of
///      its rows of R_k by its columns of R_k, scattered into its L and U panels.
/// Every entry receives the same -L U contributions, in the same step order, added to the same
/// -0.0 start and A entry as in SparseLU::factorize (Accelerator::none): the factors differ
/// from one rank's only through the shapes of the GEMM and TRSM calls (each entry is the same
/// inner product, summed in an order BLAS may choose per call), hence equal to rounding
/// (tests/mpi/sparse_lu_check.cpp derives the bound). With P = 2, 3 (grids 1 x P) it is
/// supernode-column-cyclic.
///
/// Solve: after the factorization each supernode's L and U panels are reduced (sums with exact
/// zeros) onto the owner of its diagonal block, so the solve runs supernode-cyclically with
/// replicated right-hand sides: forward substitution in supernode order (the owner of s solves
/// with L_ss, forms L(R_s, s) y_s and broadcasts both), backward in reverse order (the owner
/// broadcasts y_s), then the iterative refinement of SparseLU::solve, computed identically on
/// every rank (A is replicated by the analysis). Every rank returns the same x.
///
/// Memory per rank: the analysis (as one rank's: A's copy, supernode rows); the L panels of
/// its process column and the U panels of its process row (storage for whole panels,
/// ~(L / Pc + U / Pr), filled in its own blocks; kept for the next factorization) plus one
/// step's broadcast blocks; and the solve's ~1/P of the panels (those of its diagonal blocks).

#include <mpi.h>

#include <vector>

#include "numerics/sparse_direct/green.hpp"
#include "numerics/sparse_direct/shift_invert.hpp"
#include "numerics/sparse_direct/sparse_lu.hpp"

namespace topokpm::sparse_direct {

class DistributedLU {
public:
    /// `analysis`: this rank's SparseLU of the same matrix with the same AnalyseOptions on every
    /// rank of `comm` (it must outlive this object; its own factorize() is never called, so it
    /// holds no panels). Collective. Throws Error when the ranks' analyses differ.
    DistributedLU(const SparseLU& analysis, MPI_Comm comm);

    /// Numeric phase of A - z I, collective (every rank passes the same z and options). The
    /// report is the same on every rank (tiny_pivots summed over the owners, seconds the
    /// slowest rank's). Throws as SparseLU::factorize, on every rank; InputError for
    /// {accelerator} other than none (HALO is per process).
    FactorReport factorize(complex_double z, const FactorOptions& options = {});

    /// x = (A - z I)^-1 b, b and x full n x nrhs column-major blocks (ld n), the same b on every
    /// rank; every rank gets the same x. Collective. As SparseLU::solve otherwise.
    SolveReport solve(const complex_double* b, complex_double* x, int nrhs, const SolveOptions& options = {}) const;

    global_index size() const { return lu_.size(); }
    /// Rank owning the diagonal block of supernode s (and, after factorize(), its whole panels).
    int owner(global_index s) const { return static_cast<int>(s % pr_) * pc_ + static_cast<int>(s % pc_); }
    int grid_rows() const { return pr_; }
    int grid_cols() const { return pc_; }
    const SparseLU& analysis() const { return lu_; }
    /// Panel entries this rank keeps after factorize() (its share of SparseLU::factor_values()).
    global_index local_factor_entries() const { return static_cast<global_index>(panels_.size()); }
    /// All panels in SparseLU::factor_values()'s layout, on `root` (empty elsewhere). Collective.
    std::vector<complex_double> gather_factors(int root) const;

    ~DistributedLU();
    DistributedLU(const DistributedLU&) = delete;
    DistributedLU& operator=(const DistributedLU&) = delete;

private:
    const complex_double* panel(global_index s) const { return panels_.data() + local_offset_[s]; }
    complex_double* panel(global_index s) { return panels_.data() + local_offset_[s]; }
    void redistribute_for_solve();
    void lu_solve(std::vector<complex_double>& v, int nrhs) const;

    const SparseLU& lu_;
    MPI_Comm comm_;
    MPI_Comm row_comm_ = MPI_COMM_NULL, col_comm_ = MPI_COMM_NULL;  // this rank's process row / column
    int rank_ = 0, ranks_ = 1;
    int pr_ = 1, pc_ = 1, myrow_ = 0, mycol_ = 0;                   // the Pr x Pc grid
    // 2-D storage of the factorization: L panel of s (column s mod Pc) and U panel of s (row s mod Pr).
    std::vector<global_index> l_offset_, u_offset_;                  // -1: not stored here
    std::size_t grid_entries_ = 0;
    std::vector<complex_double> grid_panels_;
    // Supernode-cyclic copy for the solve: the whole panel block of the supernodes whose
    // diagonal block this rank owns, SparseLU's per-supernode layout.
    std::vector<global_index> local_offset_;   // -1: not mine
    std::vector<complex_double> panels_;
    // Entries of A - z I this rank owns per supernode: entry q of A (or -1 - q for a stored
    // diagonal, -1 - nnz - p for an unstored diagonal p), offset in the L (u = 0) or U panel.
    std::vector<global_index> asm_ptr_, asm_entry_, asm_offset_;
    std::vector<char> asm_in_u_;
    // Scratch kept between steps and factorizations (large buffers freed and allocated again
    // would be page-faulted in again every time).
    std::vector<complex_double> dblock_, lbuf_, ubuf_, work_, part_, sum_;
    complex_double shift_ = 0.0;
    bool factored_ = false;
};

/// `lu` (which must outlive the result) behind shift-invert's solver seam: one distributed
/// factorization, solves collective (kpm-eigs --method shift-invert under mpirun).
ShiftInvertSolver solver_of(DistributedLU& lu);

/// green_ldos with the energy grid dealt over the ranks of `comm` (energy k to rank k mod P,
/// so neighbouring energies, of similar cost, spread evenly): each rank factors its own
/// energies with its own `lu` (one process each; the energies are independent), and rho is
/// summed over the ranks into the full [rows, energies] array on every rank (each entry from
/// one rank, the others' zeros: exact, so rho equals one rank's green_ldos bit for bit).
/// tiny_pivots summed, worst backward error and refinement steps the maxima, the seconds the
/// slowest rank's. options.progress sees this rank's energies; options.stop is asked by
/// each rank before each of its energies, and a stop on any rank is reported by every rank
/// (energies_done < energies.size(), after the collective sums). Collective; throws as
/// green_ldos, on every rank (the inputs are checked before any rank starts).
GreenLdos green_ldos_over_ranks(SparseLU& lu, const std::vector<global_index>& rows,
                                const std::vector<double>& energies, const GreenLdosOptions& options, MPI_Comm comm);

}  // namespace topokpm::sparse_direct
