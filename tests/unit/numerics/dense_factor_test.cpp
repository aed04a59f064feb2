// Tile Cholesky, tile QR, TSQR (numerics/dense) against backward-error
// bounds and against LAPACK's zpotrf/zgeqrf; schedule independence bit for bit.
//
// Tolerances (u = unit roundoff, gamma_j = j u / (1 - j u); complex arithmetic costs a
// small constant, taken as 4 = 2 sqrt(2) rounded up, Higham §3.6):
//  - Cholesky (Higham Thm 10.3): |A - L L^H| <= gamma_{n+1} |L| |L^H| elementwise, and
//    || |L| |L^H| ||_F <= ||L||_F^2 = trace(A), so ||A - L L^H||_F <= 4 gamma_{n+1} trace(A).
//  - Householder QR (Higham Thm 19.4 / Lemma 19.3): a product of r reflectors of length
//    <= l perturbs each column by <= r gamma_l relative to its norm. In tile QR a column
//    meets at most r = n * mt reflectors (nb per GEQRT/TSQRT and mt tile rows) of length
//    <= 2 nb, so ||A - QR||_F <= 4 r gamma_{2 nb} ||A||_F and ||Q^H Q - I||_F <= sqrt(n)
//    times that relative bound.
//  - Against LAPACK: both factors are exact for A + dA_ours and A + dA_lapack; the
//    first-order perturbation bounds (Higham Thm 10.8 for Cholesky, Sun 1991 for QR)
//    give ||L - L_ref||_F <= kappa2(A) (||dA_1||_F + ||dA_2||_F) / ||A||_2 * ||L||_2 and the
//    same for R with kappa2(A) of the rectangular A.

#include <gtest/gtest.h>

#include <complex>
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <utility>
#include <random>
#include <string>
#include <vector>

#include "numerics/base/dense_eigen.hpp"
#include "numerics/dense/cholesky.hpp"
#include "numerics/dense/dense_kernels.hpp"
#include "numerics/dense/qr.hpp"
#include "numerics/dense/tall_skinny.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/backends.hpp"

using namespace topokpm;
using namespace topokpm::numerics::dense;

namespace {

template <class T>
using Real = typename T::value_type;

template <class T>
double unit_roundoff()
{
    return std::numeric_limits<Real<T>>::epsilon() / 2;
}

double gamma(double j, double u) { return j * u / (1 - j * u); }

/// Column-major m x n Gaussian matrix (complex entries, unit variance), fixed seed.
std::vector<complex_double> gaussian(int m, int n, unsigned seed)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0.0, std::sqrt(0.5));
    std::vector<complex_double> a(std::size_t(m) * n);
    for (auto& x : a) x = {g(rng), g(rng)};
    return a;
}

/// A = X X^H / n + I: Hermitian positive definite, eigenvalues in [1, ~5].
std::vector<complex_double> random_hpd(int n, unsigned seed)
{
    auto x = gaussian(n, n, seed);
    std::vector<complex_double> a(std::size_t(n) * n);
    const complex_double alpha(1.0 / n), beta(0.0);
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasConjTrans, n, n, n, &alpha, x.data(), n, x.data(), n, &beta,
                a.data(), n);
    for (int d = 0; d < n; ++d) a[std::size_t(d) * n + d] += 1.0;
    return a;
}

template <class T>
std::vector<T> cast(const std::vector<complex_double>& a)
{
    return std::vector<T>(a.begin(), a.end());
}

template <class T>
double frob(const std::vector<T>& a)
{
    double s = 0;
    for (const auto& x : a) s += std::norm(complex_double(x));
    return std::sqrt(s);
}

/// C = A^H B in double (m x n inputs, n x n result), the reference products of the tests.
std::vector<complex_double> gram(const std::vector<complex_double>& a, const std::vector<complex_double>& b, int m,
                                 int n)
{
    std::vector<complex_double> c(std::size_t(n) * n);
    const complex_double one(1), zero(0);
    cblas_zgemm(CblasColMajor, CblasConjTrans, CblasNoTrans, n, n, m, &one, a.data(), m, b.data(), m, &zero, c.data(),
                n);
    return c;
}

std::vector<complex_double> product(const std::vector<complex_double>& a, const std::vector<complex_double>& b, int m,
                                    int k, int n)
{
    std::vector<complex_double> c(std::size_t(m) * n);
    const complex_double one(1), zero(0);
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, &one, a.data(), m, b.data(), k, &zero, c.data(),
                m);
    return c;
}

template <class T>
std::vector<complex_double> to_double(const TileMatrix<T>& t)
{
    std::vector<T> out(std::size_t(t.rows()) * t.cols());
    t.to_column_major(out.data(), t.rows());
    return std::vector<complex_double>(out.begin(), out.end());
}

/// kappa2 of an m x n matrix (m >= n) from the eigenvalues of A^H A.
double kappa2(const std::vector<complex_double>& a, int m, int n)
{
    auto ev = numerics::hermitian_eigenvalues(gram(a, a, m, n), n);
    return std::sqrt(ev.back() / ev.front());
}

double orthogonality(const std::vector<complex_double>& q, int m, int n)
{
    auto g = gram(q, q, m, n);
    for (int d = 0; d < n; ++d) g[std::size_t(d) * n + d] -= 1.0;
    return frob(g);
}

std::vector<complex_double> upper(const std::vector<complex_double>& a, int lda, int n)
{
    std::vector<complex_double> r(std::size_t(n) * n, 0.0);
    for (int c = 0; c < n; ++c)
        for (int row = 0; row <= c; ++row) r[row + std::size_t(c) * n] = a[row + std::size_t(c) * lda];
    return r;
}

/// Q [R; 0] and Q [I; 0] (m x n each, column-major) of a compact QR factor f (m x n: V below
/// the diagonal with a unit diagonal, R on and above it) and its T (n x n), as xGEQRT leaves
/// them: Q = I - V T V^H applied by xGEMQRT.
template <class T>
std::pair<std::vector<T>, std::vector<T>> applied_factor(int m, int n, const std::vector<T>& f, const std::vector<T>& t)
{
    std::vector<T> qr(std::size_t(m) * n, T(0)), q(std::size_t(m) * n, T(0));
    for (int c = 0; c < n; ++c)
        for (int r = 0; r <= c; ++r) qr[r + std::size_t(c) * m] = f[r + std::size_t(c) * m];
    for (int d = 0; d < n; ++d) q[d + std::size_t(d) * m] = T(1);
    numerics::kernels::cpu::gemqrt('N', m, n, n, n, f.data(), m, t.data(), n, qr.data(), m);
    numerics::kernels::cpu::gemqrt('N', m, n, n, n, f.data(), m, t.data(), n, q.data(), m);
    return {std::move(qr), std::move(q)};
}

/// Householder QR is columnwise backward stable (Higham, Thm 19.4): column c of Q [R; 0] - A
/// within 4 n gamma_m ||a_c|| for the factorization plus as much for xGEMQRT's application
/// (applied_factor), each column against its own norm; Q [I; 0] orthonormal to sqrt(n) times
/// twice 4 n gamma_m. `input` is A as factored, f and t the factor.
template <class T>
void expect_columnwise_backward_stable(int m, int n, const std::vector<T>& input, const std::vector<T>& f,
                                       const std::vector<T>& t, double u, const std::string& what)
{
    const double rel = 4 * n * gamma(m, u);
    const auto [qr, q] = applied_factor(m, n, f, t);
    for (int c = 0; c < n; ++c) {
        double err = 0, norm = 0;
        for (int r = 0; r < m; ++r) {
            const complex_double x(input[r + std::size_t(c) * m]);
            err += std::norm(complex_double(qr[r + std::size_t(c) * m]) - x);
            norm += std::norm(x);
        }
        EXPECT_LE(std::sqrt(err), 2 * rel * std::sqrt(norm)) << what << ", column " << c;
    }
    EXPECT_LE(orthogonality(std::vector<complex_double>(q.begin(), q.end()), m, n), 2 * std::sqrt(double(n)) * rel)
        << what;
}

