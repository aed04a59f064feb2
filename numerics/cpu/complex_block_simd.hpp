#pragma once
/// @file complex_block_simd.hpp
/// The register-blocked inner loop shared by the SELL-C-σ kernels and the matrix-free
/// stencils: G sparse rows times a row-major N x R block of complex doubles,
///     out(g, c) = sum_k v(g, k) * x(col(g, k), c),   g < G, c < R,
/// with all G x R complex sums held in vector registers for the whole row.
///
/// Why this shape (measured on the 2-vCPU Xeon with AVX-512 of docs/performance.md,
/// ti 64x64x40, 2 threads): the previous kernel kept its C x R accumulators in an array in
/// memory, so every entry paid a load + store of the accumulator and a store-to-load
/// forwarding latency on the dependency chain; R = 1 ran in-core bound at 8.4 Gflop/s
/// (72 % of the bandwidth roofline) and R = 32 at 27 Gflop/s (43 %).
///
/// Arithmetic: the complex product is split into two real accumulators per vector,
///     a += Re(v) * x,   b += Im(v) * x          (x interleaved re, im)
/// and combined once per row: out = a + (-1, +1) * swap_re_im(b). Per 4 complex values
/// and entry that is 2 FMAs and no shuffle in the hot loop (the old fused form needed a
/// mul, a permute, an fmaddsub and an add). The sums differ from the row()-order
/// complex accumulation only by rounding.
///
/// Register budget (accumulator_complex = G * R complex sums, 2 real halves): 32 with
/// AVX-512 (16 of the 32 zmm registers), 8 otherwise (16 ymm registers on AVX2).
/// R >= 4: each row's R values are R/4 whole vectors, G = budget / R rows side by side
/// (R = 32: one row, 16 independent FMA chains; R = 4: 8 rows). R = 1, 2: the vectors run
/// across 4/R rows (SELL's "vectorise across the rows of a chunk"), values are broadcast
/// per row and x is gathered from 4/R different columns.
///
/// Written with GCC vector extensions, not intrinsics: the same source compiles to
/// AVX-512, AVX2 or SSE2 code (TOPOKPM_NATIVE_ARCH=OFF), which keeps one portable path.
/// One exception, AVX-512 only with the portable form kept beside it: R = 1 with complex
/// values (SELL) gathers x by masked 128-bit broadcast loads (gather4), which the vector
/// extensions cannot express without shuffles.

#include <cstddef>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace topokpm::numerics::kernels::cpu::simd {

#if defined(__AVX512F__)
inline constexpr const char* compiled_isa = "AVX-512";
inline constexpr int accumulator_complex = 32;
#elif defined(__AVX2__)
inline constexpr const char* compiled_isa = "AVX2";
inline constexpr int accumulator_complex = 8;
#else
inline constexpr const char* compiled_isa = "generic (compiler-lowered vectors)";
inline constexpr int accumulator_complex = 8;
#endif

using v8d = double __attribute__((vector_size(64)));
using v4d = double __attribute__((vector_size(32)));
using v2d = double __attribute__((vector_size(16)));
using v8l = long long __attribute__((vector_size(64)));
// Single precision (--precision single): 16, 8 or 4 floats = 8, 4 or 2 complex values.
using v16f = float __attribute__((vector_size(64)));
using v16i = int __attribute__((vector_size(64)));
using v8f = float __attribute__((vector_size(32)));
using v8i = int __attribute__((vector_size(32)));
using v4f = float __attribute__((vector_size(16)));
using v4i = int __attribute__((vector_size(16)));

/// The GCC vector of N values of T (the same type as the named ones above: VectorOf<double,
/// 8>::type is v8d). A typedef: an alias template would drop the attribute on a dependent T.
template <class T, int N>
struct VectorOf {
    typedef T type __attribute__((vector_size(N * sizeof(T))));
};

template <class V>
inline V load(const double* p)
{
    V v;
    std::memcpy(&v, p, sizeof v);  // unaligned vector load
    return v;
}

inline void store(double* p, v8d v) { std::memcpy(p, &v, sizeof v); }

