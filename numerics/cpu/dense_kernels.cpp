// CPU tile kernels of numerics/dense/dense_kernels.hpp: LAPACKE (_work variants, so no
// O(n^2) NaN scan per call) and CBLAS, one instantiation per precision.
#include "numerics/dense/dense_kernels.hpp"

#include <complex>
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "runtime/base/error.hpp"

namespace topokpm::numerics::kernels::cpu {

namespace {

template <class T>
constexpr bool is_double = std::is_same_v<T, complex_double>;

/// Per-thread workspace (the tile kernels run on many workers at once).
template <class T>
T* workspace(std::size_t n)
{
    thread_local std::vector<T> buffer;
    if (buffer.size() < n) buffer.resize(n);
    return buffer.data();
}

void check(lapack_int info, const char* routine)
{
    TOPOKPM_REQUIRE(info == 0, routine, " rejected argument ", -info);
}

}  // namespace

template <class T>
int potrf(int n, T* a, int lda)
{
    lapack_int info;
    if constexpr (is_double<T>) info = LAPACKE_zpotrf_work(LAPACK_COL_MAJOR, 'L', n, a, lda);
    else info = LAPACKE_cpotrf_work(LAPACK_COL_MAJOR, 'L', n, a, lda);
    TOPOKPM_REQUIRE(info >= 0, "potrf rejected argument ", -info);
    return static_cast<int>(info);
}

template <class T>
int potrf_upper(int n, T* a, int lda)
{
    lapack_int info;
    if constexpr (is_double<T>) info = LAPACKE_zpotrf_work(LAPACK_COL_MAJOR, 'U', n, a, lda);
    else info = LAPACKE_cpotrf_work(LAPACK_COL_MAJOR, 'U', n, a, lda);
    TOPOKPM_REQUIRE(info >= 0, "potrf rejected argument ", -info);
    return static_cast<int>(info);
}

template <class T>
void trsm_right_lower_conj(int m, int n, const T* l, int ldl, T* b, int ldb)
{
    const T one(1);
    if constexpr (is_double<T>)
        cblas_ztrsm(CblasColMajor, CblasRight, CblasLower, CblasConjTrans, CblasNonUnit, m, n, &one, l, ldl, b, ldb);
    else
        cblas_ctrsm(CblasColMajor, CblasRight, CblasLower, CblasConjTrans, CblasNonUnit, m, n, &one, l, ldl, b, ldb);
}

template <class T>
void trsm_right_upper(int m, int n, const T* r, int ldr, T* b, int ldb)
{
    const T one(1);
    if constexpr (is_double<T>)
        cblas_ztrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, &one, r, ldr, b, ldb);
    else
        cblas_ctrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, &one, r, ldr, b, ldb);
}

template <class T>
void herk_minus(int n, int k, const T* a, int lda, T* c, int ldc)
{
    if constexpr (is_double<T>) cblas_zherk(CblasColMajor, CblasLower, CblasNoTrans, n, k, -1.0, a, lda, 1.0, c, ldc);
    else cblas_cherk(CblasColMajor, CblasLower, CblasNoTrans, n, k, -1.0f, a, lda, 1.0f, c, ldc);
}

template <class T>
void gemm_minus_conj(int m, int n, int k, const T* a, int lda, const T* b, int ldb, T* c, int ldc)
{
    const T minus_one(-1), one(1);
    if constexpr (is_double<T>)
        cblas_zgemm(CblasColMajor, CblasNoTrans, CblasConjTrans, m, n, k, &minus_one, a, lda, b, ldb, &one, c, ldc);
    else
        cblas_cgemm(CblasColMajor, CblasNoTrans, CblasConjTrans, m, n, k, &minus_one, a, lda, b, ldb, &one, c, ldc);
}

template <class T>
void gemm_conj_plain(int n, int k, int m, T alpha, const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc)
{
    if constexpr (is_double<T>)
        cblas_zgemm(CblasColMajor, CblasConjTrans, CblasNoTrans, n, k, m, &alpha, a, lda, b, ldb, &beta, c, ldc);
    else
        cblas_cgemm(CblasColMajor, CblasConjTrans, CblasNoTrans, n, k, m, &alpha, a, lda, b, ldb, &beta, c, ldc);
}

template <class T>
void geqrt(int m, int n, int ib, T* a, int lda, T* t, int ldt)
{
    const int nb = std::max(1, std::min({ib, m, n}));
    T* work = workspace<T>(static_cast<std::size_t>(nb) * n);
    if constexpr (is_double<T>) check(LAPACKE_zgeqrt_work(LAPACK_COL_MAJOR, m, n, nb, a, lda, t, ldt, work), "zgeqrt");
    else check(LAPACKE_cgeqrt_work(LAPACK_COL_MAJOR, m, n, nb, a, lda, t, ldt, work), "cgeqrt");
}