/// ||R - D R_ref||_F with D the diagonal phases that align R_ref's diagonal to R's
/// (QR is unique only up to them).
double phase_aligned_difference(const std::vector<complex_double>& r, const std::vector<complex_double>& ref, int n)
{
    double s = 0;
    for (int row = 0; row < n; ++row) {
        const complex_double a = r[row + std::size_t(row) * n], b = ref[row + std::size_t(row) * n];
        const complex_double phase = (std::abs(b) > 0 && std::abs(a) > 0) ? (a / std::abs(a)) / (b / std::abs(b)) : 1.0;
        for (int c = row; c < n; ++c)
            s += std::norm(r[row + std::size_t(c) * n] - phase * ref[row + std::size_t(c) * n]);
    }
    return std::sqrt(s);
}

std::vector<DenseExecution> schedules()
{
    std::vector<DenseExecution> out;
    DenseExecution one;  // 1 host worker
    out.push_back(one);
    DenseExecution two = one;
    two.host_workers = 2;
    out.push_back(two);
    DenseExecution device = one;  // host + host-memory device, seed §3.4 split
    device.device_workers = 1;
    out.push_back(device);
    DenseExecution tight = two;  // window of one task, both devices
    tight.device_workers = 1;
    tight.slices = 3;
    tight.window = 1;
    out.push_back(tight);
    // The cost model places the updates (dense/execution.hpp): a device 10x all host
    // workers, and one at a tenth of a host worker; the bits must not care.
    DenseExecution fast = two;
    fast.device_workers = 1;
    fast.rates = {2e9, 2e10, 0.0};
    out.push_back(fast);
    DenseExecution slow = fast;
    slow.rates = {2e9, 1e8, 1e9};
    slow.window = 3;
    out.push_back(slow);
    return out;
}

template <class T>
class DenseTyped : public ::testing::Test {};
using Precisions = ::testing::Types<complex_double, complex_single>;
TYPED_TEST_SUITE(DenseTyped, Precisions);

}  // namespace

TYPED_TEST(DenseTyped, CholeskyResidualWithinBackwardErrorBound)
{
    using T = TypeParam;
    const int n = 300, nb = 64;  // ragged last tile
    const auto a = random_hpd(n, 1);
    TileMatrix<T> t(n, n, nb, nb);
    t.from_column_major(cast<T>(a).data(), n);
    DenseExecution ex;
    ex.host_workers = 2;
    cholesky(t, ex);
    auto l = to_double(t);
    for (int c = 0; c < n; ++c)
        for (int r = 0; r < c; ++r) l[r + std::size_t(c) * n] = 0.0;
    std::vector<complex_double> llh(std::size_t(n) * n);
    const complex_double one(1), zero(0);
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasConjTrans, n, n, n, &one, l.data(), n, l.data(), n, &zero,
                llh.data(), n);
    std::vector<complex_double> diff(a.size());
    double trace = 0;
    for (std::size_t e = 0; e < a.size(); ++e) diff[e] = complex_double(cast<T>({a[e]})[0]) - llh[e];
    for (int d = 0; d < n; ++d) trace += a[std::size_t(d) * n + d].real();
    const double bound = 4 * gamma(n + 1, unit_roundoff<T>()) * trace;
    EXPECT_LE(frob(diff), bound);
    // Not vacuous: a factor with one perturbed entry fails the bound.
    EXPECT_GT(1e-3 * trace, bound);
}

TEST(DenseCholesky, EqualsLapackZpotrfToRounding)
{
    const int n = 256, nb = 48;
    const auto a = random_hpd(n, 2);
    TileMatrix<complex_double> t(n, n, nb, nb);
    t.from_column_major(a.data(), n);
    DenseExecution ex;
    ex.host_workers = 2;
    ex.device_workers = 1;
    cholesky(t, ex);
    auto ref = a;
    ASSERT_EQ(LAPACKE_zpotrf(LAPACK_COL_MAJOR, 'L', n, ref.data(), n), 0);
    auto ours = to_double(t);
    double diff = 0, trace = 0;
    for (int c = 0; c < n; ++c)
        for (int r = c; r < n; ++r) diff += std::norm(ours[r + std::size_t(c) * n] - ref[r + std::size_t(c) * n]);
    for (int d = 0; d < n; ++d) trace += a[std::size_t(d) * n + d].real();
    const auto ev = numerics::hermitian_eigenvalues(a, n);
    const double kappa = ev.back() / ev.front(), norm2 = ev.back();
    const double da = 4 * gamma(n + 1, unit_roundoff<complex_double>()) * trace;
    EXPECT_LE(std::sqrt(diff), kappa * 2 * da / norm2 * std::sqrt(norm2));
}

TYPED_TEST(DenseTyped, CholeskyOfNonPositiveMatrixNamesTheFailingColumn)
{
    using T = TypeParam;
    const int n = 200, nb = 64;
    TileMatrix<T> t(n, n, nb, nb);
    for (int d = 0; d < n; ++d) t(d, d) = T(4);
    t(150, 150) = T(-1);  // tile 2, leading minor of order 151 is negative
    DenseExecution ex;
    ex.host_workers = 2;
    try {
        cholesky(t, ex);
        FAIL() << "no NumericalError";
    } catch (const NumericalError& e) {
        EXPECT_NE(std::string(e.what()).find("column 150,"), std::string::npos) << e.what();
    }
}

TYPED_TEST(DenseTyped, CholeskyIsBitwiseIndependentOfWorkersDevicesAndWindow)
{
    using T = TypeParam;
    const int n = 330, nb = 40;
    const auto a = cast<T>(random_hpd(n, 3));
    std::vector<std::vector<T>> results;
    for (const DenseExecution& ex : schedules()) {
        TileMatrix<T> t(n, n, nb, nb);
        t.from_column_major(a.data(), n);
        const DenseReport report = cholesky(t, ex);
        if (ex.device_workers > 0) {
            EXPECT_GT(report.stats.bytes_to_device, 0u);
        }
        if (ex.window == 1) {
            EXPECT_EQ(report.stats.max_window, 1u);
        }
        results.push_back(t.storage());
    }
    for (std::size_t r = 1; r < results.size(); ++r)
        EXPECT_EQ(std::memcmp(results[0].data(), results[r].data(), results[0].size() * sizeof(T)), 0)
            << "schedule " << r;
}

namespace {

template <class T>
void check_qr(const std::vector<complex_double>& a, int m, int n, int nb, int ib)
{
    TileMatrix<T> t(m, n, nb, nb);
    t.from_column_major(cast<T>(a).data(), m);
    DenseExecution ex;
    ex.host_workers = 2;
    ex.device_workers = 1;
    ex.inner_block = ib;
    auto f = qr(std::move(t), ex);
    const auto q = to_double(form_q(f, ex));
    const auto r = upper(to_double(f.a), m, n);
    const auto qr_prod = product(q, r, m, n, n);
    std::vector<complex_double> diff(a.size());
    for (std::size_t e = 0; e < a.size(); ++e) diff[e] = complex_double(cast<T>({a[e]})[0]) - qr_prod[e];
    const double rel = 4 * double(n) * f.a.mt() * gamma(2 * nb, unit_roundoff<T>());
    EXPECT_LE(frob(diff), rel * frob(a));
    EXPECT_LE(orthogonality(q, m, n), std::sqrt(double(n)) * rel);
}

}  // namespace

TYPED_TEST(DenseTyped, QrResidualAndOrthogonalityWithinBounds)
{
    check_qr<TypeParam>(gaussian(320, 200, 4), 320, 200, 64, 16);
}

TYPED_TEST(DenseTyped, QrOfRankDeficientMatrixStaysBackwardStable)
{
    const int m = 300, n = 180, rank = 40;
    const auto a = product(gaussian(m, rank, 5), gaussian(rank, n, 6), m, rank, n);
    check_qr<TypeParam>(a, m, n, 60, 20);
}