#if defined(__AVX512F__)
/// The complex values at x + o0, ..., x + o3 (offsets in doubles; interleaved re, im) as one
/// vector: four 128-bit broadcast loads merged by lane masks, no shuffle. The shuffle form
/// below (two 128-bit inserts and a 256-bit combine per vector, plus the two value shuffles)
/// made the R = 1 complex kernel shuffle-bound (docs/performance.md, "ti R = 1 in core").
__attribute__((always_inline)) inline v8d gather4_offsets(const double* x, std::ptrdiff_t o0, std::ptrdiff_t o1,
                                                          std::ptrdiff_t o2, std::ptrdiff_t o3)
{
    __m512d t = _mm512_maskz_broadcast_f64x2(0x03, _mm_loadu_pd(x + o0));
    t = _mm512_mask_broadcast_f64x2(t, 0x0c, _mm_loadu_pd(x + o1));
    t = _mm512_mask_broadcast_f64x2(t, 0x30, _mm_loadu_pd(x + o2));
    t = _mm512_mask_broadcast_f64x2(t, 0xc0, _mm_loadu_pd(x + o3));
    v8d v;
    std::memcpy(&v, &t, sizeof v);  // register bit cast
    return v;
}

/// The complex values x[c0], x[c1], x[c2], x[c3] as one vector (gather4_offsets at 2 c).
__attribute__((always_inline)) inline v8d gather4(const double* x, std::ptrdiff_t c0, std::ptrdiff_t c1,
                                                  std::ptrdiff_t c2, std::ptrdiff_t c3)
{
    return gather4_offsets(x, 2 * c0, 2 * c1, 2 * c2, 2 * c3);
}

#endif

/// The x offsets (in doubles, 2 c) of the 4 non-negative 32-bit columns at `cols`, read as
/// two 64-bit (little-endian) words: the low column of a word by one 32-bit lea (2 c < 2^32),
/// the high one by one shift right by 31 (bit 31 of the low column is 0, c < 2^31): 2 integer
/// ops per pair where split, zero-extend and scale took 4 (a third of the R = 1 entry loop
/// was this address arithmetic, docs/performance.md).
__attribute__((always_inline)) inline void column_pair_offsets(const int* cols, std::ptrdiff_t (&o)[4])
{
    unsigned long long w01, w23;
    std::memcpy(&w01, cols, sizeof w01);
    std::memcpy(&w23, cols + 2, sizeof w23);
    o[0] = static_cast<unsigned>(w01) * 2u;
    o[1] = static_cast<std::ptrdiff_t>(w01 >> 31);
    o[2] = static_cast<unsigned>(w23) * 2u;
    o[3] = static_cast<std::ptrdiff_t>(w23 >> 31);
}

/// The 8 non-negative 32-bit columns at `cols` as offsets, read as four 64-bit words
/// (the low column by a 32-bit move, the high one by a shift).
__attribute__((always_inline)) inline void column_words(const int* cols, std::ptrdiff_t (&o)[8])
{
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
        unsigned long long w;
        std::memcpy(&w, cols + 2 * p, sizeof w);
        o[2 * p] = static_cast<unsigned>(w);
        o[2 * p + 1] = static_cast<std::ptrdiff_t>(w >> 32);
    }
}

/// Rows processed side by side for block width R: fills the register budget, at least
/// enough rows for one whole vector (4 complex), at most `limit`.
constexpr int group_rows(int r, int limit)
{
    int g = accumulator_complex / r;
    if (g < 1) g = 1;
    while (g * r < 4) g *= 2;
    while (g > limit && g > 1) g /= 2;
    return g;
}

