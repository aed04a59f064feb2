#include "numerics/eigs/subspace.hpp"

// LAPACKE on std::complex<double> (layout-compatible), as numerics/cpu/dense_kernels.cpp.
#include <complex>
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "numerics/base/dense_eigen.hpp"
#include "numerics/dense/tall_skinny.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

constexpr complex_double kOne(1.0, 0.0), kZero(0.0, 0.0), kMinusOne(-1.0, 0.0);

void sum_complex(const Operator& op, std::vector<complex_double>& v)
{
    op.sum_over_ranks(reinterpret_cast<double*>(v.data()), 2 * v.size());
}


dense::DenseExecution execution()
{
    dense::DenseExecution ex;
    ex.host_workers = std::max(1, omp_get_max_threads());
    return ex;
}

/// A TileMatrix of max(n, k) rows (zero rows below n), one tile column, row blocks of at
/// least k rows (and of about dense::kTsqrBlockRows rows, TSQR's leaf height).
dense::TileMatrix<complex_double> to_tiles(const Columns& x)
{
    const int k = x.cols, rows = std::max(x.n, k);
    int blocks = std::max(1, rows / std::max(dense::kTsqrBlockRows, 4 * k));
    int mb = (rows + blocks - 1) / blocks;
    if (rows - (blocks - 1) * mb < k) mb = rows;  // the last block would be shorter than k
    dense::TileMatrix<complex_double> t(rows, k, mb, k);
    // Tile i holds rows [i mb, i mb + tile_rows(i)) column-major: one contiguous run per
    // column and tile, tiles in parallel (not element by element through t(r, c)).
#pragma omp parallel for schedule(static)
    for (int i = 0; i < t.mt(); ++i) {
        const int r0 = i * mb, mi = t.tile_rows(i), have = std::max(0, std::min(mi, x.n - r0));
        complex_double* tile = t.tile(i, 0);
        for (int c = 0; c < k; ++c) {
            std::copy_n(x.col(c) + r0, have, tile + static_cast<std::size_t>(c) * mi);
            std::fill_n(tile + static_cast<std::size_t>(c) * mi + have, mi - have, kZero);
        }
    }
    return t;
}
void from_tiles(const dense::TileMatrix<complex_double>& t, Columns& x)
{
    const int mb = t.tile_rows(0);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < t.mt(); ++i) {
        const int r0 = i * mb, mi = t.tile_rows(i), have = std::max(0, std::min(mi, x.n - r0));
        const complex_double* tile = t.tile(i, 0);
        for (int c = 0; c < x.cols; ++c) std::copy_n(tile + static_cast<std::size_t>(c) * mi, have, x.col(c) + r0);
    }
}

/// Across ranks: the ranks' R factors stacked (P k x k, summed into place), their QR on
/// every rank, Q_p := Q_p Q_s[p] (the local TSQR's Q times the rank's block of Q_s).
void combine_tsqr(const Operator& op, const std::vector<complex_double>& r_local, Columns& q)
{
    const int k = q.cols, p = op.num_ranks(), me = op.rank();
    const int rows = p * k;
    std::vector<complex_double> s(static_cast<std::size_t>(rows) * k, kZero);
    for (int c = 0; c < k; ++c)
        for (int r = 0; r <= c; ++r) s[static_cast<std::size_t>(me * k + r + c * rows)] = r_local[r + c * k];
    sum_complex(op, s);
    std::vector<complex_double> tau(k);
    lapack_int info = LAPACKE_zgeqrf(LAPACK_COL_MAJOR, rows, k, s.data(), rows, tau.data());
    if (info == 0) info = LAPACKE_zungqr(LAPACK_COL_MAJOR, rows, k, k, s.data(), rows, tau.data());
    if (info != 0) throw NumericalError(topokpm::detail::concat("QR of the ranks' stacked R factors failed, info = ", info));
    std::vector<complex_double> mine(static_cast<std::size_t>(k) * k);
    for (int c = 0; c < k; ++c)
        for (int r = 0; r < k; ++r) mine[r + c * k] = s[static_cast<std::size_t>(me * k + r + c * rows)];
    Columns out(q.n, k);
    if (q.n > 0)
        cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, q.n, k, k, &kOne, q.data.data(), q.n, mine.data(), k,
                    &kZero, out.data.data(), q.n);
    q.data.swap(out.data);
}

/// How a CholQR pass went.
enum class Pass { failed, plain, shifted };