TEST(DenseQr, REqualsLapackZgeqrfToRoundingUpToPhases)
{
    const int m = 320, n = 200, nb = 64;
    const auto a = gaussian(m, n, 7);
    TileMatrix<complex_double> t(m, n, nb, nb);
    t.from_column_major(a.data(), m);
    DenseExecution ex;
    ex.host_workers = 2;
    ex.inner_block = 16;
    auto f = qr(std::move(t), ex);
    auto ref = a;
    std::vector<complex_double> tau(n);
    ASSERT_EQ(LAPACKE_zgeqrf(LAPACK_COL_MAJOR, m, n, ref.data(), m, tau.data()), 0);
    const auto r = upper(to_double(f.a), m, n), r_ref = upper(ref, m, n);
    const double u = unit_roundoff<complex_double>();
    const double backward = 4 * double(n) * f.a.mt() * gamma(2 * nb, u) + 4 * n * gamma(m, u);  // ours + LAPACK
    const double kappa = kappa2(a, m, n);
    // ||R||_2 = ||A||_2, so Sun's bound sqrt(2) kappa ||dA||_F / ||A||_2 * ||R||_2 = sqrt(2) kappa ||dA||_F.
    EXPECT_LE(phase_aligned_difference(r, r_ref, n), std::sqrt(2.0) * kappa * backward * frob(a));
}

TYPED_TEST(DenseTyped, QrIsBitwiseIndependentOfWorkersDevicesAndWindow)
{
    using T = TypeParam;
    const int m = 250, n = 170, nb = 40;
    const auto a = cast<T>(gaussian(m, n, 8));
    std::vector<std::vector<T>> results;
    for (DenseExecution ex : schedules()) {
        ex.inner_block = 8;
        TileMatrix<T> t(m, n, nb, nb);
        t.from_column_major(a.data(), m);
        auto f = qr(std::move(t), ex);
        auto q = form_q(f, ex);
        std::vector<T> all = f.a.storage();
        all.insert(all.end(), q.storage().begin(), q.storage().end());
        results.push_back(all);
    }
    for (std::size_t r = 1; r < results.size(); ++r)
        EXPECT_EQ(std::memcmp(results[0].data(), results[r].data(), results[0].size() * sizeof(T)), 0)
            << "schedule " << r;
}

namespace {

/// N x k block with singular values spread geometrically from 1 to 1/kappa.
std::vector<complex_double> conditioned_block(int rows, int k, double kappa, unsigned seed)
{
    auto x = gaussian(rows, k, seed);
    std::vector<complex_double> tau(k);
    LAPACKE_zgeqrf(LAPACK_COL_MAJOR, rows, k, x.data(), rows, tau.data());
    LAPACKE_zungqr(LAPACK_COL_MAJOR, rows, k, k, x.data(), rows, tau.data());  // orthonormal U
    auto v = gaussian(k, k, seed + 1);
    LAPACKE_zgeqrf(LAPACK_COL_MAJOR, k, k, v.data(), k, tau.data());
    LAPACKE_zungqr(LAPACK_COL_MAJOR, k, k, k, v.data(), k, tau.data());  // unitary V
    for (int c = 0; c < k; ++c) {
        const double sigma = std::pow(kappa, -double(c) / (k - 1));
        for (int r = 0; r < rows; ++r) x[r + std::size_t(c) * rows] *= sigma;
    }
    return product(x, v, rows, k, k);
}

template <class T>
void check_tall_skinny(const std::vector<complex_double>& a, int rows, int k, int block_rows, const TileMatrix<T>& q,
                       const std::vector<T>& r_small, double orth_bound, double residual_bound)
{
    (void)block_rows;
    const auto qd = to_double(q);
    const std::vector<complex_double> r(r_small.begin(), r_small.end());
    const auto qr_prod = product(qd, r, rows, k, k);
    std::vector<complex_double> diff(a.size());
    for (std::size_t e = 0; e < a.size(); ++e) diff[e] = complex_double(cast<T>({a[e]})[0]) - qr_prod[e];
    EXPECT_LE(orthogonality(qd, rows, k), orth_bound);
    EXPECT_LE(frob(diff), residual_bound * frob(a));
}

/// TSQR reflectors per column: k at the leaf (length <= mb) plus k per tree level
/// (length <= 2k); backward error as in the file comment.
double tsqr_relative_bound(int rows, int k, int mb, double u)
{
    const int blocks = (rows + mb - 1) / mb;
    int levels = 0;
    while ((1 << levels) < blocks) ++levels;
    return 4 * (k * gamma(mb, u) + double(k) * levels * gamma(2 * k, u));
}

}  // namespace

TYPED_TEST(DenseTyped, TsqrIsOrthonormalAndMatchesTheBlock)
{
    using T = TypeParam;
    const int rows = 3000, k = 24, mb = 256;  // 12 blocks, last one 184 rows
    const auto a = conditioned_block(rows, k, 1e3, 9);
    TileMatrix<T> t(rows, k, mb, k);
    t.from_column_major(cast<T>(a).data(), rows);
    DenseExecution ex;
    ex.host_workers = 2;
    ex.device_workers = 1;
    ex.inner_block = 8;
    const auto result = tsqr(t, ex);
    const double rel = tsqr_relative_bound(rows, k, mb, unit_roundoff<T>());
    check_tall_skinny<T>(a, rows, k, mb, t, result.r, std::sqrt(double(k)) * rel, rel);
    EXPECT_GT(result.report.stats.peak_device_buffers, 0);
    EXPECT_EQ(result.report.stats.device_buffers, 0);  // released: all device copies freed
}

// Leaf and tree shapes: one leaf shorter than the default block (N < mb, no tree), a last
// leaf of exactly k rows (q_times_top with no GEMM rows), N not a multiple of mb with a
// number of leaves that is not a power of two (an unpaired node at every level).
TYPED_TEST(DenseTyped, TsqrLeafShapesAreBackwardStableAndBitwiseIndependentOfTheSchedule)
{
    using T = TypeParam;
    struct Shape {
        int rows, k, mb;
    };
    for (const Shape& s : {Shape{100, 16, 256}, Shape{176, 16, 80}, Shape{1111, 20, 200}}) {
        const auto a = conditioned_block(s.rows, s.k, 1e2, 11);
        std::vector<std::vector<T>> results;
        for (DenseExecution ex : schedules()) {
            ex.inner_block = 8;
            TileMatrix<T> t(s.rows, s.k, s.mb, s.k);
            t.from_column_major(cast<T>(a).data(), s.rows);
            const auto result = tsqr(t, ex);
            const double rel = tsqr_relative_bound(s.rows, s.k, s.mb, unit_roundoff<T>());
            check_tall_skinny<T>(a, s.rows, s.k, s.mb, t, result.r, std::sqrt(double(s.k)) * rel, rel);
            std::vector<T> all = t.storage();
            all.insert(all.end(), result.r.begin(), result.r.end());
            results.push_back(all);
        }
        for (std::size_t r = 1; r < results.size(); ++r)
            EXPECT_EQ(std::memcmp(results[0].data(), results[r].data(), results[0].size() * sizeof(T)), 0)
                << "rows " << s.rows << ", schedule " << r;
    }
}