/// out[2 * (g * R + c) + {0, 1}] := sum over k < width of v(g, k) * x(col(g, k), c).
/// Entry (g, k): value (interleaved re, im) at vals[2 * (g * val_g + k * val_k)], column at
/// cols[g * col_g + k * col_k]; x row-major with R columns as interleaved doubles.
/// ContiguousRows: val_g == 1 (SELL's slots of one entry index are adjacent), which lets
/// R < 4 load the values of 4/R rows with one vector load.
/// Real: the values are real (vals[g * val_g + k * val_k], one double per entry): only the
/// a accumulators run, out = a (a real-valued Hamiltonian, ValueTraits).
/// Requires (G * R) % 4 == 0.
template <int R, int G, bool ContiguousRows, bool Real = false, class Col>
inline void rows_times_block(int width, const double* __restrict vals, std::ptrdiff_t val_g, std::ptrdiff_t val_k,
                             const Col* __restrict cols, std::ptrdiff_t col_g, std::ptrdiff_t col_k,
                             const double* __restrict x, double* __restrict out)
{
    static_assert(R >= 1 && G >= 1 && (G * R) % 4 == 0, "G rows x R columns must fill whole vectors");
    constexpr int nv = G * R / 4;
    v8d a[nv], b[nv];
#pragma GCC unroll 16
    for (int v = 0; v < nv; ++v) a[v] = b[v] = v8d{};
#if defined(__AVX512F__)
    if constexpr (R == 1 && !Real && ContiguousRows) {
        // Complex values as stored (re, im per row), no duplication: a += v x gives (Re v Re x,
        // Im v Im x) per complex, b += v swap(x) gives (Re v Im x, Im v Re x); the product is
        // (a_re - a_im, b_re + b_im): the same sums, in the same order, as the split form.
        for (int k = 0; k < width; ++k) {
#pragma GCC unroll 16
            for (int v = 0; v < nv; ++v) {
                const int g0 = 4 * v;
                const Col* cg = cols + g0 * col_g + k * col_k;
                std::ptrdiff_t o[4];
                if constexpr (sizeof(Col) == 4) {
                    if (col_g == 1) {
                        // Two 32-bit columns per 64-bit load (SELL: the 4 rows' columns are
                        // adjacent, non-negative): half the index loads; the kernel is bound by
                        // its loads, not by the integer ALUs.
                        column_pair_offsets(reinterpret_cast<const int*>(cg), o);
                    } else {
                        for (int l = 0; l < 4; ++l) o[l] = 2 * static_cast<std::ptrdiff_t>(cg[l * col_g]);
                    }
                } else {
                    for (int l = 0; l < 4; ++l) o[l] = 2 * static_cast<std::ptrdiff_t>(cg[l * col_g]);
                }
                const v8d xv = gather4_offsets(x, o[0], o[1], o[2], o[3]);
                v8d raw = load<v8d>(vals + 2 * (g0 * val_g + k * val_k));
                __asm__("" : "+v"(raw));  // one load for both FMAs (folded, it was loaded twice)
                a[v] += raw * xv;
                b[v] += raw * __builtin_shufflevector(xv, xv, 1, 0, 3, 2, 5, 4, 7, 6);
                // The sums stay in registers: inlined into the SELL sweep, GCC 12 kept one of the
                // 8 sums of G = 16 on the stack inside this loop (a load, FMA and store per entry;
                // docs/performance.md, "SELL R = 1: the group sums in registers").
                __asm__("" : "+v"(a[v]), "+v"(b[v]));
            }
        }
        const v8d sign = {-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0};
#pragma GCC unroll 16
        for (int v = 0; v < nv; ++v) {
            const v8d u = __builtin_shufflevector(a[v], b[v], 0, 9, 2, 11, 4, 13, 6, 15);   // a_re, b_im
            const v8d w = __builtin_shufflevector(a[v], b[v], 1, 8, 3, 10, 5, 12, 7, 14);   // a_im, b_re
            store(out + 8 * v, u + sign * w);
        }
        return;
    }
#endif

    for (int k = 0; k < width; ++k) {
        if constexpr (R >= 4) {
            constexpr int per_row = R / 4;
#pragma GCC unroll 32
            for (int g = 0; g < G; ++g) {
                const std::ptrdiff_t e = g * val_g + k * val_k;
                const double vr = Real ? vals[e] : vals[2 * e], vi = Real ? 0.0 : vals[2 * e + 1];
                const double* xr = x + 2 * static_cast<std::ptrdiff_t>(cols[g * col_g + k * col_k]) * R;
#pragma GCC unroll 8
                for (int j = 0; j < per_row; ++j) {
                    const v8d xv = load<v8d>(xr + 8 * j);
                    a[g * per_row + j] += vr * xv;
                    if constexpr (!Real) b[g * per_row + j] += vi * xv;
                }
            }
        } else {
            constexpr int rows_per_vec = 4 / R;  // R = 1: 4 rows, R = 2: 2 rows per vector
#pragma GCC unroll 16
            for (int v = 0; v < nv; ++v) {
                const int g0 = v * rows_per_vec;
                v8d vr, vi, xv;
                if constexpr (R == 1) {
                    const Col* cg = cols + g0 * col_g + k * col_k;
                    std::ptrdiff_t o[4];
                    bool pairs = false;
                    if constexpr (sizeof(Col) == 4) {
                        pairs = col_g == 1;  // SELL: the 4 columns adjacent
                        if (pairs) column_pair_offsets(reinterpret_cast<const int*>(cg), o);
                    }
                    if (!pairs)
                        for (int l = 0; l < 4; ++l) o[l] = 2 * static_cast<std::ptrdiff_t>(cg[l * col_g]);
                    const double *x0 = x + o[0], *x1 = x + o[1], *x2 = x + o[2], *x3 = x + o[3];
                    const v4d lo = __builtin_shufflevector(load<v2d>(x0), load<v2d>(x1), 0, 1, 2, 3);
                    const v4d hi = __builtin_shufflevector(load<v2d>(x2), load<v2d>(x3), 0, 1, 2, 3);
                    xv = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
                    v8d raw;
                    if constexpr (Real) {
                        v4d r4;
                        if constexpr (ContiguousRows) {
                            r4 = load<v4d>(vals + g0 * val_g + k * val_k);
                        } else {
                            for (int l = 0; l < 4; ++l) r4[l] = vals[(g0 + l) * val_g + k * val_k];
                        }
                        vr = __builtin_shufflevector(r4, r4, 0, 0, 1, 1, 2, 2, 3, 3);
                    } else if constexpr (ContiguousRows) {
                        raw = load<v8d>(vals + 2 * (g0 * val_g + k * val_k));
                    } else {
                        const v4d r01 = __builtin_shufflevector(load<v2d>(vals + 2 * ((g0 + 0) * val_g + k * val_k)),
                                                                load<v2d>(vals + 2 * ((g0 + 1) * val_g + k * val_k)),
                                                                0, 1, 2, 3);
                        const v4d r23 = __builtin_shufflevector(load<v2d>(vals + 2 * ((g0 + 2) * val_g + k * val_k)),
                                                                load<v2d>(vals + 2 * ((g0 + 3) * val_g + k * val_k)),
                                                                0, 1, 2, 3);
                        raw = __builtin_shufflevector(r01, r23, 0, 1, 2, 3, 4, 5, 6, 7);
                    }
                    if constexpr (!Real) {
                        vr = __builtin_shufflevector(raw, raw, 0, 0, 2, 2, 4, 4, 6, 6);
                        vi = __builtin_shufflevector(raw, raw, 1, 1, 3, 3, 5, 5, 7, 7);
                    }
                } else {  // R == 2
                    const double* x0 = x + 4 * static_cast<std::ptrdiff_t>(cols[(g0 + 0) * col_g + k * col_k]);
                    const double* x1 = x + 4 * static_cast<std::ptrdiff_t>(cols[(g0 + 1) * col_g + k * col_k]);
                    xv = __builtin_shufflevector(load<v4d>(x0), load<v4d>(x1), 0, 1, 2, 3, 4, 5, 6, 7);
                    v4d raw;
                    if constexpr (Real) {
                        // The two rows' values, each over its row's 4 lanes, from a 4-double
                        // vector: GCC 12 widens a 2-double vector to 8 lanes through the stack
                        // (a 16-byte store, then a 64-byte load the store cannot forward to;
                        // docs/performance.md, "Graphene R = 2 in double").
                        if constexpr (ContiguousRows && G % 4 == 0) {
                            // One load for the 4 rows of vectors v and v ^ 1.
                            const v4d r4 = load<v4d>(vals + (g0 & ~3) * val_g + k * val_k);
                            vr = v % 2 == 0 ? __builtin_shufflevector(r4, r4, 0, 0, 0, 0, 1, 1, 1, 1)
                                            : __builtin_shufflevector(r4, r4, 2, 2, 2, 2, 3, 3, 3, 3);
                        } else {
                            const double v0 = vals[g0 * val_g + k * val_k], v1 = vals[(g0 + 1) * val_g + k * val_k];
                            const v4d r4 = {v0, v1, v0, v1};
                            vr = __builtin_shufflevector(r4, r4, 0, 0, 0, 0, 1, 1, 1, 1);
                        }
                    } else if constexpr (ContiguousRows) {
                        raw = load<v4d>(vals + 2 * (g0 * val_g + k * val_k));
                    } else {
                        raw = __builtin_shufflevector(load<v2d>(vals + 2 * ((g0 + 0) * val_g + k * val_k)),
                                                      load<v2d>(vals + 2 * ((g0 + 1) * val_g + k * val_k)), 0, 1, 2,
                                                      3);
                    }
                    if constexpr (!Real) {
                        vr = __builtin_shufflevector(raw, raw, 0, 0, 0, 0, 2, 2, 2, 2);
                        vi = __builtin_shufflevector(raw, raw, 1, 1, 1, 1, 3, 3, 3, 3);
                    }
                }
                a[v] += vr * xv;
                if constexpr (!Real) b[v] += vi * xv;
            }
        }
    }
    // out = a + (-Im v Im x, +Im v Re x) per complex: (re, im) = (a_re - b_im, a_im + b_re).
    const v8d sign = {-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0};
    const v8l swap = {1, 0, 3, 2, 5, 4, 7, 6};
#pragma GCC unroll 16
    for (int v = 0; v < nv; ++v) store(out + 8 * v, Real ? a[v] : a[v] + sign * __builtin_shuffle(b[v], swap));
}