namespace {

template <class T>
void trmm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n, T alpha,
          const T* a, int lda, T* b, int ldb)
{
    if constexpr (is_double<T>) cblas_ztrmm(CblasColMajor, side, uplo, trans, diag, m, n, &alpha, a, lda, b, ldb);
    else cblas_ctrmm(CblasColMajor, side, uplo, trans, diag, m, n, &alpha, a, lda, b, ldb);
}

template <class T>
void gemm(CBLAS_TRANSPOSE ta, int m, int n, int k, T alpha, const T* a, int lda, const T* b, int ldb, T beta, T* c,
          int ldc)
{
    if constexpr (is_double<T>)
        cblas_zgemm(CblasColMajor, ta, CblasNoTrans, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
    else cblas_cgemm(CblasColMajor, ta, CblasNoTrans, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
}

}  // namespace

template <class T>
void geqrt_recursive(int m, int n, T* a, int lda, T* t, int ldt)
{
    TOPOKPM_REQUIRE(m >= n && n >= 0, "geqrt_recursive needs m >= n >= 0, got m = ", m, ", n = ", n);
    if (n == 0) return;
    if (n <= kGeqrtBaseColumns) {
        // Unblocked QR and T: on so few columns xGEQR2's GEMV/GERC passes beat the
        // GEMMs of width 1, 2, 4 that xGEQRT3 recurses into.
        T tau[kGeqrtBaseColumns], work[kGeqrtBaseColumns];
        if constexpr (is_double<T>) {
            check(LAPACKE_zgeqr2_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work), "zgeqr2");
            check(LAPACKE_zlarft_work(LAPACK_COL_MAJOR, 'F', 'C', m, n, a, lda, tau, t, ldt), "zlarft");
        } else {
            check(LAPACKE_cgeqr2_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work), "cgeqr2");
            check(LAPACKE_clarft_work(LAPACK_COL_MAJOR, 'F', 'C', m, n, a, lda, tau, t, ldt), "clarft");
        }
        return;
    }
    // xGEQRT3's recursion: left half, its reflectors applied to the right half (with T_12 as
    // workspace), right half, then T_12 = -T_1 V_1^H V_2 T_2.
    const T one(1), minus_one(-1);
    const int n1 = n / 2, n2 = n - n1;
    T* a12 = a + std::size_t(n1) * lda;
    T* a22 = a12 + n1;
    T* t12 = t + std::size_t(n1) * ldt;
    geqrt_recursive(m, n1, a, lda, t, ldt);
    for (int j = 0; j < n2; ++j)
        std::copy_n(a12 + std::size_t(j) * lda, n1, t12 + std::size_t(j) * ldt);
    trmm(CblasLeft, CblasLower, CblasConjTrans, CblasUnit, n1, n2, one, a, lda, t12, ldt);
    gemm(CblasConjTrans, n1, n2, m - n1, one, a + n1, lda, a22, lda, one, t12, ldt);
    trmm(CblasLeft, CblasUpper, CblasConjTrans, CblasNonUnit, n1, n2, one, t, ldt, t12, ldt);
    gemm(CblasNoTrans, m - n1, n2, n1, minus_one, a + n1, lda, t12, ldt, one, a22, lda);
    trmm(CblasLeft, CblasLower, CblasNoTrans, CblasUnit, n1, n2, one, a, lda, t12, ldt);
    for (int j = 0; j < n2; ++j)
        for (int i = 0; i < n1; ++i) a12[i + std::size_t(j) * lda] -= t12[i + std::size_t(j) * ldt];
    geqrt_recursive(m - n1, n2, a22, lda, t12 + n1, ldt);
    for (int j = 0; j < n2; ++j)
        for (int i = 0; i < n1; ++i) t12[i + std::size_t(j) * ldt] = std::conj(a[n1 + j + std::size_t(i) * lda]);
    trmm(CblasRight, CblasLower, CblasNoTrans, CblasUnit, n1, n2, one, a22, lda, t12, ldt);
    if (m > n) gemm(CblasConjTrans, n1, n2, m - n, one, a + n, lda, a22 + n2, lda, one, t12, ldt);
    trmm(CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, n1, n2, minus_one, t, ldt, t12, ldt);
    trmm(CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, n1, n2, one, t12 + n1, ldt, t12, ldt);
}