// geqrt_recursive (TSQR's leaf) against LAPACK's xGEQRT with ib = n on the same block (A
// m x n, ||A||_2 = 1, kappa2 = 10). Its V, T and R are a Householder QR of A: Q = I - V T V^H,
// applied to [R; 0] by xGEMQRT, gives A to 4 n gamma_m ||A||_F for the factorization plus as
// much for the application (the file comment's bound, n reflectors of length <= m); Q applied
// to [I; 0] is orthonormal to sqrt(n) times 4 n gamma_m (the application alone: Q is unitary
// up to the factors' rounding, counted once more). R equals LAPACK's up to phases within the
// perturbation bound with both backward errors. Shapes: n below, at and above the unblocked
// width, odd splits, m = n.
TYPED_TEST(DenseTyped, GeqrtRecursiveMatchesLapackGeqrt)
{
    using T = TypeParam;
    const double u = unit_roundoff<T>();
    for (const auto& [m, n] : {std::pair{300, 24}, std::pair{64, 64}, std::pair{1000, 5}, std::pair{517, 17},
                               std::pair{40, 9}, std::pair{200, 8}, std::pair{333, 16}, std::pair{16, 16},
                               std::pair{1030, 32}, std::pair{21, 2}}) {
        const auto a = conditioned_block(m, n, 10.0, 21);
        auto ours = cast<T>(a), ref = ours;
        std::vector<T> t_ours(std::size_t(n) * n), t_ref(std::size_t(n) * n);
        numerics::kernels::cpu::geqrt_recursive(m, n, ours.data(), m, t_ours.data(), n);
        numerics::kernels::cpu::geqrt(m, n, n, ref.data(), m, t_ref.data(), n);
        const double rel = 4 * n * gamma(m, u);
        // Q [R; 0] against A.
        const auto [qr, q] = applied_factor(m, n, ours, t_ours);
        std::vector<complex_double> diff(a.size());
        for (std::size_t e = 0; e < a.size(); ++e) diff[e] = complex_double(qr[e]) - a[e];
        EXPECT_LE(frob(diff), 2 * rel * frob(a)) << m << " x " << n;
        EXPECT_LE(orthogonality(std::vector<complex_double>(q.begin(), q.end()), m, n), 2 * std::sqrt(double(n)) * rel)
            << m << " x " << n;
        const std::vector<complex_double> od(ours.begin(), ours.end()), rd(ref.begin(), ref.end());
        EXPECT_LE(phase_aligned_difference(upper(od, m, n), upper(rd, m, n), n), std::sqrt(2.0) * 10.0 * 2 * rel * frob(a))
            << m << " x " << n;
    }
}

// The panel kernel's hand-over to LAPACK's scaled xGEQR2: a column whose sum of squares
// underflows (entries below sqrt(min)), overflows (above sqrt(max)) or is exactly zero, in
// the middle of a panel (n at the unblocked width: geqrt_recursive is that kernel alone) and
// of a recursion (2 x base: in the right half, whose panel was to form V_1^H V_2; 2 x base + 3:
// in a left half, whose panel was to form V_1^H A_2). Householder QR is columnwise backward stable (Higham, Thm 19.4): column j
// of Q [R; 0] - A is within 4 n gamma_m ||a_j|| for the factorization plus as much for
// xGEMQRT's application of V and T, so each column is checked against its own norm (the
// normwise check of the test above would not see a wrong tiny column). Q's orthogonality
// does not depend on the scales: the bound of the test above.
TYPED_TEST(DenseTyped, GeqrtRecursiveHandsOutOfRangeColumnsToLapack)
{
    using T = TypeParam;
    using R = Real<T>;
    const double u = unit_roundoff<T>();
    const double small = std::sqrt(double(std::numeric_limits<R>::min())) * 1e-3;
    const double big = std::sqrt(double(std::numeric_limits<R>::max())) * 1e3;
    const int base = numerics::kernels::cpu::kGeqrtBaseColumns;
    for (const int n : {base, 2 * base, 2 * base + 3})
        for (const double scale : {small, big, 0.0}) {
            const int m = 300, j = n / 2 + 3;  // the out-of-range column: mid-panel in both
            auto a = conditioned_block(m, n, 10.0, 31);
            for (int r = 0; r < m; ++r) a[r + std::size_t(j) * m] *= scale;
            const auto input = cast<T>(a);  // what is factored (float rounds the scaled column)
            auto ours = input;
            std::vector<T> t(std::size_t(n) * n);
            numerics::kernels::cpu::geqrt_recursive(m, n, ours.data(), m, t.data(), n);
            std::ostringstream what;
            what << "n " << n << ", scale " << scale;
            expect_columnwise_backward_stable(m, n, input, ours, t, u, what.str());
        }
}

// The panel kernel (geqrt_recursive at <= kGeqrtBaseColumns columns is that kernel alone)
// against LAPACK's xGEQRF + xLARFT on random (kappa2 = 10), graded (column j scaled by 4^-j)
// and rank-deficient (the right half sums of left-half columns) panels; heights that leave
// every remainder of rows per vector, so the partial vectors at both ends of every pass run.
// - Columnwise backward error and orthogonality of Q = I - V T V^H: the bounds of the test
//   above (graded columns need the columnwise form; a wrong T fails the orthogonality).
// - T against xLARFT on our own V and tau (= diag T): T^{-1} = striu(V^H V) + diag(1/tau),
//   so a perturbation dG of the sums V^H V moves T by -T striu(dG) T to first order, with
//   ||dG||_F <= 4 gamma_m ||V||_F^2 for each of the two computations (sums of m products,
//   complex): ||T - T_lapack||_F <= 2 x 4 gamma_m ||V||_F^2 ||T||_F^2.
// - R against xGEQRF's (random panel; both choose beta = -sign(Re alpha) ||a||): the
//   perturbation bound of GeqrtRecursiveMatchesLapackGeqrt.
TYPED_TEST(DenseTyped, PanelKernelMatchesLapackGeqrfAndLarft)
{
    using T = TypeParam;
    using R = Real<T>;
    const double u = unit_roundoff<T>();
    const int base = numerics::kernels::cpu::kGeqrtBaseColumns;
    for (const auto& [m, n] : {std::pair{1000, base}, std::pair{333, base}, std::pair{4097, base}, std::pair{130, 8},
                               std::pair{37, 5}, std::pair{base, base}, std::pair{base + 2, base}, std::pair{22, 3}})
        for (const int kind : {0, 1, 2}) {  // random, graded, rank-deficient
            auto a = conditioned_block(m, n, 10.0, 41);
            if (kind == 1)
                for (int c = 0; c < n; ++c)
                    for (int r = 0; r < m; ++r) a[r + std::size_t(c) * m] *= std::pow(4.0, -c);
            if (kind == 2)
                for (int c = (n + 1) / 2; c < n; ++c)
                    for (int r = 0; r < m; ++r)
                        a[r + std::size_t(c) * m] = a[r + std::size_t(c - n / 2) * m] + 2.0 * a[r + std::size_t(c - n / 2 - 1 + (n > 2)) * m];
            const auto input = cast<T>(a);
            auto ours = input, ref = input;
            std::vector<T> t(std::size_t(n) * n), tau_ref(n), t_ref(std::size_t(n) * n, T(0));
            numerics::kernels::cpu::geqrt_recursive(m, n, ours.data(), m, t.data(), n);
            const std::string what = std::to_string(m) + " x " + std::to_string(n) + ", kind " + std::to_string(kind);

            const double rel = 4 * n * gamma(m, u);
            expect_columnwise_backward_stable(m, n, input, ours, t, u, what);

            // T from LAPACK on our V and tau.
            std::vector<T> tau(n);
            for (int i = 0; i < n; ++i) tau[i] = t[i + std::size_t(i) * n];
            if constexpr (std::is_same_v<R, double>)
                ASSERT_EQ(LAPACKE_zlarft(LAPACK_COL_MAJOR, 'F', 'C', m, n, ours.data(), m, tau.data(), t_ref.data(), n), 0);
            else
                ASSERT_EQ(LAPACKE_clarft(LAPACK_COL_MAJOR, 'F', 'C', m, n, ours.data(), m, tau.data(), t_ref.data(), n), 0);
            double v2 = n, t2 = 0, dt = 0;  // ||V||_F^2 (unit diagonal), ||T||_F^2, ||T - T_ref||_F^2
            for (int c = 0; c < n; ++c) {
                for (int r = c + 1; r < m; ++r) v2 += std::norm(complex_double(ours[r + std::size_t(c) * m]));
                for (int r = 0; r <= c; ++r) {
                    t2 += std::norm(complex_double(t_ref[r + std::size_t(c) * n]));
                    dt += std::norm(complex_double(t[r + std::size_t(c) * n]) - complex_double(t_ref[r + std::size_t(c) * n]));
                }
            }
            EXPECT_LE(std::sqrt(dt), 2 * 4 * gamma(m, u) * v2 * t2) << what;

            if (kind == 0) {
                if constexpr (std::is_same_v<R, double>)
                    ASSERT_EQ(LAPACKE_zgeqrf(LAPACK_COL_MAJOR, m, n, ref.data(), m, tau_ref.data()), 0);
                else
                    ASSERT_EQ(LAPACKE_cgeqrf(LAPACK_COL_MAJOR, m, n, ref.data(), m, tau_ref.data()), 0);
                double dr = 0;
                for (int c = 0; c < n; ++c)
                    for (int r = 0; r <= c; ++r)
                        dr += std::norm(complex_double(ours[r + std::size_t(c) * m]) - complex_double(ref[r + std::size_t(c) * m]));
                EXPECT_LE(std::sqrt(dr), std::sqrt(2.0) * 10.0 * 2 * rel * frob(a)) << what;
            }
        }
}

