// CPU tile kernels of numerics/dense/dense_kernels.hpp: LAPACKE (_work variants, so no
// O(n^2) NaN scan per call) and CBLAS, one instantiation per precision.
#include "numerics/dense/dense_kernels.hpp"

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

// The BLAS/LAPACK routines of either precision (z for complex double, c for complex float),
// column-major: the kernels below name each operation once.

/// xPOTRF of the `uplo` ('L' or 'U') triangle; returns info (> 0: not positive definite).
template <class T>
int potrf_triangle(char uplo, int n, T* a, int lda)
{
    lapack_int info;
    if constexpr (is_double<T>) info = LAPACKE_zpotrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda);
    else info = LAPACKE_cpotrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda);
    TOPOKPM_REQUIRE(info >= 0, "potrf rejected argument ", -info);
    return static_cast<int>(info);
}

template <class T>
void trsm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n, T alpha,
          const T* a, int lda, T* b, int ldb)
{
    if constexpr (is_double<T>) cblas_ztrsm(CblasColMajor, side, uplo, trans, diag, m, n, &alpha, a, lda, b, ldb);
    else cblas_ctrsm(CblasColMajor, side, uplo, trans, diag, m, n, &alpha, a, lda, b, ldb);
}

template <class T>
void trmm(CBLAS_SIDE side, CBLAS_UPLO uplo, CBLAS_TRANSPOSE trans, CBLAS_DIAG diag, int m, int n, T alpha,
          const T* a, int lda, T* b, int ldb)
{
    if constexpr (is_double<T>) cblas_ztrmm(CblasColMajor, side, uplo, trans, diag, m, n, &alpha, a, lda, b, ldb);
    else cblas_ctrmm(CblasColMajor, side, uplo, trans, diag, m, n, &alpha, a, lda, b, ldb);
}