template <class T>
void gemqrt(char trans, int m, int n, int k, int ib, const T* v, int ldv, const T* t, int ldt, T* c, int ldc)
{
    const int nb = std::max(1, std::min(ib, k));
    T* work = workspace<T>(static_cast<std::size_t>(nb) * std::max(1, n));
    if constexpr (is_double<T>)
        check(LAPACKE_zgemqrt_work(LAPACK_COL_MAJOR, 'L', trans, m, n, k, nb, v, ldv, t, ldt, c, ldc, work), "zgemqrt");
    else
        check(LAPACKE_cgemqrt_work(LAPACK_COL_MAJOR, 'L', trans, m, n, k, nb, v, ldv, t, ldt, c, ldc, work), "cgemqrt");
}

template <class T>
void tpqrt(int m, int n, int l, int ib, T* a, int lda, T* b, int ldb, T* t, int ldt)
{
    const int nb = std::max(1, std::min(ib, n));
    T* work = workspace<T>(static_cast<std::size_t>(nb) * n);
    if constexpr (is_double<T>)
        check(LAPACKE_ztpqrt_work(LAPACK_COL_MAJOR, m, n, l, nb, a, lda, b, ldb, t, ldt, work), "ztpqrt");
    else
        check(LAPACKE_ctpqrt_work(LAPACK_COL_MAJOR, m, n, l, nb, a, lda, b, ldb, t, ldt, work), "ctpqrt");
}

template <class T>
void tpmqrt(char trans, int m, int n, int k, int l, int ib, const T* v, int ldv, const T* t, int ldt, T* a,
            int lda, T* b, int ldb)
{
    const int nb = std::max(1, std::min(ib, k));
    T* work = workspace<T>(static_cast<std::size_t>(nb) * std::max(1, n));
    if constexpr (is_double<T>)
        check(LAPACKE_ztpmqrt_work(LAPACK_COL_MAJOR, 'L', trans, m, n, k, l, nb, v, ldv, t, ldt, a, lda, b, ldb, work),
              "ztpmqrt");
    else
        check(LAPACKE_ctpmqrt_work(LAPACK_COL_MAJOR, 'L', trans, m, n, k, l, nb, v, ldv, t, ldt, a, lda, b, ldb, work),
              "ctpmqrt");
}

template <class T>
void q_times_top(int m, int k, T* a, int lda, const T* t, int ldt, const T* c, int ldc)
{
    TOPOKPM_REQUIRE(m >= k && k >= 0, "q_times_top needs m >= k >= 0, got m = ", m, ", k = ", k);
    if (k == 0) return;
    // Rows of V_2 staged per GEMM: 256 x k stays in L2 next to W for k up to a few hundred.
    const int chunk = 256;
    const std::size_t kk = std::size_t(k) * k;
    T* w = workspace<T>(2 * kk + std::size_t(chunk) * k);
    T* top = w + kk;
    T* stage = top + kk;
    const T one(1), zero(0), minus_one(-1);
    for (int j = 0; j < k; ++j) std::copy_n(c + std::size_t(j) * ldc, k, w + std::size_t(j) * k);
    if constexpr (is_double<T>) {
        cblas_ztrmm(CblasColMajor, CblasLeft, CblasLower, CblasConjTrans, CblasUnit, k, k, &one, a, lda, w, k);
        cblas_ztrmm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, k, k, &one, t, ldt, w, k);
    } else {
        cblas_ctrmm(CblasColMajor, CblasLeft, CblasLower, CblasConjTrans, CblasUnit, k, k, &one, a, lda, w, k);
        cblas_ctrmm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, k, k, &one, t, ldt, w, k);
    }
    // A_2 := -V_2 W, chunk by chunk: each chunk's V rows are read before the GEMM overwrites them.
    for (int r0 = k; r0 < m; r0 += chunk) {
        const int rows = std::min(chunk, m - r0);
        for (int j = 0; j < k; ++j)
            std::copy_n(a + r0 + std::size_t(j) * lda, rows, stage + std::size_t(j) * rows);
        if constexpr (is_double<T>)
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, rows, k, k, &minus_one, stage, rows, w, k, &zero,
                        a + r0, lda);
        else
            cblas_cgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, rows, k, k, &minus_one, stage, rows, w, k, &zero,
                        a + r0, lda);
    }
    // A_1 := C - V_1 W (V_1 still in place: the GEMMs wrote rows >= k only).
    std::copy_n(w, kk, top);
    if constexpr (is_double<T>)
        cblas_ztrmm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, k, k, &one, a, lda, top, k);
    else
        cblas_ctrmm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, k, k, &one, a, lda, top, k);
    for (int j = 0; j < k; ++j)
        for (int i = 0; i < k; ++i)
            a[i + std::size_t(j) * lda] = c[i + std::size_t(j) * ldc] - top[i + std::size_t(j) * k];
}