// The panel kernel puts its vectors on 64-byte boundaries whatever the block's address, and
// promises the same sums (hence bits) wherever the block lies: the same panel at every offset
// of a complex value inside a 64-byte line, with lda a multiple of the vector length (vectors
// aligned, the ends partial) and odd (unaligned loads from the first row), gives the bits of
// the first placement. (TSQR's schedule tests need it: the host-memory device's tiles lie
// elsewhere than the host's.) 2 x base and 17 columns: a panel that also forms V^H of the
// right half (geqrt_recursive's T_12 before the update).
TYPED_TEST(DenseTyped, PanelKernelBitsDoNotDependOnTheBlocksAddress)
{
    using T = TypeParam;
    const int base = numerics::kernels::cpu::kGeqrtBaseColumns;
    for (const auto& [m, n] : {std::pair{333, base}, std::pair{1030, base}, std::pair{45, 7}, std::pair{1030, 2 * base},
                               std::pair{45, 17}}) {
        const auto input = cast<T>(conditioned_block(m, n, 1e3, 43));
        std::vector<T> first_a, first_t;
        for (const int lda : {(m + 15) / 16 * 16, (m + 15) / 16 * 16 + 1})
            for (int offset = 0; offset < int(64 / sizeof(T)) + 1; ++offset) {
                std::vector<T> buffer(std::size_t(lda) * n + 64);
                const auto addr = reinterpret_cast<std::uintptr_t>(buffer.data());
                T* blk = buffer.data() + ((64 - addr % 64) % 64) / sizeof(T) + offset;  // 64-byte line + offset
                for (int c = 0; c < n; ++c) std::copy_n(&input[std::size_t(c) * m], m, blk + std::size_t(c) * lda);
                std::vector<T> t(std::size_t(n) * n), out(std::size_t(m) * n);
                numerics::kernels::cpu::geqrt_recursive(m, n, blk, lda, t.data(), n);
                for (int c = 0; c < n; ++c) std::copy_n(blk + std::size_t(c) * lda, m, &out[std::size_t(c) * m]);
                if (first_a.empty()) {
                    first_a = out;
                    first_t = t;
                    continue;
                }
                EXPECT_EQ(std::memcmp(out.data(), first_a.data(), out.size() * sizeof(T)), 0)
                    << m << " x " << n << ", lda " << lda << ", offset " << offset;
                EXPECT_EQ(std::memcmp(t.data(), first_t.data(), t.size() * sizeof(T)), 0)
                    << m << " x " << n << ", lda " << lda << ", offset " << offset;
            }
    }
}

// q_times_top (one GEMM) against LAPACK's xGEMQRT on [C; 0] with the same V and T. Both
// apply the block reflector to [C; 0] backward stably: each result is Q [C; 0] + E with
// ||E||_F <= 4 k gamma_m ||C||_F (the Householder bound of the file comment, k reflectors
// of length <= m; Q is unitary so ||[C; 0]||_F = ||C||_F), so they differ by at most twice that.
// 2000 x 64 runs the GEMM in many row chunks (128 KiB of V each) and a shorter last one.
TYPED_TEST(DenseTyped, QTimesTopMatchesGemqrtOnCOverZero)
{
    using T = TypeParam;
    for (const auto& [m, k] : {std::pair{300, 24}, std::pair{24, 24}, std::pair{700, 5}, std::pair{2000, 64}}) {
        auto v = cast<T>(gaussian(m, k, 12));
        std::vector<T> t(std::size_t(k) * k);
        numerics::kernels::cpu::geqrt(m, k, k, v.data(), m, t.data(), k);
        const auto c = cast<T>(gaussian(k, k, 13));
        std::vector<T> ref(std::size_t(m) * k, T(0));
        for (int j = 0; j < k; ++j) std::copy_n(&c[std::size_t(j) * k], k, &ref[std::size_t(j) * m]);
        numerics::kernels::cpu::gemqrt('N', m, k, k, k, v.data(), m, t.data(), k, ref.data(), m);
        auto ours = v;
        numerics::kernels::cpu::q_times_top(m, k, ours.data(), m, t.data(), k, c.data(), k);
        double diff = 0, cnorm = 0;
        for (std::size_t e = 0; e < ours.size(); ++e) diff += std::norm(std::complex<double>(ours[e] - ref[e]));
        for (const T& x : c) cnorm += std::norm(std::complex<double>(x));
        EXPECT_LE(std::sqrt(diff), 2 * 4 * k * gamma(m, unit_roundoff<T>()) * std::sqrt(cnorm)) << m << " x " << k;
        // TSQR keeps T in A's upper triangle (R copied out): the same arithmetic, so the
        // same bits, as long as T is read before A's top rows are written.
        auto in_place = v;
        for (int j = 0; j < k; ++j)
            for (int i = 0; i <= j; ++i) in_place[i + std::size_t(j) * m] = t[i + std::size_t(j) * k];
        numerics::kernels::cpu::q_times_top(m, k, in_place.data(), m, in_place.data(), m, c.data(), k);
        EXPECT_EQ(std::memcmp(in_place.data(), ours.data(), ours.size() * sizeof(T)), 0) << m << " x " << k;
    }
}

TEST(DenseTallSkinny, TsqrREqualsLapackUpToPhases)
{
    const int rows = 2000, k = 16, mb = 200;
    const auto a = conditioned_block(rows, k, 10.0, 10);
    TileMatrix<complex_double> t(rows, k, mb, k);
    t.from_column_major(a.data(), rows);
    DenseExecution ex;
    ex.host_workers = 2;
    const auto result = tsqr(t, ex);
    auto ref = a;
    std::vector<complex_double> tau(k);
    ASSERT_EQ(LAPACKE_zgeqrf(LAPACK_COL_MAJOR, rows, k, ref.data(), rows, tau.data()), 0);
    const double u = unit_roundoff<complex_double>();
    const double backward = tsqr_relative_bound(rows, k, mb, u) + 4 * k * gamma(rows, u);
    const double kappa = 10.0;  // by construction
    // ||A||_2 = 1 by construction; ||R||_2 = 1.
    EXPECT_LE(phase_aligned_difference(std::vector<complex_double>(result.r.begin(), result.r.end()),
                                       upper(ref, rows, k), k),
              std::sqrt(2.0) * kappa * backward * frob(a));
}