/// One CholQR pass across ranks on X D, D = diag(2^-e_j) with d_j^2 G_jj in [1, 4): G =
/// X^H X summed, Gs = D G D = U^H U, X := X (U D^-1)^-1. Scaling by powers of two is exact,
/// so this is, bit for bit, CholQR of the equilibrated X D, and its guarantee (Yamamoto et
/// al.) needs kappa2(X D), not kappa2(X): a filtered block whose columns differ in norm by
/// many orders but point in well separated directions (a ChebFD block of filtered Ritz
/// vectors) passes instead of falling back to TSQR.
/// When the Cholesky fails or 1/kappa1(Gs) is below `rcond_min` and `may_shift`, the same
/// Gs is factored with the shift s = 11 (N k + k(k+1)) u tr(Gs) (shifted CholeskyQR,
/// Fukaya, Kannan, Nakatsukasa, Zhang, Yamamoto, SIAM J. Sci. Comput. 42 (2020) A477; their
/// shift with ||X D||_F^2 >= ||X D||_2^2, so the Cholesky of Gs + s I cannot fail in
/// rounding): X D (U_s)^-1 spans the same space with its condition cut to about
/// ||X D|| / sqrt(s) at most, after which CholQR2 holds. `rcond` receives 1/kappa1(Gs) (0
/// when the Cholesky failed). X is untouched when the pass failed (a zero or non-finite
/// column, or a failed factorization).
Pass cholqr_pass(const Operator& op, Columns& x, double rcond_min, bool may_shift, double* rcond = nullptr)
{
    const int k = x.cols;
    if (rcond) *rcond = 0.0;
    std::vector<complex_double> g(static_cast<std::size_t>(k) * k, kZero);
    std::vector<std::vector<complex_double>> parts(static_cast<std::size_t>(omp_get_max_threads()));
    for_thread_rows(x.n, [&](int t, int r0, int rows) {
        parts[t].assign(g.size(), kZero);
        cblas_zherk(CblasColMajor, CblasUpper, CblasConjTrans, k, rows, 1.0, x.data.data() + r0, x.n, 0.0,
                    parts[t].data(), k);
    });
    sum_parts(parts, g);
    sum_complex(op, g);
    std::vector<double> d(static_cast<std::size_t>(k));
    for (int j = 0; j < k; ++j) {
        const double gjj = g[static_cast<std::size_t>(j) * (k + 1)].real();
        if (!(gjj > 0.0) || !std::isfinite(gjj)) return Pass::failed;
        d[j] = std::ldexp(1.0, -(std::ilogb(gjj) >> 1));  // floor(e / 2): d^2 G_jj in [1, 4)
    }
    double trace = 0.0;
    for (int c = 0; c < k; ++c) {
        for (int r = 0; r <= c; ++r) g[r + static_cast<std::size_t>(c) * k] *= d[r] * d[c];
        trace += g[static_cast<std::size_t>(c) * (k + 1)].real();
    }
    const std::vector<complex_double> gs = may_shift ? g : std::vector<complex_double>();
    Pass pass = Pass::plain;
    const double anorm = LAPACKE_zlanhe(LAPACK_COL_MAJOR, '1', 'U', k, g.data(), k);
    double rc = 0.0;
    if (LAPACKE_zpotrf(LAPACK_COL_MAJOR, 'U', k, g.data(), k) != 0 ||
        LAPACKE_zpocon(LAPACK_COL_MAJOR, 'U', k, g.data(), k, anorm, &rc) != 0)
        rc = 0.0;
    if (rcond) *rcond = rc;
    if (!(rc >= rcond_min)) {
        if (!may_shift) return Pass::failed;
        g = gs;
        const double u = std::numeric_limits<double>::epsilon() / 2;
        const double shift = 11.0 * (double(op.global_rows()) * k + double(k) * (k + 1)) * u * trace;
        for (int c = 0; c < k; ++c) g[static_cast<std::size_t>(c) * (k + 1)] += shift;
        if (LAPACKE_zpotrf(LAPACK_COL_MAJOR, 'U', k, g.data(), k) != 0) return Pass::failed;
        pass = Pass::shifted;
    }
    for (int c = 0; c < k; ++c)  // R = U D^-1
        for (int r = 0; r <= c; ++r) g[r + static_cast<std::size_t>(c) * k] /= d[c];
    for_thread_rows(x.n, [&](int, int r0, int rows) {
        cblas_ztrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, rows, k, &kOne, g.data(), k,
                    x.data.data() + r0, x.n);
    });
    return pass;
}

}  // namespace