template <class T>
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, T alpha, const T* a, int lda, const T* b,
          int ldb, T beta, T* c, int ldc)
{
    if constexpr (is_double<T>) cblas_zgemm(CblasColMajor, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
    else cblas_cgemm(CblasColMajor, ta, tb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
}

}  // namespace

template <class T>
int potrf(int n, T* a, int lda)
{
    return potrf_triangle('L', n, a, lda);
}

template <class T>
int potrf_upper(int n, T* a, int lda)
{
    return potrf_triangle('U', n, a, lda);
}

template <class T>
void trsm_right_lower_conj(int m, int n, const T* l, int ldl, T* b, int ldb)
{
    trsm(CblasRight, CblasLower, CblasConjTrans, CblasNonUnit, m, n, T(1), l, ldl, b, ldb);
}

template <class T>
void trsm_right_upper(int m, int n, const T* r, int ldr, T* b, int ldb)
{
    trsm(CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, T(1), r, ldr, b, ldb);
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
    gemm(CblasNoTrans, CblasConjTrans, m, n, k, T(-1), a, lda, b, ldb, T(1), c, ldc);
}

template <class T>
void gemm_conj_plain(int n, int k, int m, T alpha, const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc)
{
    gemm(CblasConjTrans, CblasNoTrans, n, k, m, alpha, a, lda, b, ldb, beta, c, ldc);
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

// The panel kernel of geqrt_recursive: xGEQR2 + xLARFT of an m x n block (n <= kPanelMaxColumns)
// in n + 1 passes over its rows, where xGEQR2 makes three per column (norm, GEMV, GERC) and
// xLARFT one more. Pass p applies reflector p - 1 to the rows below its diagonal (scaling its
// v in place) and, on the rows it has just updated, forms the sums reflector p needs:
// ||a_p||^2 below the diagonal and a_p^H a_c for the columns c > p. With v_p = s a_p below
// the diagonal (one scalar s), v_p^H a_c = a_pc + conj(s) a_p^H a_c, so the next pass applies
// reflector p without another read. The last pass also forms every v_l^H v_i, from which T
// follows as in xLARFT.
//
// Register blocking (docs/dense.md, "TSQR: a register-blocked panel kernel"): a pass takes
// the rows in blocks of kPanelBlockVectors vectors; v_{p-1}, i v_{p-1} and a_p of the block
// stay in registers while every column c > p streams through once (a load, two FMAs for
// y -= w v, a store, two FMAs for the sums a_p y and a_p swap(y), which carry over from block
// to block in memory), so a vector of the panel costs one load, one store and four FMAs. The
// last pass takes the rows in chunks of kPanelChunkVectors vectors (in L2) and forms v_l^H v_i
// for the pairs inside each group of four columns as one tile, then for one i against a
// group's four l. GCC vector extensions, as the SpMMV kernels: AVX-512 with -march=native
// here, the same source lowered to AVX2 or SSE2 elsewhere.
//
// Extra columns (ne > 0; n + ne <= kPanelMaxColumns): ne columns E at ext, with the block's
// lda and row indexing, read only. The last pass also forms W = V^H E (n x ne, into w, ldw;
// V with its unit diagonal and zeros above), the same sums as v_l^H v_i, so the bits do not
// depend on the address either. Returns whether W was formed: not where LAPACK took over
// (then the caller forms it); true when ne = 0.
constexpr int kPanelMaxColumns = 32;
constexpr int kPanelBlockVectors = 4;
constexpr int kPanelChunkVectors = 64;

template <class R>
struct PanelLanes;
template <>
struct PanelLanes<double> {
    using V = double __attribute__((vector_size(64)));
    using Mask = long long __attribute__((vector_size(64)));
    static constexpr Mask swap_mask{1, 0, 3, 2, 5, 4, 7, 6};
};
template <>
struct PanelLanes<float> {
    using V = float __attribute__((vector_size(64)));
    using Mask = int __attribute__((vector_size(64)));
    static constexpr Mask swap_mask{1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14};
};

static_assert(kGeqrtBaseColumns <= kPanelMaxColumns);

template <class T>
bool panel_qr(int m, int n, T* a, int lda, T* t, int ldt, int ne = 0, T* ext = nullptr, T* w = nullptr, int ldw = 0)
{
    using R = typename T::value_type;
    using L = PanelLanes<R>;
    using V = typename L::V;
    constexpr int lanes = int(sizeof(V) / sizeof(R));
    constexpr int per_vec = lanes / 2;  // complex values per vector (interleaved re, im)
    constexpr int max_pairs = kPanelMaxColumns * (kPanelMaxColumns - 1) / 2;
    auto load = [](const T* p) {
        V v;
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    auto store = [](T* p, V v) { std::memcpy(static_cast<void*>(p), &v, sizeof v); };
    auto swap = [](V v) { return __builtin_shuffle(v, L::swap_mask); };
    V sign;  // (-1, +1, ...): sign * swap(x) is i x
    for (int e = 0; e < lanes; ++e) sign[e] = e % 2 ? R(1) : R(-1);
    const V zero_v = sign - sign;
    // Below tiny a sum of squares may hold subnormal terms: LAPACK's scaled xLARFG takes over.
    const R tiny = std::numeric_limits<R>::min() / std::numeric_limits<R>::epsilon();
    auto pair = [](int l, int i) { return i * (i - 1) / 2 + l; };  // l < i

    // Vectors start where row r + phase is a multiple of per_vec: on 64-byte boundaries when
    // every column's start has the same phase (lda a multiple of per_vec), whatever the block's
    // address (an unaligned vector load splits a cache line; docs/dense.md). Row r then
    // sits in lane slot (r + phase) mod per_vec, every row below the diagonal goes through the
    // vector code (the ends as partial vectors, zero-padded in a buffer) and each slot sums its
    // rows in order; `canonical` moves slot (r + phase) mod per_vec to r mod per_vec before the
    // lanes are added. So the sums, and the result's bits, do not depend on the address.
    int phase = 0;
    if (lda % per_vec == 0) {
        const auto addr = reinterpret_cast<std::uintptr_t>(a);
        if (addr % sizeof(T) == 0) phase = int((addr / sizeof(T)) % per_vec);
    }
    auto canonical = [&](V v) {
        V out;
        for (int e = 0; e < per_vec; ++e) {
            const int from = (e + phase) % per_vec;
            out[2 * e] = v[2 * from];
            out[2 * e + 1] = v[2 * from + 1];
        }
        return out;
    };
    // conj(x) . y from the address-layout lane sums of x * y and of swap(x) * y, or of
    // x * swap(y) (`swapped_y`: the same products, each in the other lane of its pair).
    auto dot = [&](V xy, V sxy, bool swapped_y = false) {
        xy = canonical(xy);
        sxy = canonical(sxy);
        R re = 0, im = 0;
        for (int e = 0; e < lanes; e += 2) {
            re += xy[e] + xy[e + 1];
            im += swapped_y ? sxy[e] - sxy[e + 1] : sxy[e + 1] - sxy[e];
        }
        return T(re, im);
    };
    // The first vector holding row r: its first row (<= r).
    auto vector_start = [&](int r) { return (r + phase) / per_vec * per_vec - phase; };

    T* col[kPanelMaxColumns];
    for (int c = 0; c < n; ++c) col[c] = a + std::size_t(c) * lda;
    for (int c = 0; c < ne; ++c) col[n + c] = ext + std::size_t(c) * lda;
    T tau[kPanelMaxColumns];
    R cwr[kPanelMaxColumns], cwi[kPanelMaxColumns];  // cw[c] = conj(tau_{p-1}) v_{p-1}^H a_c
    T s_prev(0);                                     // v_{p-1} = s_prev * its column below the diagonal
    V da[kPanelMaxColumns], db[kPanelMaxColumns];
    // A partial vector: rows lo..hi-1 of the vector from row s, zero-padded (0 * 0 adds
    // nothing to a slot's sum), one per_vec slot per column.
    T part[kPanelMaxColumns * per_vec];
    T* part_col[kPanelMaxColumns];
    for (int c = 0; c < n + ne; ++c) part_col[c] = part + c * per_vec;
    auto gather = [&](int c0, int s, int lo, int hi, int c1) {
        for (int c = c0; c < c1; ++c)
            for (int e = 0; e < per_vec; ++e) part[c * per_vec + e] = s + e >= lo && s + e < hi ? col[c][s + e] : T(0);
    };
    auto scatter = [&](int c0, int c1, int s, int lo, int hi) {
        for (int c = c0; c < c1; ++c)
            for (int r = lo; r < hi; ++r) col[c][r] = part[c * per_vec + (r - s)];
    };
    bool fallback = false;
    int p = 0;

    // Pass p on nb whole vectors of rows from row r of the columns cols[]: reflector p - 1
    // (when `apply`), then the sums of reflector p, v's and a_p's vectors held in registers.
    auto pass_block = [&](auto apply_c, auto nb_c, T* const* cols, int r, V& na) {
        constexpr bool apply = decltype(apply_c)::value;
        constexpr int nb = decltype(nb_c)::value;
        V v[nb], iv[nb], x[nb];
        if constexpr (apply) {
            const R sr = s_prev.real(), si = s_prev.imag();
            T* cp = cols[p - 1] + r;
            for (int i = 0; i < nb; ++i) {
                const V y = load(cp + i * per_vec);
                v[i] = sr * y + si * (sign * swap(y));
                store(cp + i * per_vec, v[i]);
                iv[i] = sign * swap(v[i]);
            }
        }
        {
            T* cp = cols[p] + r;
            for (int i = 0; i < nb; ++i) {
                V y = load(cp + i * per_vec);
                if constexpr (apply) {
                    y -= cwr[p] * v[i];
                    y -= cwi[p] * iv[i];
                    store(cp + i * per_vec, y);
                }
                x[i] = y;
                na += y * y;
            }
        }
        for (int c = p + 1; c < n; ++c) {
            T* cp = cols[c] + r;
            const R wr = cwr[c], wi = cwi[c];
            V xa = da[c], xs = db[c];
            for (int i = 0; i < nb; ++i) {
                V y = load(cp + i * per_vec);
                if constexpr (apply) {
                    y -= wr * v[i];
                    y -= wi * iv[i];
                    store(cp + i * per_vec, y);
                }
                xa += x[i] * y;
                xs += x[i] * swap(y);
            }
            da[c] = xa;
            db[c] = xs;
        }
    };
    using Block = std::integral_constant<int, kPanelBlockVectors>;
    using One = std::integral_constant<int, 1>;
    auto pass = [&](auto apply_c) {
        constexpr bool apply = decltype(apply_c)::value;
        for (int c = p + 1; c < n; ++c) da[c] = db[c] = zero_v;
        V na = zero_v;
        if constexpr (apply) {  // row p: reflector p - 1 only
            const T v = s_prev * col[p - 1][p];
            col[p - 1][p] = v;
            for (int c = p; c < n; ++c) col[c][p] -= T(cwr[c], cwi[c]) * v;
        }
        // Rows p + 1 .. m - 1: a partial vector up to the first vector boundary, whole
        // vectors, a partial vector to the end.
        int r = p + 1;
        const int first = std::min(m, vector_start(r) + per_vec);
        if (r < m && vector_start(r) < r) {
            const int s = vector_start(r);
            gather(p - (apply ? 1 : 0), s, r, first, n);
            pass_block(apply_c, One{}, part_col, 0, na);
            if constexpr (apply) scatter(p - 1, n, s, r, first);
            r = first;
        }
        for (; r + kPanelBlockVectors * per_vec <= m; r += kPanelBlockVectors * per_vec)
            pass_block(apply_c, Block{}, col, r, na);
        for (; r + per_vec <= m; r += per_vec) pass_block(apply_c, One{}, col, r, na);
        if (r < m) {
            gather(p - (apply ? 1 : 0), r, r, m, n);
            pass_block(apply_c, One{}, part_col, 0, na);
            if constexpr (apply) scatter(p - 1, n, r, r, m);
        }
        na = canonical(na);
        R nrm = 0;
        for (int e = 0; e < lanes; ++e) nrm += na[e];
        return nrm;
    };

    for (; p < n; ++p) {
        const R nrm = p == 0 ? pass(std::false_type{}) : pass(std::true_type{});

        // Reflector p (xLARFG's unscaled branch) and row p of the later columns.
        T d[kPanelMaxColumns];
        bool finite = std::isfinite(nrm);
        for (int c = p + 1; c < n; ++c) {
            d[c] = dot(da[c], db[c], true);
            finite = finite && std::isfinite(std::abs(d[c]));
        }
        if (!finite || !(nrm >= tiny)) {
            // Columns >= p hold A after reflectors 0..p-1: LAPACK finishes them, with scaling.
            T work[kPanelMaxColumns];
            if constexpr (std::is_same_v<R, double>)
                check(LAPACKE_zgeqr2_work(LAPACK_COL_MAJOR, m - p, n - p, col[p] + p, lda, tau + p, work), "zgeqr2");
            else
                check(LAPACKE_cgeqr2_work(LAPACK_COL_MAJOR, m - p, n - p, col[p] + p, lda, tau + p, work), "cgeqr2");
            fallback = true;
            break;
        }
        const T alpha = col[p][p];
        const R beta = -std::copysign(std::hypot(std::abs(alpha), std::sqrt(nrm)), alpha.real());
        tau[p] = T((beta - alpha.real()) / beta, -alpha.imag() / beta);
        const T s = T(1) / (alpha - beta);
        for (int c = p + 1; c < n; ++c) {
            const T cw = std::conj(tau[p]) * (col[c][p] + std::conj(s) * d[c]);
            cwr[c] = cw.real();
            cwi[c] = cw.imag();
            col[c][p] -= cw;
        }
        col[p][p] = beta;
        s_prev = s;
    }
    if (!fallback && n > 0) {
        // Last pass: v_{n-1} scaled, and g(l, i) = sum over rows r >= n of conj(v_l) v_i.
        const int last = n - 1;
        V ga[max_pairs], gb[max_pairs];
        for (int e = 0; e < n * (n - 1) / 2; ++e) ga[e] = gb[e] = zero_v;
        V wa[kPanelMaxColumns * kPanelMaxColumns / 4], wb[kPanelMaxColumns * kPanelMaxColumns / 4];
        for (int e = 0; e < n * ne; ++e) wa[e] = wb[e] = zero_v;
        // conj(v_i) . v_l for w columns l0 .. l0 + w - 1 (< i) on nv vectors from row r of
        // cols[], conjugated below (v_i's swap shared by its l).
        auto pairs = [&](auto w_c, T* const* cols, int i, int l0, int r, int nv, V* sa, V* sb) {
            constexpr int w = decltype(w_c)::value;
            V xa[w], xs[w];
            for (int q = 0; q < w; ++q) {
                xa[q] = sa[q];
                xs[q] = sb[q];
            }
            const T* ci = cols[i] + r;
            for (int j = 0; j < nv; ++j) {
                const V xi = load(ci + j * per_vec), si = swap(xi);
                for (int q = 0; q < w; ++q) {
                    const V y = load(cols[l0 + q] + r + j * per_vec);
                    xa[q] += xi * y;
                    xs[q] += si * y;
                }
            }
            for (int q = 0; q < w; ++q) {
                sa[q] = xa[q];
                sb[q] = xs[q];
            }
        };
        // conj(v_i) . v_l for the w (w - 1) / 2 pairs l < i of columns l0 .. l0 + w - 1.
        auto triangle = [&](auto w_c, T* const* cols, int l0, int r, int nv) {
            constexpr int w = decltype(w_c)::value;
            constexpr int np = w * (w - 1) / 2;
            V xa[np], xs[np];
            for (int i = 1, q = 0; i < w; ++i)
                for (int l = 0; l < i; ++l, ++q) {
                    xa[q] = ga[pair(l0 + l, l0 + i)];
                    xs[q] = gb[pair(l0 + l, l0 + i)];
                }
            for (int j = 0; j < nv; ++j) {
                V x[w];
                for (int q = 0; q < w; ++q) x[q] = load(cols[l0 + q] + r + j * per_vec);
                for (int i = 1, q = 0; i < w; ++i) {
                    const V si = swap(x[i]);
                    for (int l = 0; l < i; ++l, ++q) {
                        xa[q] += x[i] * x[l];
                        xs[q] += si * x[l];
                    }
                }
            }
            for (int i = 1, q = 0; i < w; ++i)
                for (int l = 0; l < i; ++l, ++q) {
                    ga[pair(l0 + l, l0 + i)] = xa[q];
                    gb[pair(l0 + l, l0 + i)] = xs[q];
                }
        };
        auto chunk = [&](T* const* cols, int r, int nv) {
            const R sr = s_prev.real(), si = s_prev.imag();
            T* cp = cols[last] + r;
            for (int j = 0; j < nv; ++j) {
                const V x = load(cp + j * per_vec);
                store(cp + j * per_vec, sr * x + si * (sign * swap(x)));
            }
            // Columns in groups of four: the pairs inside a group as one tile, then every
            // later i against the group's four l.
            for (int l0 = 0; l0 < n; l0 += 4) {
                switch (std::min(4, n - l0)) {
                case 4: triangle(std::integral_constant<int, 4>{}, cols, l0, r, nv); break;
                case 3: triangle(std::integral_constant<int, 3>{}, cols, l0, r, nv); break;
                case 2: triangle(std::integral_constant<int, 2>{}, cols, l0, r, nv); break;
                default: break;
                }
                for (int i = l0 + 4; i < n; ++i)
                    pairs(std::integral_constant<int, 4>{}, cols, i, l0, r, nv, ga + pair(l0, i), gb + pair(l0, i));
            }
            // v_l^H a_c for the extra columns c, four l at a time.
            for (int c = 0; c < ne; ++c) {
                V* sa = wa + std::size_t(c) * n;
                V* sb = wb + std::size_t(c) * n;
                int l0 = 0;
                for (; l0 + 4 <= n; l0 += 4)
                    pairs(std::integral_constant<int, 4>{}, cols, n + c, l0, r, nv, sa + l0, sb + l0);
                switch (n - l0) {
                case 3: pairs(std::integral_constant<int, 3>{}, cols, n + c, l0, r, nv, sa + l0, sb + l0); break;
                case 2: pairs(std::integral_constant<int, 2>{}, cols, n + c, l0, r, nv, sa + l0, sb + l0); break;
                case 1: pairs(std::integral_constant<int, 1>{}, cols, n + c, l0, r, nv, sa + l0, sb + l0); break;
                default: break;
                }
            }
        };
        int r = n;
        const int first = std::min(m, vector_start(r) + per_vec);
        if (r < m && vector_start(r) < r) {
            const int s = vector_start(r);
            gather(0, s, r, first, n + ne);
            chunk(part_col, 0, 1);
            scatter(last, n, s, r, first);
            r = first;
        }
        for (int nv; r + per_vec <= m; r += nv * per_vec) {
            nv = std::min(kPanelChunkVectors, (m - r) / per_vec);
            chunk(col, r, nv);
        }
        if (r < m) {
            gather(0, r, r, m, n + ne);
            chunk(part_col, 0, 1);
            scatter(last, n, r, r, m);
        }
        // Rows l < r < n: v_l and v_i (l < i < r) meet above the diagonal block's end.
        T g[max_pairs];
        for (int e = 0; e < n * (n - 1) / 2; ++e) g[e] = T(0);
        for (int rr = 2; rr < std::min(n, m); ++rr)
            for (int i = 1; i < rr; ++i)
                for (int l = 0; l < i; ++l) g[pair(l, i)] += std::conj(col[l][rr]) * col[i][rr];
        bool finite = true;
        for (int i = 0; i < n; ++i) {
            // T(0:i, i) = -tau_i T(0:i, 0:i) V(:, 0:i)^H v_i, V(i, l) = col[l][i], v_i(i) = 1.
            T* tc = t + std::size_t(i) * ldt;
            for (int l = 0; l < i; ++l) {
                const T gl = std::conj(col[l][i]) + g[pair(l, i)] + std::conj(dot(ga[pair(l, i)], gb[pair(l, i)]));
                tc[l] = -tau[i] * gl;
                finite = finite && std::isfinite(std::abs(tc[l]));
            }
            for (int l = 0; l < i; ++l) {
                T sum(0);
                for (int j = l; j < i; ++j) sum += t[l + std::size_t(j) * ldt] * tc[j];
                tc[l] = sum;
            }
            tc[i] = tau[i];
        }
        // W = V^H A_e: row l of v_l is 1, rows l < r < n from the block, rows >= n summed above.
        for (int c = 0; c < ne; ++c) {
            const T* ac = col[n + c];
            for (int l = 0; l < n; ++l) {
                T sum = ac[l];
                for (int rr = l + 1; rr < std::min(n, m); ++rr) sum += std::conj(col[l][rr]) * ac[rr];
                const T wl = sum + std::conj(dot(wa[std::size_t(c) * n + l], wb[std::size_t(c) * n + l]));
                w[l + std::size_t(c) * ldw] = wl;
                finite = finite && std::isfinite(std::abs(wl));
            }
        }
        if (finite) return true;
    }
    // A sum out of range: T from the reflectors as they stand.
    if constexpr (std::is_same_v<R, double>)
        check(LAPACKE_zlarft_work(LAPACK_COL_MAJOR, 'F', 'C', m, n, a, lda, tau, t, ldt), "zlarft");
    else
        check(LAPACKE_clarft_work(LAPACK_COL_MAJOR, 'F', 'C', m, n, a, lda, tau, t, ldt), "clarft");
    return ne == 0;
}

}  // namespace

template <class T>
void geqrt_recursive(int m, int n, T* a, int lda, T* t, int ldt)
{
    TOPOKPM_REQUIRE(m >= n && n >= 0, "geqrt_recursive needs m >= n >= 0, got m = ", m, ", n = ", n);
    if (n == 0) return;
    if (n <= kGeqrtBaseColumns) {
        // On so few columns one pass per reflector beats the GEMMs of width 1, 2, 4, 8 that
        // xGEQRT3 recurses into, and xGEQR2's three passes per reflector.
        panel_qr(m, n, a, lda, t, ldt);
        return;
    }
    // xGEQRT3's recursion: left half, its reflectors applied to the right half (with T_12 as
    // workspace), right half, then T_12 = -T_1 V_1^H V_2 T_2.
    const T one(1), minus_one(-1);
    const int n1 = n / 2, n2 = n - n1;
    T* a12 = a + std::size_t(n1) * lda;
    T* a22 = a12 + n1;
    T* t12 = t + std::size_t(n1) * ldt;
    // Where the halves are panels, their kernel forms the m-long products V_1^H A_2 and
    // V_1^H V_2 in its last pass (V in cache) instead of two GEMMs after it.
    const bool panels = n1 <= kGeqrtBaseColumns && n2 <= kGeqrtBaseColumns && n <= kPanelMaxColumns;
    bool have_w = false;
    if (panels)
        have_w = panel_qr(m, n1, a, lda, t, ldt, n2, a12, t12, ldt);
    else
        geqrt_recursive(m, n1, a, lda, t, ldt);
    if (!have_w) {
        for (int j = 0; j < n2; ++j)
            std::copy_n(a12 + std::size_t(j) * lda, n1, t12 + std::size_t(j) * ldt);
        trmm(CblasLeft, CblasLower, CblasConjTrans, CblasUnit, n1, n2, one, a, lda, t12, ldt);
        gemm(CblasConjTrans, CblasNoTrans, n1, n2, m - n1, one, a + n1, lda, a22, lda, one, t12, ldt);
    }
    trmm(CblasLeft, CblasUpper, CblasConjTrans, CblasNonUnit, n1, n2, one, t, ldt, t12, ldt);
    gemm(CblasNoTrans, CblasNoTrans, m - n1, n2, n1, minus_one, a + n1, lda, t12, ldt, one, a22, lda);
    trmm(CblasLeft, CblasLower, CblasNoTrans, CblasUnit, n1, n2, one, a, lda, t12, ldt);
    for (int j = 0; j < n2; ++j)
        for (int i = 0; i < n1; ++i) a12[i + std::size_t(j) * lda] -= t12[i + std::size_t(j) * ldt];
    // V_1^H V_2 = (V_2^H V_1)^H, V_1's rows n1.. as the right panel's extra columns.
    T v21[kPanelMaxColumns * kPanelMaxColumns / 4];
    bool have_v21 = false;
    if (panels)
        have_v21 = panel_qr(m - n1, n2, a22, lda, t12 + n1, ldt, n1, a + n1, v21, n2);
    else
        geqrt_recursive(m - n1, n2, a22, lda, t12 + n1, ldt);
    if (have_v21) {
        for (int j = 0; j < n2; ++j)
            for (int i = 0; i < n1; ++i) t12[i + std::size_t(j) * ldt] = std::conj(v21[j + std::size_t(i) * n2]);
    } else {
        for (int j = 0; j < n2; ++j)
            for (int i = 0; i < n1; ++i) t12[i + std::size_t(j) * ldt] = std::conj(a[n1 + j + std::size_t(i) * lda]);
        trmm(CblasRight, CblasLower, CblasNoTrans, CblasUnit, n1, n2, one, a22, lda, t12, ldt);
        if (m > n) gemm(CblasConjTrans, CblasNoTrans, n1, n2, m - n, one, a + n, lda, a22 + n2, lda, one, t12, ldt);
    }
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
    // Rows of V_2 staged per GEMM: 128 KiB of them, so that those rows, their staged copy,
    // OpenBLAS's packed copy and W stay in a 1 MiB L2 (128 rows at k = 64 in complex double),
    // but at least 64, for each call repacks W (k x k; docs/dense.md, "TSQR: the leaf Q's 128 KiB stage").
    const int chunk = std::clamp(int((std::size_t(128) << 10) / (std::size_t(k) * sizeof(T))), 64, 1024);
    const std::size_t kk = std::size_t(k) * k;
    T* w = workspace<T>(2 * kk + std::size_t(chunk) * k);
    T* top = w + kk;
    T* stage = top + kk;
    const T one(1), zero(0), minus_one(-1);
    for (int j = 0; j < k; ++j) std::copy_n(c + std::size_t(j) * ldc, k, w + std::size_t(j) * k);
    trmm(CblasLeft, CblasLower, CblasConjTrans, CblasUnit, k, k, one, a, lda, w, k);
    trmm(CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, k, k, one, t, ldt, w, k);
    // A_2 := -V_2 W, chunk by chunk: each chunk's V rows are read before the GEMM overwrites them.
    for (int r0 = k; r0 < m; r0 += chunk) {
        const int rows = std::min(chunk, m - r0);
        for (int j = 0; j < k; ++j)
            std::copy_n(a + r0 + std::size_t(j) * lda, rows, stage + std::size_t(j) * rows);
        gemm(CblasNoTrans, CblasNoTrans, rows, k, k, minus_one, stage, rows, w, k, zero, a + r0, lda);
    }
    // A_1 := C - V_1 W (V_1 still in place: the GEMMs wrote rows >= k only).
    std::copy_n(w, kk, top);
    trmm(CblasLeft, CblasLower, CblasNoTrans, CblasUnit, k, k, one, a, lda, top, k);
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
