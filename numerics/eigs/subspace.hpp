#pragma once
/// @file subspace.hpp
/// The subspace algebra every eigensolver shares (thick-restart Lanczos, ChebFD,
/// shift-invert), once: Gram-Schmidt against a basis, orthonormalization of a block, and
/// Rayleigh-Ritz, on the column-major blocks of columns.hpp (this rank's rows, leading
/// dimension n = op.num_rows()). Inner products are summed over the ranks of a distributed
/// operator through Operator::sum_over_ranks, so every function is collective.

#include <algorithm>
#include <vector>

#include <omp.h>

#include "numerics/base/dense_eigen.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/base/types.hpp"
#include "numerics/eigs/columns.hpp"

namespace topokpm::numerics {

/// A read-only run of `cols` columns of this rank's rows (column c at data + c n).
struct ColumnSpan {
    const complex_double* data = nullptr;
    int cols = 0;
};

/// Calls f(thread, r0, rows) once per OpenMP thread, from inside one parallel region, on
/// contiguous row ranges [r0, r0 + rows) that cover [0, n) (empty ranges skipped): BLAS
/// called in f runs single-threaded on its rows (OpenBLAS does not thread inside a parallel
/// region), instead of OpenBLAS's own threading, whose threads wait on each other for every
/// packed panel and stall when the machine is loaded (docs/eigs.md). Products over the rows
/// (Gram matrices) are summed by the caller from per-thread parts in thread order
/// (deterministic for a thread count).
template <class F>
void for_thread_rows(int n, F&& f)
{
#pragma omp parallel
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int r0 = static_cast<int>(static_cast<long long>(n) * t / nt);
        const int r1 = static_cast<int>(static_cast<long long>(n) * (t + 1) / nt);
        if (r1 > r0) f(t, r0, r1 - r0);
    }
}

/// out := the sum of the per-thread parts (each out.size() entries; an empty part is a
/// thread that had no rows), added in thread order: deterministic for a thread count.
template <class T>
void sum_parts(const std::vector<std::vector<T>>& parts, std::vector<T>& out)
{
    std::fill(out.begin(), out.end(), T{});
    for (const auto& p : parts)
        if (!p.empty())
            for (std::size_t i = 0; i < out.size(); ++i) out[i] += p[i];
}

/// Block classical Gram-Schmidt of the `cols` columns at x (n rows each) against the
/// orthonormal columns of `against` (taken as one basis B = [B_0 B_1 ..]):
///     x -= B (B^H x),
/// with one reduction per pass. A second pass runs when the DGKS criterion asks for it:
/// some column kept less than 1/sqrt(2) of its norm (||x - B c||^2 = ||x||^2 - ||c||^2 for
/// orthonormal B, so no extra reduction), after which x is orthogonal to B to working
/// precision (Daniel, Gragg, Kaufman, Stewart, Math. Comp. 30 (1976) 772).
/// `coefficients`, when given, receives the summed coefficients B^H x of the unprojected x
/// (column-major, rows = total columns of `against`, in their order; ld = that total).
/// Returns the passes taken (0 when there is nothing to project against, else 1 or 2).
int project_out(const Operator& op, int n, const std::vector<ColumnSpan>& against, complex_double* x, int cols,
                std::vector<complex_double>* coefficients = nullptr);

/// x -= B (B^H x) for a whole block against a whole block (always two passes: the
/// filtered blocks of ChebFD lean far into the locked span).
void project_out_twice(const Operator& op, const Columns& against, Columns& x);

/// x -= B (B^H x), one pass: for a block whose components along B are already small
/// (a projected block after its orthonormalization), where no cancellation asks for the
/// second pass.
void project_out_once(const Operator& op, const Columns& against, Columns& x);

