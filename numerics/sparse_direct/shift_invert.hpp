#pragma once
/// @file shift_invert.hpp
/// The k eigenvalues of a Hermitian H nearest a shift sigma (models.md §6 `--shift E0
/// --count k`, `--method shift-invert`) by thick-restart Lanczos on (H - sigma)^-1 with one
/// sparse LU of the Hermitian-indefinite H - sigma (static pivoting + refinement).
///
/// An eigenpair (lambda, v) of H is one of (H - sigma)^-1 with theta = 1 / (lambda - sigma):
/// the eigenvalues nearest sigma are the largest |theta|, positive above sigma and negative
/// below. The thick-restart Lanczos of numerics/eigs finds one end at a time, so it runs
/// twice: the k largest theta (nearest above) and the k smallest (nearest below); whichever
/// the k nearest are, they are among these (an eigenvalue above sigma has fewer than k
/// nearer ones above it). Its degenerate-level searches return every partner (Kramers pairs).
/// The union is orthonormalized and Rayleigh-Ritz-projected on H itself (values
/// lambda = <v|H v>, never sigma + 1/theta's rounding), the request's selection taken (ties:
/// the lower first; partners of the last within 2 tolerance), and residuals measured with H
/// by numerics::measured_pairs.
///
/// Tolerances. With r = (H - sigma)^-1 v - theta v, ||H v - lambda v|| <= ||H - sigma|| ||r|| / |theta|
/// and |theta| >= 1 / ||H - sigma|| for every eigenvalue, so the Lanczos tolerance on theta is
/// tol / S^2 with S = ||H - sigma||_1 >= ||H - sigma||_2 (but not below 1e3 eps |theta_max|,
/// the rounding floor of the solves). Pairs whose measured residual with H still exceeds tol
/// get up to `refinement_rounds` rounds of subspace iteration (one blocked solve over the
/// union, then Rayleigh-Ritz on H again), each shrinking the error of pair i by
/// |lambda_i - sigma| / |lambda_out - sigma| where lambda_out is the nearest eigenvalue
/// outside the subspace.
///
/// A shift that is an eigenvalue of H to rounding makes H - sigma singular: the
/// factorization then replaces tiny pivots (ShiftInvertReport::tiny_pivots > 0), and the
/// operator is factored again at sigma + delta, delta = 1e-6 S (reported as
/// factored_shift); the selection is still the one nearest sigma.

#include <cstdint>
#include <functional>
#include <memory>

#include "numerics/base/operator.hpp"
#include "numerics/eigs/eigenpairs.hpp"
#include "numerics/eigs/thick_restart_lanczos.hpp"
#include "numerics/sparse_direct/sparse_lu.hpp"

namespace topokpm::sparse_direct {

/// The factorization shift-invert drives: one rank's SparseLU (solver_of below) or the ranks'
/// DistributedLU (solver_of in distributed_lu.hpp). solve takes and returns full n x nrhs
/// column-major blocks, the same on every rank; both calls are collective for the latter.
struct ShiftInvertSolver {
    global_index size = 0;
    std::function<FactorReport(complex_double, const FactorOptions&)> factorize;
    std::function<SolveReport(const complex_double*, complex_double*, int)> solve;
    double factor_nonzeros = 0.0, factor_memory_bytes = 0.0;
};

/// `lu` (which must outlive the result) behind the ShiftInvertSolver seam.
ShiftInvertSolver solver_of(SparseLU& lu);

/// (A - z I)^-1 of a factored solver behind the Operator seam, on the rows of `h` (serial or
/// distributed: this rank's rows of x are summed over the ranks into full vectors, solved,
/// and this rank's rows of the solution kept): apply(x, y, {scale, shift, beta}) gives
/// y := scale ((A - zI)^-1 - shift) x + beta y by one blocked solve (with iterative
/// refinement) of all columns. The distribution (rows, ranks, sums) is h's.
class ShiftInvertOperator final : public Operator {
public:
    /// `h` and `solver` (factored) must outlive the operator.
    ShiftInvertOperator(const Operator& h, const ShiftInvertSolver& solver) : h_(h), solver_(solver) {}
    global_index num_rows() const override { return h_.num_rows(); }
    global_index global_rows() const override { return solver_.size; }
    global_index row_begin() const override { return h_.row_begin(); }
    RowRuns row_runs() const override { return h_.row_runs(); }
    int rank() const override { return h_.rank(); }
    int num_ranks() const override { return h_.num_ranks(); }
    bool dots_reduced() const override { return h_.num_ranks() == 1; }
    void sum_over_ranks(double* values, std::size_t count) const override { h_.sum_over_ranks(values, count); }
    std::string name() const override { return "shift-invert-sparse-lu"; }
    OperatorCost cost() const override;
    /// Worst componentwise backward error of the solves so far.
    double worst_backward_error() const { return worst_backward_error_; }
    std::int64_t solves() const { return solves_; }
    /// y = (A - zI)^-1 x for this rank's rows: x, y column-major num_rows() x r. Collective.
    SolveReport solve_rows(const complex_double* x, complex_double* y, int r) const;

protected:
    void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override;

private:
    const Operator& h_;
    const ShiftInvertSolver& solver_;
    mutable double worst_backward_error_ = 0.0;
    mutable std::int64_t solves_ = 0;
};

struct ShiftInvertOptions {
    std::uint64_t seed = 1;          ///< Lanczos start vectors (ThickRestartOptions::seed)
    int refinement_rounds = 3;       ///< subspace-iteration rounds for pairs above tolerance
    FactorOptions factor;
    std::function<void(const numerics::ThickRestartProgress&)> progress;  ///< of the Lanczos runs
};

struct ShiftInvertReport {
    global_index tiny_pivots = 0;    ///< of the factorization at sigma (> 0: sigma is an eigenvalue to rounding)
    double factored_shift = 0.0;     ///< the shift of the factorization used (sigma, or sigma + delta)
    double factor_seconds = 0.0;     ///< all factorizations
    double norm1 = 0.0;              ///< ||H - sigma||_1
    std::int64_t solves = 0;         ///< applications of (H - sigma)^-1 to one vector
    int refinement_rounds = 0;       ///< subspace-iteration rounds taken
    double worst_backward_error = 0.0;
};

/// The request (kind Shift; tolerance absolute, energy units) on the Hermitian `h` (serial or
/// distributed over MPI ranks) whose matrix is analysed in `solver` (the same H: e.g.
/// csr_from_rows of the same model; a DistributedLU when h is distributed). Returns the
/// pairs (this rank's rows of the vectors, orthonormal; values ascending, residuals measured
/// with h; matvecs counts applications of H) and fills `report`. Collective when distributed.
/// @throws InputError      request not of kind Shift, or as numerics::validate; solver of
///                         another size than h
/// @throws NumericalError  a Lanczos search does not converge
numerics::EigenPairs shift_invert_eigenpairs(const Operator& h, const ShiftInvertSolver& solver,
                                             const numerics::EigenRequest& request, const ShiftInvertOptions& options,
                                             ShiftInvertReport& report);

/// The same with one rank's SparseLU (h serial).
numerics::EigenPairs shift_invert_eigenpairs(const Operator& h, SparseLU& lu, const numerics::EigenRequest& request,
                                             const ShiftInvertOptions& options, ShiftInvertReport& report);

}  // namespace topokpm::sparse_direct