// The flop count against the closed forms it must reduce to. One leaf of m rows (no tree):
// xGEQRT3's QR is LAWN 41's xGEQRF leading term 8 k^2 (m - k/3), its T the strictly upper
// V^H V, 4 k^2 (m - 2k/3) to leading order (column j of V has m - j entries), q_times_top
// 8 k^2 (m - k) + 12 k^3; every term the counts leave out is O(k^3 + k m) (the TRMMs'
// k^3 ones, the xLARFGs' 10 m per column), below 20 k^3 + 10 k m + lower order. The tree adds
// mt - 1 nodes of O(k^3) each, so with many leaves the count is still 20 k^2 N + O(mt k^3).
TEST(DenseTallSkinny, FlopCountIsThatOfTheKernelShapes)
{
    for (const auto& [m, k] : {std::pair{8192, 64}, std::pair{5000, 20}, std::pair{640, 64}}) {
        const double leading = 8.0 * k * k * (m - k / 3.0) + 4.0 * k * k * (m - 2.0 * k / 3) +
                               8.0 * k * k * (m - k) + 12.0 * k * k * k;
        const double f = tsqr_flops({m}, k, 32);
        EXPECT_LE(std::abs(f - leading), 20.0 * k * k * k + 10.0 * k * m + 64.0 * k * k) << m << " x " << k;
        EXPECT_GT(f, tsqr_lawn41_flops(m, k)) << "the explicit T and Q cost more than zgeqrf + zungqr";
    }
    // Two leaves and one tree node: the node is counted once and costs O(k^3), no more than
    // a dense QR + apply of its 2k x k stack (8 + 4 + 16 k^2 2k = 56 k^3).
    const int k = 32;
    const double node = tsqr_flops({1000, 1000}, k, 8) - 2 * tsqr_flops({1000}, k, 8);
    EXPECT_GT(node, 0.0);
    EXPECT_LT(node, 56.0 * k * k * k);
    // LAWN 41: 16 k^2 N plus its m k terms (6 m k in xGEQRF's multiplies, -2 m k in xUNGQR's
    // adds: 1/(4k) relative) and O(k^3).
    EXPECT_NEAR(tsqr_lawn41_flops(1e6, 64) / (16.0 * 64 * 64 * 1e6), 1.0, 1.0 / (2 * 64));
}

TEST(DenseTallSkinny, RejectsBlocksShorterThanK)
{
    TileMatrix<complex_double> t(130, 16, 64, 16);  // last block: 2 rows
    EXPECT_THROW(tsqr(t, DenseExecution{}), InputError);
    TileMatrix<complex_double> wide(100, 40, 64, 16);
    EXPECT_THROW(tsqr(wide, DenseExecution{}), InputError);
    TileMatrix<complex_double> straddling(64, 64, 32, 24);  // columns 24..47 cross row 32
    EXPECT_THROW(cholesky(straddling, DenseExecution{}), InputError);
    EXPECT_THROW(qr(straddling, DenseExecution{}), InputError);
    TileMatrix<complex_double> last_rows(70, 32, std::vector<int>{32, 24, 14});  // columns 56..69 cross row 64
    EXPECT_THROW(qr(last_rows, DenseExecution{}), InputError);
}

// ---- hybrid tiles (seed §3.1) and release (seed §4.3) ----

namespace {

/// The share of the update flops (the movable tasks') that the device's workers ran.
double device_flop_share(const tasks::DataflowRuntime::Stats& s)
{
    double all = 0, device = 0;
    for (std::size_t w = 0; w < s.flops.size(); ++w) {
        all += s.flops[w];
        if (s.worker_device[w] != 0) device += s.flops[w];
    }
    return all > 0 ? device / all : 0.0;
}

}  // namespace

// The runtime's cost model (execution.rates) gives the updates to the faster side: with the
// host-memory stand-in rated 10x all host workers together, the device runs most update
// flops; rated at a tenth of one host worker, the host does (the model's balance would give
// the device 1 / 21 of them). With s = 3 the column owner map alone gives the device about
// a third (0.33 for the Cholesky, 0.38 for the QR here) whatever the rates.
TEST(DenseSchedule, CholeskyAndQrUpdatesFollowTheRates)
{
    const int n = 480, nb = 40;  // 12 x 12 tiles
    const auto a = random_hpd(n, 31);
    std::vector<complex_double> reference;
    for (const bool fast : {true, false})
        for (const bool chol : {true, false}) {
            DenseExecution ex;
            ex.host_workers = 2;
            ex.device_workers = 1;
            ex.slices = 3;
            ex.rates = fast ? KernelRates{2e9, 2e10, 0.0} : KernelRates{2e9, 1e8, 0.0};
            TileMatrix<complex_double> t(n, n, nb, nb);
            t.from_column_major(a.data(), n);
            DenseReport report;
            if (chol) report = cholesky(t, ex);
            else qr(std::move(t), ex, &report);
            const double share = device_flop_share(report.stats);
            const std::string what = std::string(chol ? "Cholesky" : "QR") + (fast ? ", fast device" : ", slow device");
            ::testing::Test::RecordProperty(what, std::to_string(share));
            if (fast) {
                EXPECT_GT(share, 0.5) << what;
            } else {
                EXPECT_LT(share, 1.0 / 6) << what;  // half the owner map's third
            }
        }
}

TEST(DenseHybrid, WidthsCutEveryLargeTileIntoNarrowHostSlicesAndOneWideSlice)
{
    // B = 100, s = 3, B_h = 40: per large tile 20, 20 | 60; the last 50 columns: 20, 20, 10.
    EXPECT_EQ(hybrid_widths(250, 100, 3, 40), (std::vector<int>{20, 20, 60, 20, 20, 60, 20, 20, 10}));
    EXPECT_EQ(hybrid_widths(130, 64, 2, 16), (std::vector<int>{16, 48, 16, 48, 2}));
    EXPECT_THROW(hybrid_widths(100, 64, 1, 16), InputError);   // no host slice
    EXPECT_THROW(hybrid_widths(100, 64, 3, 15), InputError);   // not a multiple of s - 1
    EXPECT_THROW(hybrid_widths(100, 64, 2, 64), InputError);   // no device slice left
    // The wide slices sit at j mod s == s - 1: column_owner() gives them to the device.
    const auto w = hybrid_widths(300, 100, 3, 40);
    for (std::size_t j = 0; j < w.size(); ++j) EXPECT_EQ(column_owner(int(j), 3, 1) == 1, w[j] == 60) << j;
}

namespace {

/// schedules() with the hybrid layout's s, so the device owns the wide slices.
std::vector<DenseExecution> hybrid_schedules(int slices)
{
    auto out = schedules();
    for (auto& ex : out) ex.slices = slices;
    DenseExecution two_devices_workers;  // 2 host + 2 device workers
    two_devices_workers.host_workers = 2;
    two_devices_workers.device_workers = 2;
    two_devices_workers.slices = slices;
    out.push_back(two_devices_workers);
    two_devices_workers.rates = {2e9, 2e10, 1e9};  // the cost model over 2 device workers
    out.push_back(two_devices_workers);
    return out;
}

}  // namespace

TYPED_TEST(DenseTyped, HybridCholeskyIsBackwardStableAndBitwiseIndependentOfTheSchedule)
{
    using T = TypeParam;
    const int n = 330, large = 80, slices = 3, host_width = 40;  // slices 20, 20 | 40; ragged last tile
    const auto a = random_hpd(n, 21);
    std::vector<std::vector<T>> results;
    for (const DenseExecution& ex : hybrid_schedules(slices)) {
        TileMatrix<T> t(n, large, hybrid_widths(n, large, slices, host_width));
        t.from_column_major(cast<T>(a).data(), n);
        const DenseReport report = cholesky(t, ex);
        if (ex.device_workers > 0) {
            EXPECT_GT(report.stats.bytes_to_device, 0u);
        }
        results.push_back(t.storage());
        if (results.size() > 1) continue;
        // Same backward-error bound as for square tiles (Higham Thm 10.3 holds for any
        // order of the updates): ||A - L L^H||_F <= 4 gamma_{n+1} trace(A).
        auto l = to_double(t);
        for (int c = 0; c < n; ++c)
            for (int r = 0; r < c; ++r) l[r + std::size_t(c) * n] = 0.0;
        std::vector<complex_double> llh(std::size_t(n) * n);
        const complex_double one(1), zero(0);
        cblas_zgemm(CblasColMajor, CblasNoTrans, CblasConjTrans, n, n, n, &one, l.data(), n, l.data(), n, &zero,
                    llh.data(), n);
        std::vector<complex_double> diff(a.size());
        double trace = 0;
        for (std::size_t e = 0; e < a.size(); ++e) diff[e] = complex_double(cast<T>({a[e]})[0]) - llh[e];
        for (int d = 0; d < n; ++d) trace += a[std::size_t(d) * n + d].real();
        EXPECT_LE(frob(diff), 4 * gamma(n + 1, unit_roundoff<T>()) * trace);
    }
    for (std::size_t r = 1; r < results.size(); ++r)
        EXPECT_EQ(std::memcmp(results[0].data(), results[r].data(), results[0].size() * sizeof(T)), 0)
            << "schedule " << r;
}