void to_block(const Columns& in, int first, BlockVector& b)
{
    const int w = b.num_cols(), n = in.n;
    complex_double* d = b.data();
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < w; ++c) d[static_cast<std::size_t>(r) * w + c] = in.col(first + c)[r];
}
void from_block(const BlockVector& b, Columns& out, int first)
{
    const int w = b.num_cols(), n = out.n;
    const complex_double* d = b.data();
#pragma omp parallel for schedule(static)
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < w; ++c) out.col(first + c)[r] = d[static_cast<std::size_t>(r) * w + c];
}

int project_out(const Operator& op, int n, const std::vector<ColumnSpan>& against, complex_double* x, int cols,
                std::vector<complex_double>* coefficients)
{
    int total = 0;
    for (const ColumnSpan& s : against) total += s.cols;
    if (coefficients) coefficients->assign(static_cast<std::size_t>(total) * cols, kZero);
    if (total == 0 || cols == 0) return 0;
    // Buffer: the coefficients (total x cols), then the squared column norms of x (pass 1).
    const std::size_t nc = static_cast<std::size_t>(total) * cols;
    std::vector<complex_double> c(nc + cols, kZero);
    int passes = 0;
    for (int pass = 0; pass < 2; ++pass) {
        std::fill(c.begin(), c.end(), kZero);
        if (n > 0) {
            int row = 0;
            for (const ColumnSpan& s : against) {
                if (s.cols > 0 && cols == 1)  // zgemm with one column packs all of B per call: 2-3x slower
                    cblas_zgemv(CblasColMajor, CblasConjTrans, n, s.cols, &kOne, s.data, n, x, 1, &kZero, c.data() + row, 1);
                else if (s.cols > 0)
                    cblas_zgemm(CblasColMajor, CblasConjTrans, CblasNoTrans, s.cols, cols, n, &kOne, s.data, n, x, n,
                                &kZero, c.data() + row, total);
                row += s.cols;
            }
            if (pass == 0)
                for (int j = 0; j < cols; ++j) {
                    const double nrm = cblas_dznrm2(n, x + static_cast<std::size_t>(j) * n, 1);
                    c[nc + j] = nrm * nrm;
                }
        }
        if (pass == 0) {
            sum_complex(op, c);
        } else {
            std::vector<complex_double> just(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(nc));
            sum_complex(op, just);
            std::copy(just.begin(), just.end(), c.begin());
        }
        if (n > 0) {
            int row = 0;
            for (const ColumnSpan& s : against) {
                if (s.cols > 0 && cols == 1)
                    cblas_zgemv(CblasColMajor, CblasNoTrans, n, s.cols, &kMinusOne, s.data, n, c.data() + row, 1, &kOne, x, 1);
                else if (s.cols > 0)
                    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, cols, s.cols, &kMinusOne, s.data, n,
                                c.data() + row, total, &kOne, x, n);
                row += s.cols;
            }
        }
        if (coefficients)
            for (std::size_t i = 0; i < nc; ++i) (*coefficients)[i] += c[i];
        ++passes;
        if (pass == 1) break;
        // DGKS: ||x - B c||^2 = ||x||^2 - ||c||^2; a second pass only when a column lost
        // more than half its squared norm (then its rounding relative to what is left grew).
        bool again = false;
        for (int j = 0; j < cols && !again; ++j) {
            double cc = 0.0;
            for (int i = 0; i < total; ++i) cc += std::norm(c[static_cast<std::size_t>(i) + static_cast<std::size_t>(j) * total]);
            const double before = c[nc + j].real();
            again = !(before - cc > 0.5 * before);
        }
        if (!again) break;
    }
    return passes;
}

namespace {
void project_out_passes(const Operator& op, const Columns& against, Columns& x, int passes)
{
    if (against.cols == 0 || x.cols == 0) return;
    std::vector<complex_double> c(static_cast<std::size_t>(against.cols) * x.cols);
    std::vector<std::vector<complex_double>> parts(static_cast<std::size_t>(omp_get_max_threads()));
    for (int pass = 0; pass < passes; ++pass) {
        for_thread_rows(x.n, [&](int t, int r0, int rows) {
            parts[t].assign(c.size(), kZero);
            cblas_zgemm(CblasColMajor, CblasConjTrans, CblasNoTrans, against.cols, x.cols, rows, &kOne,
                        against.data.data() + r0, x.n, x.data.data() + r0, x.n, &kZero, parts[t].data(), against.cols);
        });
        sum_parts(parts, c);
        sum_complex(op, c);
        for_thread_rows(x.n, [&](int, int r0, int rows) {
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, rows, x.cols, against.cols, &kMinusOne,
                        against.data.data() + r0, x.n, c.data(), against.cols, &kOne, x.data.data() + r0, x.n);
        });
    }
}
}  // namespace