/// Orthonormalizes the `cols` columns at x in place, column by column (classical
/// Gram-Schmidt, two passes per column, against the earlier columns of x only). A column
/// that keeps less than `drop_ratio` of its norm lies in the span of the earlier ones
/// (to that ratio): it is set to zero and reported. `r`, when given, receives the upper
/// triangular R (cols x cols, column-major) with x_old = x_new R (a dependent column's
/// diagonal entry is 0). Returns the indices of the dependent columns.
std::vector<int> orthonormalize_by_columns(const Operator& op, int n, complex_double* x, int cols, double drop_ratio,
                                           std::vector<complex_double>* r = nullptr);

/// X := an orthonormal basis of its span (X = Q R), all columns kept: CholQR2 in place
/// (the code base's one CholQR2: G = X^H X summed over the ranks, G = U^H U, X := X U^-1,
/// twice) on the column-equilibrated X D (D of powers of two, exact: the guarantee needs
/// kappa2(X D)), accepted when 1/kappa1(D G D) >= dense::cholqr2_rcond_threshold. While
/// that rule rejects it, shifted passes (Cholesky of D G D + s I, s = 11 (N k + k(k+1)) u
/// tr(D G D), Fukaya et al. 2020; at most three) go first: shifted CholeskyQR3 for a
/// filtered block of kappa2 up to ~1/u. Falls back to TSQR from the dense tile engine
/// (dense::tsqr on the rank's rows, then the QR of the ranks' stacked R factors) when a
/// column is zero or not finite, a factorization fails, or three shifted passes did not
/// bring the block within the rule. Returns true when TSQR was taken.
bool orthonormalize(const Operator& op, Columns& x);

/// X := an orthonormal basis of its span for an X that is orthonormal up to a small
/// perturbation (kappa2(X) = 1 + O(eps kappa) after projecting an orthonormalized block once
/// more): one CholQR pass, which is CholQR2's second pass and has its guarantee under the
/// same condition check; orthonormalize() when the check fails. Returns true when TSQR was
/// taken.
bool reorthonormalize(const Operator& op, Columns& x);

/// y = H x for every column of x (y sized like x), in strips of the registered widths;
/// x.cols applications of H to one vector.
void apply_columns(const Operator& op, const Columns& x, Columns& y);

/// Columns [first, first + b.num_cols()) of `in` into the row-major block `b` (b's rows =
/// in.n), and back: the layout change between the eigensolvers' BLAS columns and the
/// blocked SpMMV's row-major blocks.
void to_block(const Columns& in, int first, BlockVector& b);
void from_block(const BlockVector& b, Columns& out, int first);

/// Rayleigh-Ritz on the orthonormal Q given HQ = H Q: the eigenpairs (theta_i, y_i) of
/// G = Q^H H Q (its Hermitian part; rounding leaves G slightly non-Hermitian), ascending,
/// the Ritz vectors X = Q Y and, when asked, the residuals ||H x_i - theta_i x_i||_2 =
/// ||HQ y_i - theta_i x_i|| (HQ Y formed in row chunks, never stored whole).
struct RitzPairs {
    std::vector<double> values;
    std::vector<double> residuals;  ///< empty unless asked
    Columns vectors;
};
RitzPairs rayleigh_ritz(const Operator& op, const Columns& q, const Columns& hq, bool residuals);

/// The eigenpairs (ascending) of the Hermitian part of G = Q^H H Q (k x k, column-major,
/// already summed over the ranks; rounding leaves it slightly non-Hermitian). The one place
/// the Ritz problem is solved: rayleigh_ritz() and ChebFD's strip-wise Rayleigh-Ritz (which
/// forms G from strips of H Q, never stored whole).
HermitianEigensystem projected_eigensystem(std::vector<complex_double> g, int k);

/// Q := Q Y in place (Y: q.cols x m, column-major, ld q.cols; m <= q.cols): the first m
/// columns of q become the rotated ones and q.cols = m (q.data keeps its storage). Formed
/// in row chunks of a few thousand rows, so the extra memory is one chunk of rows per
/// thread instead of a second n x m block.
void rotate_in_place(Columns& q, const complex_double* y, int m);

}  // namespace topokpm::numerics