/// 8 floats widened to 8 doubles (and back, rounded to nearest) in one instruction each:
/// GCC 12 (znver3 tuning of -march=native) splits __builtin_convertvector between v8f and
/// v8d into two 256-bit halves with extracts and inserts (5 instructions instead of 1), on
/// the path of every float R = 1 epilogue. (The all-ones masked forms: the unmasked GCC 12
/// intrinsics pass an "undefined" source that -Wmaybe-uninitialized reports.)
__attribute__((always_inline)) inline v8d widen(v8f f)
{
#if defined(__AVX512F__)
    const __m512d d = _mm512_maskz_cvtps_pd(0xff, reinterpret_cast<__m256>(f));
    return reinterpret_cast<v8d>(d);
#else
    return __builtin_convertvector(f, v8d);
#endif
}

__attribute__((always_inline)) inline v8f narrow(v8d d)
{
#if defined(__AVX512F__)
    const __m256 f = _mm512_maskz_cvtpd_ps(0xff, reinterpret_cast<__m512d>(d));
    return reinterpret_cast<v8f>(f);
#else
    return __builtin_convertvector(d, v8f);
#endif
}

/// The vector holding one row's R complex floats (or a whole fraction of them) in
/// rows_times_block_single: 512 bits for R a multiple of 8, 256 bits for R = 4, 128 for R = 2.
template <int R>
struct SingleRowVector {  // R = 1: 8 rows side by side
    using V = v16f;
    using I = v16i;
};
template <>
struct SingleRowVector<4> {
    using V = v8f;
    using I = v8i;
};
template <>
struct SingleRowVector<2> {
    using V = v4f;
    using I = v4i;
};