void project_out_twice(const Operator& op, const Columns& against, Columns& x) { project_out_passes(op, against, x, 2); }
void project_out_once(const Operator& op, const Columns& against, Columns& x) { project_out_passes(op, against, x, 1); }

std::vector<int> orthonormalize_by_columns(const Operator& op, int n, complex_double* x, int cols, double drop_ratio,
                                           std::vector<complex_double>* r)
{
    if (r) r->assign(static_cast<std::size_t>(cols) * cols, kZero);
    std::vector<int> dependent;
    std::vector<complex_double> c(static_cast<std::size_t>(cols) + 1);  // coefficients, then ||w||^2 (pass 1)
    for (int j = 0; j < cols; ++j) {
        complex_double* w = x + static_cast<std::size_t>(j) * n;
        double before2 = 0.0;  // ||w||^2 before the passes, summed over the ranks
        // Pass 1 also sums ||w||^2 (the last entry) in its reduction.
        for (int pass = 0; pass < 2; ++pass) {
            std::fill(c.begin(), c.end(), kZero);
            if (n > 0 && j > 0)
                cblas_zgemv(CblasColMajor, CblasConjTrans, n, j, &kOne, x, n, w, 1, &kZero, c.data(), 1);
            if (pass == 0 && n > 0) {
                const double nrm = cblas_dznrm2(n, w, 1);
                c[static_cast<std::size_t>(j)] = nrm * nrm;
            }
            if (j == 0 && pass == 1) break;
            op.sum_over_ranks(reinterpret_cast<double*>(c.data()), 2 * static_cast<std::size_t>(j + (pass == 0 ? 1 : 0)));
            if (pass == 0) before2 = c[static_cast<std::size_t>(j)].real();
            if (n > 0 && j > 0)
                cblas_zgemv(CblasColMajor, CblasNoTrans, n, j, &kMinusOne, x, n, c.data(), 1, &kOne, w, 1);
            if (r)
                for (int i = 0; i < j; ++i) (*r)[static_cast<std::size_t>(i + j * cols)] += c[static_cast<std::size_t>(i)];
        }
        double after = n > 0 ? cblas_dznrm2(n, w, 1) : 0.0;
        after *= after;
        op.sum_over_ranks(&after, 1);
        after = std::sqrt(after);
        const double before = std::sqrt(before2);
        if (!(after > drop_ratio * before) || !(after > 0.0)) {
            std::fill(w, w + n, kZero);
            dependent.push_back(j);
            continue;
        }
        if (r) (*r)[static_cast<std::size_t>(j + j * cols)] = after;
        const complex_double inv(1.0 / after, 0.0);
        if (n > 0) cblas_zscal(n, &inv, w, 1);
    }
    return dependent;
}

bool orthonormalize(const Operator& op, Columns& x)
{
    if (x.cols == 0) return false;
    const auto ex = execution();
    // CholQR2 on the columns in place (zherk, zpotrf, ztrsm: no copy into tiles, which on
    // one rank made the tile engine's cholqr2 the larger part of a ChebFD pass' dense work),
    // under the fallback rule of dense::cholqr2 (1/kappa1 of the equilibrated Gram matrix),
    // with shifted passes in front while that rule rejects it (shifted CholeskyQR3: the
    // filtered block of ChebFD's first pass, kappa2 ~ 1e4-1e6 after equilibration, took
    // TSQR every time, with its copy of the block); TSQR from the tile engine when a pass
    // fails outright or three shifted passes did not bring the block within the rule.
    // No copy of X: a failed pass leaves X untouched, and after passes that went through,
    // TSQR of X R^-1 spans the same space (only the basis is returned, not R).
    const double threshold = dense::cholqr2_rcond_threshold<complex_double>(op.global_rows(), x.cols);
    int plain = 0, shifted = 0;
    Pass pass = Pass::plain;
    while (plain < 2) {
        pass = cholqr_pass(op, x, threshold, shifted < 3);
        if (pass == Pass::failed) break;
        if (pass == Pass::shifted) {
            ++shifted;
            plain = 0;
        } else {
            ++plain;
        }
    }
    if (pass != Pass::failed) return false;
    auto t = to_tiles(x);
    const auto result = dense::tsqr(t, ex);
    from_tiles(t, x);
    if (op.num_ranks() > 1) combine_tsqr(op, result.r, x);
    return true;
}

bool reorthonormalize(const Operator& op, Columns& x)
{
    if (x.cols == 0) return false;
    const double threshold = dense::cholqr2_rcond_threshold<complex_double>(op.global_rows(), x.cols);
    if (cholqr_pass(op, x, threshold, false) == Pass::plain) return false;
    return orthonormalize(op, x);
}