TEST(DenseHybrid, CholeskyOfNonPositiveMatrixNamesTheFailingColumnInsideASlice)
{
    const int n = 200;
    auto a = random_hpd(n, 22);
    a[std::size_t(130) * n + 130] = -1e3;  // column 130: inside the second narrow slice of large tile 1
    TileMatrix<complex_double> t(n, 100, hybrid_widths(n, 100, 3, 40));
    t.from_column_major(a.data(), n);
    DenseExecution ex;
    ex.host_workers = 2;
    ex.device_workers = 1;
    ex.slices = 3;
    try {
        cholesky(t, ex);
        FAIL() << "no NumericalError";
    } catch (const NumericalError& e) {
        EXPECT_NE(std::string(e.what()).find("column 130,"), std::string::npos) << e.what();
    }
}

TYPED_TEST(DenseTyped, HybridQrIsBackwardStableAndBitwiseIndependentOfTheSchedule)
{
    using T = TypeParam;
    const int m = 250, n = 170, large = 60, slices = 3, host_width = 30;  // 15, 15 | 30
    const auto a = gaussian(m, n, 23);
    std::vector<std::vector<T>> results;
    for (DenseExecution ex : hybrid_schedules(slices)) {
        ex.inner_block = 8;
        TileMatrix<T> t(m, large, hybrid_widths(n, large, slices, host_width));
        t.from_column_major(cast<T>(a).data(), m);
        auto f = qr(std::move(t), ex);
        auto q = form_q(f, ex);
        std::vector<T> all = f.a.storage();
        all.insert(all.end(), q.storage().begin(), q.storage().end());
        results.push_back(all);
        if (results.size() > 1) continue;
        // The bound of check_qr(): a column meets at most n * mt reflectors of length
        // <= 2 B (a TSQRT couples a slice's rows of one large tile with a B-row tile).
        const auto qd = to_double(q);
        const auto r = upper(to_double(f.a), m, n);
        const auto qr_prod = product(qd, r, m, n, n);
        std::vector<complex_double> diff(a.size());
        for (std::size_t e = 0; e < a.size(); ++e) diff[e] = complex_double(cast<T>({a[e]})[0]) - qr_prod[e];
        const double rel = 4 * double(n) * f.a.mt() * gamma(2 * large, unit_roundoff<T>());
        EXPECT_LE(frob(diff), rel * frob(a));
        EXPECT_LE(orthogonality(qd, m, n), std::sqrt(double(n)) * rel);
    }
    for (std::size_t r = 1; r < results.size(); ++r)
        EXPECT_EQ(std::memcmp(results[0].data(), results[r].data(), results[0].size() * sizeof(T)), 0)
            << "schedule " << r;
}

// Release_Tile (seed §4.3): every device copy is freed by the end, and at any time the
// device holds at most its own tiles of the lower triangle plus the panel tiles of the
// columns in flight: the non-owned copies are bounded by one tile column (the master's
// current one, not yet released) plus the 3 items of each of the `window` unfinished
// tasks. Without release() every panel tile the device ever read would stay.
TEST(DenseRelease, CholeskyFreesDeviceTilesAndBoundsThePeak)
{
    const int n = 480, nb = 30, window = 6;  // 16 x 16 tiles
    const auto a = random_hpd(n, 24);
    TileMatrix<complex_double> t(n, n, nb, nb);
    t.from_column_major(a.data(), n);
    DenseExecution ex;
    ex.host_workers = 1;
    ex.device_workers = 1;
    ex.slices = 2;
    ex.window = window;
    const DenseReport report = cholesky(t, ex);
    long owned_lower = 0, read_by_device = 0;
    for (int j = 0; j < t.nt(); ++j)
        for (int i = j; i < t.mt(); ++i) {
            if (column_owner(j, ex.slices, 1) == 1) ++owned_lower;
            else read_by_device += 1;  // a host panel tile (i, j) is read by the device's updates
        }
    EXPECT_EQ(report.stats.device_buffers, 0);
    EXPECT_GT(report.stats.peak_device_buffers, 0);
    EXPECT_LE(report.stats.peak_device_buffers, owned_lower + t.mt() + 3 * window);
    EXPECT_LT(owned_lower + t.mt() + 3 * window, owned_lower + read_by_device);  // the bound says something
    auto ref = a;
    ASSERT_EQ(LAPACKE_zpotrf(LAPACK_COL_MAJOR, 'L', n, ref.data(), n), 0);
    const auto l = to_double(t);
    EXPECT_NEAR(std::abs(l[n - 1 + std::size_t(n - 1) * n] - ref[n - 1 + std::size_t(n - 1) * n]), 0.0, 1e-10);
}

TEST(DenseRelease, QrAndFormQFreeEveryDeviceBuffer)
{
    const int m = 240, n = 180, nb = 30;
    TileMatrix<complex_double> t(m, n, nb, nb);
    const auto a = gaussian(m, n, 25);
    t.from_column_major(a.data(), m);
    DenseExecution ex;
    ex.host_workers = 1;
    ex.device_workers = 1;
    ex.window = 8;
    DenseReport report;
    auto f = qr(std::move(t), ex, &report);
    EXPECT_GT(report.stats.peak_device_buffers, 0);
    EXPECT_EQ(report.stats.device_buffers, 0);
    TileMatrix<complex_double> q(m, nb, f.a.column_widths());
    for (int d = 0; d < n; ++d) q(d, d) = 1.0;
    const DenseReport applied = apply_q(f, 'N', q, ex);
    EXPECT_GT(applied.stats.peak_device_buffers, 0);
    EXPECT_EQ(applied.stats.device_buffers, 0);
    EXPECT_LE(orthogonality(to_double(q), m, n), 1e-12);
}

// ---- the CUDA worker (DeviceKind::cuda: numerics/cuda/dense_kernels.cpp) ----
//
// The GPU factors are compared with the host factor to rounding, not bit for bit:
// cuSOLVER/cuBLAS sum in other orders than OpenBLAS. The bounds are those of the file
// comment with two backward errors: the GPU kernels compute the same blocked algorithms
// (Higham's bounds hold for any summation order), so each factor is exact for A + dA_i with
// dA_i within the backward bound, and the perturbation bounds give the difference.

namespace {

DenseExecution gpu_execution(int host_workers, int slices)
{
    DenseExecution ex;
    ex.host_workers = host_workers;
    ex.device_workers = 1;
    ex.device_kind = topokpm::tasks::DeviceKind::cuda;
    ex.slices = slices;
    return ex;
}

/// The two layouts the GPU tests run: square tiles (the GPU owns every second tile
/// column) and hybrid tiles (the GPU owns the wide slice of every large tile).
template <class T>
std::vector<TileMatrix<T>> gpu_layouts(int m, int n, int nb, int large, int host_width)
{
    std::vector<TileMatrix<T>> out;
    out.emplace_back(m, n, nb, nb);
    out.emplace_back(m, large, hybrid_widths(n, large, 2, host_width));
    return out;
}

}  // namespace

TEST(DenseCuda, WithoutAGpuTheFactorizationsAreRefusedWithTheReason)
{
    if (!topokpm::testing::cuda_unavailable_reason())
        GTEST_SKIP() << "a CUDA device is visible: this checks the refusal on machines without one";
    TileMatrix<complex_double> t(64, 64, 32, 32);
    for (int d = 0; d < 64; ++d) t(d, d) = 1.0;
    try {
        cholesky(t, gpu_execution(1, 2));
        FAIL() << "a cuda device without a GPU was accepted";
    } catch (const NotCompiled& e) {
        EXPECT_FALSE(topokpm::testing::cuda_compiled) << e.what();
    } catch (const ResourceError& e) {
        EXPECT_TRUE(topokpm::testing::cuda_compiled);
        EXPECT_NE(std::string(e.what()).find("cudaGetDeviceCount"), std::string::npos) << e.what();
    }
}