/// The 64 bits of one complex float as an integer (a lane of a v8l).
__attribute__((always_inline)) inline long long word(const float* p)
{
    long long w;
    std::memcpy(&w, p, sizeof w);
    return w;
}

using v2l = long long __attribute__((vector_size(16)));
using v4l = long long __attribute__((vector_size(32)));

/// Eight 64-bit words as one vector, by pairs and shuffles (no trip through memory).
__attribute__((always_inline)) inline v8l combine8(long long w0, long long w1, long long w2, long long w3, long long w4, long long w5,
                    long long w6, long long w7)
{
    const v4l lo = __builtin_shufflevector(v2l{w0, w1}, v2l{w2, w3}, 0, 1, 2, 3);
    const v4l hi = __builtin_shufflevector(v2l{w4, w5}, v2l{w6, w7}, 0, 1, 2, 3);
    return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
}

/// The complex floats x[cg[0]], x[cg[col_g]], ..., x[cg[7 col_g]] as eight 64-bit words.
/// AVX-512 with 32-bit columns adjacent (SELL): the columns read as four 64-bit words and x
/// by eight merge-masked 64-bit broadcast loads, no shuffle (as gather4 in double). The
/// combine8 form (8 index loads, 8 loads, 7 shuffles and 6 register moves GCC 12 adds to
/// zero upper halves) made the float R = 1 sweep slower than double's; the hardware gather
/// (vgatherdpd) was slower still (docs/performance.md, "SELL R = 1 in single precision").
template <class Col>
__attribute__((always_inline)) inline v8l gather8_words(const float* x, const Col* cg, std::ptrdiff_t col_g)
{
#if defined(__AVX512F__)
    if constexpr (sizeof(Col) == 4) {
        if (col_g == 1) {
            const double* xd = reinterpret_cast<const double*>(x);
            std::ptrdiff_t o[8];
            column_words(reinterpret_cast<const int*>(cg), o);
            __m512d t = _mm512_maskz_broadcastsd_pd(0x01, _mm_load_sd(xd + o[0]));
            t = _mm512_mask_broadcastsd_pd(t, 0x02, _mm_load_sd(xd + o[1]));
            t = _mm512_mask_broadcastsd_pd(t, 0x04, _mm_load_sd(xd + o[2]));
            t = _mm512_mask_broadcastsd_pd(t, 0x08, _mm_load_sd(xd + o[3]));
            t = _mm512_mask_broadcastsd_pd(t, 0x10, _mm_load_sd(xd + o[4]));
            t = _mm512_mask_broadcastsd_pd(t, 0x20, _mm_load_sd(xd + o[5]));
            t = _mm512_mask_broadcastsd_pd(t, 0x40, _mm_load_sd(xd + o[6]));
            t = _mm512_mask_broadcastsd_pd(t, 0x80, _mm_load_sd(xd + o[7]));
            v8l w;
            std::memcpy(&w, &t, sizeof w);
            return w;
        }
    }
#endif
    // (No lambda here: GCC stopped inlining it in some instances, a call per x value.)
    return combine8(word(x + 2 * static_cast<std::ptrdiff_t>(cg[0])), word(x + 2 * static_cast<std::ptrdiff_t>(cg[col_g])),
                    word(x + 2 * static_cast<std::ptrdiff_t>(cg[2 * col_g])),
                    word(x + 2 * static_cast<std::ptrdiff_t>(cg[3 * col_g])),
                    word(x + 2 * static_cast<std::ptrdiff_t>(cg[4 * col_g])),
                    word(x + 2 * static_cast<std::ptrdiff_t>(cg[5 * col_g])),
                    word(x + 2 * static_cast<std::ptrdiff_t>(cg[6 * col_g])),
                    word(x + 2 * static_cast<std::ptrdiff_t>(cg[7 * col_g])));
}