template <class T>
double pocon_upper(int n, const T* u, int ldu, double anorm)
{
    std::vector<T> work(2 * static_cast<std::size_t>(n));
    if constexpr (is_double<T>) {
        std::vector<double> rwork(static_cast<std::size_t>(n));
        double rcond = 0.0;
        check(LAPACKE_zpocon_work(LAPACK_COL_MAJOR, 'U', n, u, ldu, anorm, &rcond, work.data(), rwork.data()), "zpocon");
        return rcond;
    } else {
        std::vector<float> rwork(static_cast<std::size_t>(n));
        float rcond = 0.0f;
        check(LAPACKE_cpocon_work(LAPACK_COL_MAJOR, 'U', n, u, ldu, static_cast<float>(anorm), &rcond, work.data(),
                                  rwork.data()),
              "cpocon");
        return rcond;
    }
}

#define TOPOKPM_DENSE_KERNELS(T)                                                                                  \
    template int potrf<T>(int, T*, int);                                                                          \
    template int potrf_upper<T>(int, T*, int);                                                                    \
    template void trsm_right_lower_conj<T>(int, int, const T*, int, T*, int);                                     \
    template void trsm_right_upper<T>(int, int, const T*, int, T*, int);                                          \
    template void herk_minus<T>(int, int, const T*, int, T*, int);                                                \
    template void gemm_minus_conj<T>(int, int, int, const T*, int, const T*, int, T*, int);                       \
    template void gemm_conj_plain<T>(int, int, int, T, const T*, int, const T*, int, T, T*, int);                 \
    template void geqrt<T>(int, int, int, T*, int, T*, int);                                                      \
    template void geqrt_recursive<T>(int, int, T*, int, T*, int);                                                 \
    template void gemqrt<T>(char, int, int, int, int, const T*, int, const T*, int, T*, int);                     \
    template void tpqrt<T>(int, int, int, int, T*, int, T*, int, T*, int);                                        \
    template void tpmqrt<T>(char, int, int, int, int, int, const T*, int, const T*, int, T*, int, T*, int);       \
    template void q_times_top<T>(int, int, T*, int, const T*, int, const T*, int);                                \
    template double pocon_upper<T>(int, const T*, int, double);

TOPOKPM_DENSE_KERNELS(complex_double)
TOPOKPM_DENSE_KERNELS(complex_single)

// The table of the task kernels: the functions above, with the (unused) queue argument.
template <class T>
const TileKernels<T>& table()
{
    static const TileKernels<T> kernels{
        [](void*, int n, T* a, int lda) { return potrf<T>(n, a, lda); },
        [](void*, int m, int n, const T* l, int ldl, T* b, int ldb) { trsm_right_lower_conj<T>(m, n, l, ldl, b, ldb); },
        [](void*, int n, int k, const T* a, int lda, T* c, int ldc) { herk_minus<T>(n, k, a, lda, c, ldc); },
        [](void*, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T* c, int ldc) {
            gemm_minus_conj<T>(m, n, k, a, lda, b, ldb, c, ldc);
        },
        [](void*, int m, int n, int ib, T* a, int lda, T* t, int ldt) { geqrt<T>(m, n, ib, a, lda, t, ldt); },
        [](void*, char trans, int m, int n, int k, int ib, const T* v, int ldv, const T* t, int ldt, T* c, int ldc) {
            gemqrt<T>(trans, m, n, k, ib, v, ldv, t, ldt, c, ldc);
        },
        [](void*, int m, int n, int l, int ib, T* a, int lda, T* b, int ldb, T* t, int ldt) {
            tpqrt<T>(m, n, l, ib, a, lda, b, ldb, t, ldt);
        },
        [](void*, char trans, int m, int n, int k, int l, int ib, const T* v, int ldv, const T* t, int ldt, T* a,
           int lda, T* b, int ldb) { tpmqrt<T>(trans, m, n, k, l, ib, v, ldv, t, ldt, a, lda, b, ldb); },
    };
    return kernels;
}

template const TileKernels<complex_double>& table<complex_double>();
template const TileKernels<complex_single>& table<complex_single>();

}  // namespace topokpm::numerics::kernels::cpu
