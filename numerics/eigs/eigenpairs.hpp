#pragma once
/// @file eigenpairs.hpp
/// What an eigensolver is asked for and what it returns (models.md §6), shared by every
/// method (dense, thick-restart Lanczos, and the filter and shift-invert methods to come).

#include <cstdint>
#include <vector>

#include "numerics/base/operator.hpp"
#include "numerics/base/types.hpp"

namespace topokpm::numerics {

/// The request of models.md §6. Energies in units of t.
struct EigenRequest {
    enum class Kind { Window, Lowest, Highest, Shift };
    Kind kind = Kind::Lowest;
    double window_min = 0.0;  ///< Window: every eigenvalue in [window_min, window_max]
    double window_max = 0.0;
    int count = 1;            ///< Lowest, Highest, Shift: k >= 1 eigenvalues
    double shift = 0.0;       ///< Shift: the k eigenvalues nearest it, ties the lower one first
    double tolerance = 1e-8;  ///< converged when ||H v - lambda v||_2 <= tolerance (energy units), ||v|| = 1
};

/// Checks the request against a matrix of dimension n.
/// @throws InputError  count outside 1..n ({eig_count}), window_min >= window_max or not
///                     finite ({eig_window}), tolerance <= 0 ({eig_tolerance})
void validate(const EigenRequest& request, global_index n);

/// The request of an extremal method: the `count` lowest (`lowest`) or highest pairs at
/// `tolerance` (the extremal solvers build and validate() theirs here).
EigenRequest extremal_request(bool lowest, int count, double tolerance);

/// Indices into the ascending `values` (a whole spectrum) that `request` selects, ascending:
/// Lowest/Highest/Shift choose count values (all if count > values.size()) and add the
/// values equal to the last chosen one within 2 tolerance (the rest of a degenerate level:
/// the one rule of docs/eigs.md, "Tolerance and degenerate levels"; with the tolerance at
/// least reachable_tolerance(), the copies of a level, equal to rounding, always qualify).
std::vector<int> select_eigenvalues(const std::vector<double>& values, const EigenRequest& request);

/// Eigenpairs as returned by every method, ascending in value.
struct EigenPairs {
    std::vector<double> values;           ///< Rayleigh quotients <v|H v> of the returned vectors
    std::vector<double> residuals;        ///< ||H v - lambda v||_2, measured by one apply of H
    std::vector<complex_double> vectors;  ///< this rank's rows, column-major: local_rows x values.size()
    global_index local_rows = 0;          ///< op.num_rows()
    std::int64_t matvecs = 0;             ///< applications of H to one vector
    int restarts = 0;                     ///< Lanczos: thick restarts over all searches
    int searches = 0;                     ///< Lanczos: searches from a fresh start vector
    int block = 0;                        ///< block methods: the largest block (locked + filtered columns)
};

/// The smallest absolute tolerance (energy units) the residuals of measured_pairs() can
/// confirm for a Hermitian operator with at most `nonzeros_per_row` entries per row and
/// absolute row sums at most `row_sum` (the Gershgorin bound max(|Emin|, |Emax|)): one apply
/// of H is rounded by up to nonzeros_per_row eps row_sum in 2-norm (|fl(Hv) - Hv| <=
/// gamma_k |H| |v|, || |H| ||_2 <= row_sum), and the methods stop at half the tolerance;
/// 4 nonzeros_per_row eps row_sum. A smaller --tolerance is raised to it, with a warning.
double reachable_tolerance(double row_sum, double nonzeros_per_row);

/// Pairs from orthonormal vectors (this rank's rows, column-major, op.num_rows() x k): the
/// Rayleigh quotients and residual norms measured with one block apply of `op` (collective),
/// sorted ascending by value. Adds k to matvecs.
EigenPairs measured_pairs(const Operator& op, const std::vector<complex_double>& vectors, int k);

/// The request solved densely: H assembled by applying `op` to the unit vectors (in blocks
/// of 32; every operator kind, and a distributed one, whose rows are summed over the ranks),
/// all eigenpairs by LAPACK zheevd, the selection of `request`. Memory about 5 * 16 N^2
/// bytes on every rank. For N up to a few thousand, and the reference of the other methods.
/// @throws InputError  N > kDenseMaxRows ({eig_method}), and as validate()
EigenPairs dense_eigenpairs(const Operator& op, const EigenRequest& request);

/// Largest N of dense_eigenpairs (5 * 16 * 8192^2 bytes = 5 GiB).
inline constexpr global_index kDenseMaxRows = 8192;

}  // namespace topokpm::numerics