/// rows_times_block in single precision, vectorised across R (R = 2, 4 or a multiple of 8;
/// R = 1: across 8 rows per vector, G a multiple of 8):
/// out[2 * (g * R + c) + {0, 1}] := sum over k < width of v(g, k) * x(col(g, k), c), with the
/// same strided addressing of values and columns and the same split accumulation
/// (a += Re v x, b += Im v x, out = a + (-1, +1) swap_re_im(b)), all G x R complex sums in
/// registers. Used by the single-precision SELL kernel and the matrix-free stencil.
template <int R, int G, bool Real = false, class Col>
inline void rows_times_block_single(int width, const float* __restrict vals, std::ptrdiff_t val_g,
                                    std::ptrdiff_t val_k, const Col* __restrict cols, std::ptrdiff_t col_g,
                                    std::ptrdiff_t col_k, const float* __restrict x, float* __restrict out)
{
    using V = typename SingleRowVector<R>::V;
    using I = typename SingleRowVector<R>::I;
    constexpr int lanes = static_cast<int>(sizeof(V) / sizeof(float));
    static_assert(R == 1 ? G % 8 == 0 : (2 * R) % lanes == 0,
                  "whole vectors per row (R = 2, 4 or a multiple of 8), or 8 rows per vector (R = 1)");
    constexpr int per_row = R == 1 ? 1 : 2 * R / lanes;
    constexpr int nv = R == 1 ? G / 8 : G * per_row;
    V a[nv], b[nv];
#pragma GCC unroll 16
    for (int v = 0; v < nv; ++v) a[v] = b[v] = V{};
    for (int k = 0; k < width; ++k) {
        if constexpr (R == 1) {
            // Across the rows, as the double kernel: 8 rows' complex floats (one 64-bit word
            // each) per vector, the values broadcast within their (re, im) pair.
#pragma GCC unroll 8
            for (int v = 0; v < nv; ++v) {
                // 8 complex floats as 64-bit words, combined in registers (filling a vector
                // lane by lane went through the stack: a store-forwarding stall per entry).
                // (No lambda here: GCC stopped inlining it in some instances, a call per x value.)
                const v8l xw = gather8_words(x, cols + 8 * v * col_g + k * col_k, col_g);
                const v16f xv = (v16f)xw;  // the same bits as 16 floats
                if constexpr (Real) {
                    v8f r8;
                    if (val_g == 1) {
                        std::memcpy(&r8, vals + 8 * v + k * val_k, sizeof r8);
                    } else {
                        for (int l = 0; l < 8; ++l) r8[l] = vals[(8 * v + l) * val_g + k * val_k];
                    }
                    a[v] += __builtin_shufflevector(r8, r8, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7) * xv;
                    continue;
                }
                v8l vw;
                if (val_g == 1) {
                    std::memcpy(&vw, vals + 2 * (8 * v + k * val_k), sizeof vw);
                } else {
                    const float* vg = vals + 2 * (8 * v * val_g + k * val_k);
                    vw = combine8(word(vg), word(vg + 2 * val_g), word(vg + 4 * val_g), word(vg + 6 * val_g),
                                  word(vg + 8 * val_g), word(vg + 10 * val_g), word(vg + 12 * val_g),
                                  word(vg + 14 * val_g));
                }
                const v16f raw = (v16f)vw;
                const v16f vr = __builtin_shufflevector(raw, raw, 0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14);
                const v16f vi = __builtin_shufflevector(raw, raw, 1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15);
                a[v] += vr * xv;
                b[v] += vi * xv;
            }
            continue;
        }
#pragma GCC unroll 16
        for (int g = 0; g < G; ++g) {
            const std::ptrdiff_t e = g * val_g + k * val_k;
            const float vr = Real ? vals[e] : vals[2 * e], vi = Real ? 0.0f : vals[2 * e + 1];
            const float* xr = x + 2 * static_cast<std::ptrdiff_t>(cols[g * col_g + k * col_k]) * R;
#pragma GCC unroll 8
            for (int j = 0; j < per_row; ++j) {
                V xv;
                std::memcpy(&xv, xr + lanes * j, sizeof xv);  // unaligned vector load
                a[g * per_row + j] += vr * xv;
                if constexpr (!Real) b[g * per_row + j] += vi * xv;
            }
        }
    }
    V sign;
    I swap;
    for (int l = 0; l < lanes; ++l) {
        sign[l] = l % 2 ? 1.0f : -1.0f;  // (re, im) = (a_re - b_im, a_im + b_re)
        swap[l] = l ^ 1;
    }
#pragma GCC unroll 16
    for (int v = 0; v < nv; ++v) {
        const V o = Real ? a[v] : a[v] + sign * __builtin_shuffle(b[v], swap);
        std::memcpy(out + lanes * v, &o, sizeof o);
    }
}

}  // namespace topokpm::numerics::kernels::cpu::simd