// TSQR runs host code inside their tasks: a cuda device is an InputError
// before anything runs (on any machine).
TEST(DenseCuda, TallSkinnyFactorizationsRefuseACudaDevice)
{
    TileMatrix<complex_double> t(256, 8, 64, 8);
    for (int d = 0; d < 8; ++d) t(d, d) = 1.0;
    EXPECT_THROW(tsqr(t, gpu_execution(1, 2)), InputError);
}

TYPED_TEST(DenseTyped, CudaCholeskyMatchesTheHostFactorToRounding)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    using T = TypeParam;
    const int n = 1000;
    const auto a = random_hpd(n, 31);
    const auto ev = numerics::hermitian_eigenvalues(a, n);
    const double kappa = ev.back() / ev.front(), norm2 = ev.back();
    double trace = 0;
    for (int d = 0; d < n; ++d) trace += a[std::size_t(d) * n + d].real();
    const double da = 4 * gamma(n + 1, unit_roundoff<T>()) * trace;  // backward error of either factor
    auto layouts = gpu_layouts<T>(n, n, 128, 256, 64);
    // Each layout by the owner map, then with the cost model rating the GPU 10x the host
    // (the updates move to it; the factor is the same to rounding either way).
    for (std::size_t run = 0; run < 2 * layouts.size(); ++run) {
        const std::size_t layout = run % layouts.size();
        DenseExecution ex = gpu_execution(2, 2);
        if (run >= layouts.size()) ex.rates = {2e9, 2e10, 1e10};
        TileMatrix<T> gpu = layouts[layout], host = layouts[layout];
        gpu.from_column_major(cast<T>(a).data(), n);
        host.from_column_major(cast<T>(a).data(), n);
        const DenseReport report = cholesky(gpu, ex);
        if (run >= layouts.size()) {
            EXPECT_GT(device_flop_share(report.stats), 0.5) << "layout " << layout;
        }
        cholesky(host, DenseExecution{});
        EXPECT_GT(report.stats.bytes_to_device, 0u);
        EXPECT_GT(report.stats.bytes_to_host, 0u);
        EXPECT_EQ(report.stats.device_buffers, 0);
        auto l = to_double(gpu);
        const auto l_host = to_double(host);
        double diff = 0;
        for (int c = 0; c < n; ++c)
            for (int r = c; r < n; ++r) diff += std::norm(l[r + std::size_t(c) * n] - l_host[r + std::size_t(c) * n]);
        EXPECT_LE(std::sqrt(diff), kappa * 2 * da / norm2 * std::sqrt(norm2)) << "layout " << layout;
        for (int c = 0; c < n; ++c)
            for (int r = 0; r < c; ++r) l[r + std::size_t(c) * n] = 0.0;
        std::vector<complex_double> llh(std::size_t(n) * n);
        const complex_double one(1), zero(0);
        cblas_zgemm(CblasColMajor, CblasNoTrans, CblasConjTrans, n, n, n, &one, l.data(), n, l.data(), n, &zero,
                    llh.data(), n);
        std::vector<complex_double> residual(a.size());
        for (std::size_t e = 0; e < a.size(); ++e) residual[e] = complex_double(cast<T>({a[e]})[0]) - llh[e];
        EXPECT_LE(frob(residual), da) << "layout " << layout;
    }
}

// The GPU's POTRF (cuSOLVER devInfo) reports the failing minor like LAPACK's info.
TEST(DenseCuda, NotPositiveDefiniteInAGpuColumnNamesTheColumn)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    const int n = 200;
    auto a = random_hpd(n, 32);
    a[std::size_t(170) * n + 170] = -1e3;  // tile column 3 (150..199): the GPU's with s = 2
    TileMatrix<complex_double> t(n, n, 50, 50);
    t.from_column_major(a.data(), n);
    ASSERT_EQ(column_owner(3, 2, 1), 1);
    try {
        cholesky(t, gpu_execution(1, 2));
        FAIL() << "no NumericalError";
    } catch (const NumericalError& e) {
        EXPECT_NE(std::string(e.what()).find("column 170,"), std::string::npos) << e.what();
    }
}

// QR on host + GPU: the GPU runs the updates (GEMQRT/TPMQRT as compact-WY cuBLAS calls,
// Q^H in qr(), Q in form_q()), its panels go through the host staging.
TYPED_TEST(DenseTyped, CudaQrMatchesTheHostFactorToRounding)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    using T = TypeParam;
    const int m = 700, n = 500, nb = 100, large = 200;
    const auto a = gaussian(m, n, 33);
    const double kappa = kappa2(a, m, n);
    auto layouts = gpu_layouts<T>(m, n, nb, large, 64);
    for (std::size_t layout = 0; layout < layouts.size(); ++layout) {
        TileMatrix<T> gpu = layouts[layout], host = layouts[layout];
        gpu.from_column_major(cast<T>(a).data(), m);
        host.from_column_major(cast<T>(a).data(), m);
        DenseExecution ex = gpu_execution(2, 2), host_ex;
        ex.inner_block = host_ex.inner_block = 32;
        DenseReport report;
        auto f = qr(std::move(gpu), ex, &report);
        auto f_host = qr(std::move(host), host_ex);
        EXPECT_GT(report.stats.bytes_to_device, 0u);
        EXPECT_EQ(report.stats.device_buffers, 0);
        const auto q = to_double(form_q(f, ex));
        const auto r = upper(to_double(f.a), m, n), r_host = upper(to_double(f_host.a), m, n);
        const int block = layout == 0 ? nb : large;  // reflector length <= 2 x the row tile
        const double rel = 4 * double(n) * f.a.mt() * gamma(2 * block, unit_roundoff<T>());
        const auto qr_prod = product(q, r, m, n, n);
        std::vector<complex_double> diff(a.size());
        for (std::size_t e = 0; e < a.size(); ++e) diff[e] = complex_double(cast<T>({a[e]})[0]) - qr_prod[e];
        EXPECT_LE(frob(diff), rel * frob(a)) << "layout " << layout;
        EXPECT_LE(orthogonality(q, m, n), std::sqrt(double(n)) * rel) << "layout " << layout;
        // Sun's bound with both backward errors, as in REqualsLapackZgeqrfToRoundingUpToPhases.
        EXPECT_LE(phase_aligned_difference(r, r_host, n), std::sqrt(2.0) * kappa * 2 * rel * frob(a))
            << "layout " << layout;
    }
}

// Run to run on one GPU the factor is bitwise the same whatever the host workers and the
// window: the tile update order is fixed by the runtime, and cuBLAS documents bitwise
// reproducible results for a handle used on one stream on the same GPU (each worker has
// one stream and its own handle). Across host and GPU it is not (see above).
TYPED_TEST(DenseTyped, CudaCholeskyAndQrAreBitwiseIndependentOfTheHostSchedule)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    using T = TypeParam;
    const int n = 600, nb = 100;
    const auto a = random_hpd(n, 34);
    std::vector<std::vector<T>> chol, qrs;
    for (int variant = 0; variant < 2; ++variant) {
        DenseExecution ex = gpu_execution(variant == 0 ? 1 : 2, 2);
        if (variant == 1) ex.window = 1;
        TileMatrix<T> t(n, n, nb, nb);
        t.from_column_major(cast<T>(a).data(), n);
        cholesky(t, ex);
        chol.push_back(t.storage());
        TileMatrix<T> g(n, n, nb, nb);
        g.from_column_major(cast<T>(a).data(), n);
        qrs.push_back(qr(std::move(g), ex).a.storage());
    }
    EXPECT_EQ(std::memcmp(chol[0].data(), chol[1].data(), chol[0].size() * sizeof(T)), 0);
    EXPECT_EQ(std::memcmp(qrs[0].data(), qrs[1].data(), qrs[0].size() * sizeof(T)), 0);
}
