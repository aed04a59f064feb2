#pragma once
/// @file distributed_lu.hpp
/// The supernodal sparse LU of sparse_lu.hpp across MPI ranks (issue 16; docs/sparse_direct.md
/// "Across MPI ranks"), complex double, host only.
///
/// Symbolic phase replicated: every rank analyses the same matrix with the same options (the
/// ordering, elimination tree and supernodes are deterministic and cheap next to the factor);
/// the constructor checks that the ranks' analyses agree. Numeric phase distributed, 1-D
/// supernode-cyclic (DEVIATION from SuperLU_DIST's 2-D block-cyclic layout, documented in
/// docs/sparse_direct.md): supernode s, i.e. its whole panel block (L(:, s) with the diagonal
/// block, U(s, :)), belongs to rank s mod P and is stored there only. Right-looking, step k:
///   1. the owner of k adds A - zI to its accumulated panel k and factors it (the same
///      factor_panel as one rank, static pivoting with the same tau);
///   2. the owner broadcasts panel k to every rank (one MPI_Bcast);
///   3. each rank applies, for every target supernode t it owns among R_k's rows, the part of
///      the Schur update that lands in t: A(R[g0:], R_t) -= L(R[g0:], k) U(k, R_t) into L(:, t)
///      and A(R_t, R[g1:]) -= L(R_t, k) U(k, R[g1:]) into U(t, :) (R_t = R[g0:g1] the rows of
///      R_k inside t): the owner of the target block computes its update.
/// Every entry of every panel receives the same -L U contributions, in the same step order,
/// added to the same -0.0 start and A entry as in SparseLU::factorize (Accelerator::none), so
/// the factors differ from one rank's only through the GEMM shapes (one GEMM per target here,
/// one per split segment there): each entry is the same dot product of length nc_k, summed in
/// an order BLAS may choose per call, hence equal to rounding (tests/mpi/sparse_lu_check.cpp
/// derives the bound).
///
/// Solve distributed over the same factors, with replicated right-hand sides: forward
/// substitution in supernode order (the owner of s solves with L_ss, forms L(R_s, s) y_s and
/// broadcasts both), backward in reverse order (the owner of s broadcasts y_s), then the
/// iterative refinement of SparseLU::solve, computed identically on every rank (A is
/// replicated by the analysis). Every rank returns the same x.
///
/// Memory per rank: the analysis (as one rank's: A's copy, supernode rows) plus ~1/P of the
/// panels, one panel of the current step and the largest per-target update block.

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
    int owner(global_index s) const { return static_cast<int>(s % ranks_); }
    const SparseLU& analysis() const { return lu_; }
    /// Stored panel entries on this rank (its share of SparseLU::factor_values()).
    global_index local_factor_entries() const { return static_cast<global_index>(panels_.size()); }
    /// All panels in SparseLU::factor_values()'s layout, on `root` (empty elsewhere). Collective.
    std::vector<complex_double> gather_factors(int root) const;

private:
    const complex_double* panel(global_index s) const { return panels_.data() + local_offset_[s]; }
    complex_double* panel(global_index s) { return panels_.data() + local_offset_[s]; }
    void update_targets(global_index k, const complex_double* pk);
    void lu_solve(std::vector<complex_double>& v, int nrhs) const;

    const SparseLU& lu_;
    MPI_Comm comm_;
    int rank_ = 0, ranks_ = 1;
    std::vector<global_index> local_offset_;   // per supernode: offset in panels_ (-1: not mine)
    std::vector<complex_double> panels_;       // owned panel blocks, SparseLU's per-supernode layout
    mutable std::vector<complex_double> step_; // the broadcast panel of the current step (+ status)
    std::vector<complex_double> work_;
    std::vector<global_index> pos_;
    // Entries of A - z I per owned supernode: entry q of A (or -1 - q for a stored diagonal,
    // -1 - nnz - p for an unstored diagonal p), offset in the panel block.
    std::vector<global_index> asm_ptr_, asm_entry_, asm_offset_;
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
/// slowest rank's. options.progress sees this rank's energies. Collective; throws as
/// green_ldos, on every rank (the inputs are checked before any rank starts).
GreenLdos green_ldos_over_ranks(SparseLU& lu, const std::vector<global_index>& rows,
                                const std::vector<double>& energies, const GreenLdosOptions& options, MPI_Comm comm);

}  // namespace topokpm::sparse_direct