void apply_columns(const Operator& op, const Columns& x, Columns& y)
{
    op.for_each_strip(x.cols, [&](int first, int w) {
        BlockVector xs(x.n, w), ys(x.n, w);
        to_block(x, first, xs);
        op.apply(xs, ys, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
        from_block(ys, y, first);
    });
}

HermitianEigensystem projected_eigensystem(std::vector<complex_double> g, int k)
{
    TOPOKPM_REQUIRE(g.size() == static_cast<std::size_t>(k) * k, "projected matrix of ", g.size(), " entries for ", k,
                    " x ", k);
    for (int c = 0; c < k; ++c)  // Hermitian part
        for (int r = 0; r <= c; ++r) {
            const complex_double h = 0.5 * (g[r + c * k] + std::conj(g[c + r * k]));
            g[r + c * k] = h;
            g[c + r * k] = std::conj(h);
        }
    if (k == 0) return {};
    return hermitian_eigensystem(g, k, 'L');
}

void rotate_in_place(Columns& q, const complex_double* y, int m)
{
    const int k = q.cols, n = q.n;
    TOPOKPM_REQUIRE(m >= 0 && m <= k, "rotation to ", m, " of ", k, " columns");
    if (n > 0 && m > 0) {
        // Rows [r0, r0 + rows) of Q Y depend on the same rows of Q only: each chunk is
        // formed in a buffer and written back over them.
        constexpr int kChunk = 2048;
        complex_double* qd = q.data.data();
#pragma omp parallel
        {
            std::vector<complex_double> buf(static_cast<std::size_t>(kChunk) * m);
#pragma omp for schedule(static)
            for (int r0 = 0; r0 < n; r0 += kChunk) {
                const int rows = std::min(kChunk, n - r0);
                cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, rows, m, k, &kOne, qd + r0, n, y, k, &kZero,
                            buf.data(), rows);
                for (int c = 0; c < m; ++c)
                    std::copy_n(buf.data() + static_cast<std::size_t>(c) * rows, rows,
                                qd + static_cast<std::size_t>(c) * n + r0);
            }
        }
    }
    q.cols = m;
    q.data.resize(static_cast<std::size_t>(n) * m);
}

RitzPairs rayleigh_ritz(const Operator& op, const Columns& q, const Columns& hq, bool residuals)
{
    const int k = q.cols, n = q.n;
    std::vector<complex_double> g(static_cast<std::size_t>(k) * k, kZero);
    if (n > 0 && k > 0)
        cblas_zgemm(CblasColMajor, CblasConjTrans, CblasNoTrans, k, k, n, &kOne, q.data.data(), n, hq.data.data(), n,
                    &kZero, g.data(), k);
    sum_complex(op, g);
    RitzPairs out;
    if (k == 0) {
        out.vectors = Columns(n, 0);
        return out;
    }
    const HermitianEigensystem eig = projected_eigensystem(std::move(g), k);
    out.values = eig.values;
    out.vectors = Columns(n, k);
    if (n > 0)
        cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, k, k, &kOne, q.data.data(), n, eig.vectors.data(), k,
                    &kZero, out.vectors.data.data(), n);
    if (!residuals) return out;
    std::vector<double> res2(static_cast<std::size_t>(k), 0.0);
    constexpr int kChunk = 2048;
    // Per-thread parts summed in thread order: the same residuals in every run.
    std::vector<std::vector<double>> parts(static_cast<std::size_t>(omp_get_max_threads()));
#pragma omp parallel
    {
        std::vector<complex_double> hx(static_cast<std::size_t>(kChunk) * k);
        std::vector<double>& mine = parts[static_cast<std::size_t>(omp_get_thread_num())];
        mine.assign(static_cast<std::size_t>(k), 0.0);
#pragma omp for schedule(static)
        for (int r0 = 0; r0 < n; r0 += kChunk) {
            const int rows = std::min(kChunk, n - r0);
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, rows, k, k, &kOne, hq.data.data() + r0, n,
                        eig.vectors.data(), k, &kZero, hx.data(), rows);
            for (int c = 0; c < k; ++c) {
                const complex_double* x = out.vectors.col(c) + r0;
                double s = 0.0;
                for (int r = 0; r < rows; ++r) s += std::norm(hx[r + static_cast<std::size_t>(c) * rows] - out.values[c] * x[r]);
                mine[c] += s;
            }
        }
    }
    sum_parts(parts, res2);
    op.sum_over_ranks(res2.data(), res2.size());
    for (double& v : res2) v = std::sqrt(v);
    out.residuals = std::move(res2);
    return out;
}

}  // namespace topokpm::numerics
