#pragma once
/// @file stencil_group_products.hpp
/// The register-group products of the CPU stencil sweep (stencil_sweep.cpp; the design:
/// stencil_operator.hpp): the gathered form on the fast tables (group_product, and
/// rows_across_single for single precision at R = 1, 2, 4) and the window form of those
/// tables (WindowTable, window_table, window_product: two vector loads and a permute per
/// entry where AVX-512 allows). Inline templates for the one translation unit that sweeps.

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <vector>

#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/cpu/stencil_operator.hpp"

namespace topokpm::numerics::kernels::cpu::stencil {

/// Single precision, R = 1, 2, 4: the vectors run across 8 / R rows (as complex_block_simd.hpp
/// does for R = 1, 2 in double): per entry, one vector holds the R complex x values of
/// 8 / R rows (gathered from their columns) and the rows' values broadcast over their
/// lanes; a += Re v x, b += Im v x, combined once as in simd::rows_times_block_single.
/// Requires (G R) % 8 == 0.
template <int R, int G>
inline void rows_across_single(int w, const float* __restrict vals, const std::ptrdiff_t* __restrict cols,
                               const float* __restrict x, float* __restrict out)
{
    static_assert(R == 1 || R == 2 || R == 4, "R = 1, 2, 4");
    static_assert((G * R) % 8 == 0, "whole vectors of 8 complex floats");
    constexpr int rows_per_vec = 8 / R;
    constexpr int nv = G * R / 8;
    using simd::v2d;
    using simd::v4d;
    using simd::v8d;
    using simd::v4f;
    v16f a[nv], b[nv];
#pragma GCC unroll 8
    for (int v = 0; v < nv; ++v) a[v] = b[v] = v16f{};
    // x rows as doubles (a complex float is 8 bytes): register loads and shuffles only
    // (building the vector in memory from pieces measured 2-3x slower: store forwarding).
    auto xrow = [&](std::ptrdiff_t e) { return reinterpret_cast<const double*>(x + 2 * cols[e] * R); };
    for (int k = 0; k < w; ++k) {
#pragma GCC unroll 8
        for (int v = 0; v < nv; ++v) {
            const std::ptrdiff_t e0 = static_cast<std::ptrdiff_t>(k) * G + v * rows_per_vec;
            const float* vp = vals + 2 * e0;  // the rows' values, adjacent ([k][g])
            v8d xd;
            v16f vr, vi;
            if constexpr (R == 1) {
                xd = v8d{*xrow(e0), *xrow(e0 + 1), *xrow(e0 + 2), *xrow(e0 + 3),
                         *xrow(e0 + 4), *xrow(e0 + 5), *xrow(e0 + 6), *xrow(e0 + 7)};
                const v16f raw = loadf<v16f>(vp);
                vr = __builtin_shufflevector(raw, raw, 0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14);
                vi = __builtin_shufflevector(raw, raw, 1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15);
            } else if constexpr (R == 2) {
                const v4d lo = __builtin_shufflevector(simd::load<v2d>(xrow(e0)), simd::load<v2d>(xrow(e0 + 1)), 0, 1, 2, 3);
                const v4d hi = __builtin_shufflevector(simd::load<v2d>(xrow(e0 + 2)), simd::load<v2d>(xrow(e0 + 3)), 0, 1, 2, 3);
                xd = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
                const v8f raw = loadf<v8f>(vp);
                vr = __builtin_shufflevector(raw, raw, 0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
                vi = __builtin_shufflevector(raw, raw, 1, 1, 1, 1, 3, 3, 3, 3, 5, 5, 5, 5, 7, 7, 7, 7);
            } else {
                xd = __builtin_shufflevector(simd::load<v4d>(xrow(e0)), simd::load<v4d>(xrow(e0 + 1)), 0, 1, 2, 3, 4,
                                             5, 6, 7);
                const v4f raw = loadf<v4f>(vp);
                vr = __builtin_shufflevector(raw, raw, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
                vi = __builtin_shufflevector(raw, raw, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3);
            }
            v16f xv;
            std::memcpy(&xv, &xd, sizeof xv);  // register bit cast
            a[v] += vr * xv;
            b[v] += vi * xv;
        }
    }
    const v16f sign = {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1};
    const v16i swap = {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14};
#pragma GCC unroll 8
    for (int v = 0; v < nv; ++v) {
        const v16f o = a[v] + sign * __builtin_shuffle(b[v], swap);
        std::memcpy(out + 16 * v, &o, sizeof o);
    }
}

/// True when group_product has a real-valued (one T per entry) form for T, R, G: double at
/// every compile-time width, float at R a multiple of 4 and at R = 1 (across 8 rows).
template <class T, int R, int G>
constexpr bool real_group_product()
{
    if constexpr (R <= 0) return false;
    else if constexpr (std::is_same_v<T, double>) return true;
    else return R % 4 == 0 || (R == 1 && G % 8 == 0);
}

/// acc[g][c] := sum_k vals[k][g] x(cols[k][g], c) for G rows. Double with compile-time R:
/// the register-blocked helper of complex_block_simd.hpp; float with R a multiple of 8:
/// rows_times_block_single; float R = 1, 2, 4: rows_across_single; R = 0: runtime width r,
/// G = 1.
template <class T, int R, int G, bool Real = false>
inline void group_product(int w, const T* __restrict vals, const std::ptrdiff_t* __restrict cols,
                          const T* __restrict xbase, T* __restrict acc, int r)
{
    static_assert(!Real || real_group_product<T, R, G>(), "no real-valued kernel for this width");
    if constexpr (R > 0 && std::is_same_v<T, double>) {
        (void)r;
        simd::rows_times_block<R, G, true, Real>(w, vals, 1, G, cols, 1, G, xbase, acc);
    } else if constexpr (R > 0 && (R % 4 == 0 || (Real && R == 1 && G % 8 == 0))) {
        (void)r;
        simd::rows_times_block_single<R, G, Real>(w, vals, 1, G, cols, 1, G, xbase, acc);  // table layout [k][g]
    } else if constexpr (R > 0 && (G * R) % 8 == 0) {  // float, R = 1, 2, 4
        (void)r;
        rows_across_single<R, G>(w, vals, cols, xbase, acc);
    } else if constexpr (R > 0) {  // float, R = 1, 2, 4 with G R < 8 (no AVX-512 budget): plain loop
        (void)r;
        float ar[G * R] = {}, ai[G * R] = {};
        for (int k = 0; k < w; ++k) {
#pragma GCC unroll 8
            for (int g = 0; g < G; ++g) {
                const std::ptrdiff_t e = static_cast<std::ptrdiff_t>(k) * G + g;
                const float vr = vals[2 * e], vi = vals[2 * e + 1];
                const float* __restrict xr = xbase + 2 * cols[e] * R;
#pragma GCC unroll 4
                for (int c = 0; c < R; ++c) {
                    ar[g * R + c] += vr * xr[2 * c] - vi * xr[2 * c + 1];
                    ai[g * R + c] += vr * xr[2 * c + 1] + vi * xr[2 * c];
                }
            }
        }
        for (int j = 0; j < G * R; ++j) {
            acc[2 * j] = ar[j];
            acc[2 * j + 1] = ai[j];
        }
    } else {
        static_assert(G == 1, "runtime width: one row per group");
        for (int j = 0; j < 2 * r; ++j) acc[j] = T(0);
        for (int k = 0; k < w; ++k) {
            const T vr = vals[2 * k], vi = vals[2 * k + 1];
            const T* __restrict xr = xbase + 2 * cols[k] * r;
#pragma omp simd
            for (int c = 0; c < r; ++c) {
                acc[2 * c] += vr * xr[2 * c] - vi * xr[2 * c + 1];
                acc[2 * c + 1] += vr * xr[2 * c + 1] + vi * xr[2 * c];
            }
        }
    }
}

/// R = 1 fast path as permuted loads (AVX-512): in a lattice the x values that one vector of
/// L rows needs at entry k (L = 4 complex doubles or 8 complex floats per 512-bit register)
/// lie in at most two windows of L consecutive rows at fixed offsets from the group's first
/// row (ti: the neighbour site's 4 orbitals; graphene: the A and the B rows' neighbours). So
/// per vector and entry: two vector loads and one two-source permute (vpermt2pd; a complex
/// float is one 64-bit word) with offsets and permute indices from the table, instead of L
/// index loads, L partial loads and the shuffles that assemble them. The values are stored
/// already spread over the lanes (no broadcast shuffle). Built from the fast tables per
/// phase; a phase is not ok (its groups run the gathered form) when some vector needs a
/// third window (ti: the phases other than 0, which its groups of two whole sites never have).
template <class T>
struct WindowTable {
    static constexpr int kLanes = std::is_same_v<T, double> ? 4 : 8;  ///< complex values per vector
    std::vector<char> ok;                ///< per phase
    int nv = 0;                          ///< vectors per group (G / kLanes)
    std::vector<std::ptrdiff_t> base;    ///< 2 per (phase, k, v): window starts, rows relative to r0
    std::vector<long long> index;        ///< 8 per (phase, k, v): permute indices into the two windows
    std::vector<T> vr, vi;               ///< 2 kLanes per (phase, k, v): Re v, Im v per lane
    std::ptrdiff_t lo = 0, hi = 0;       ///< rows r0 + lo .. r0 + hi are read
};

/// The window form of the fast tables `cols`, `vals` ([phase][k][g], per values per entry).
template <class T>
WindowTable<T> window_table(int phases, int w, int g_rows, int per, const std::vector<std::ptrdiff_t>& cols,
                            const std::vector<T>& vals)
{
    constexpr int L = WindowTable<T>::kLanes;
    WindowTable<T> t;
    t.ok.assign(static_cast<size_t>(phases), 0);
    if (g_rows % L != 0) return t;
    t.nv = g_rows / L;
    const size_t n = static_cast<size_t>(phases) * w * t.nv;
    t.base.assign(2 * n, 0);
    t.index.assign(8 * n, 0);
    t.vr.assign(2 * L * n, T(0));
    t.vi.assign(2 * L * n, T(0));
    bool first = true;
    for (int p = 0; p < phases; ++p) {
        bool ok = true;
        for (int k = 0; k < w && ok; ++k)
            for (int v = 0; v < t.nv && ok; ++v) {
                const size_t e = (static_cast<size_t>(p) * w + k) * t.nv + v;
                std::ptrdiff_t b[2] = {0, 0};
                int used = 0;
                for (int l = 0; l < L; ++l) {
                    const size_t i = (static_cast<size_t>(p) * w + k) * g_rows + v * L + l;
                    const T re = vals[per * i], im = per == 2 ? vals[2 * i + 1] : T(0);
                    if (re == T(0) && im == T(0)) continue;  // padding: any lane will do (index 0)
                    const std::ptrdiff_t c = cols[i];
                    int s = 0;
                    while (s < used && !(c >= b[s] && c < b[s] + L)) ++s;
                    if (s == used) {
                        if (used == 2) {  // a third window: not this form
                            ok = false;
                            break;
                        }
                        b[used++] = c;
                    }
                    const int off = static_cast<int>(c - b[s]);
                    if constexpr (L == 4) {  // double: two 64-bit lanes per complex
                        t.index[8 * e + 2 * l] = 8 * s + 2 * off;
                        t.index[8 * e + 2 * l + 1] = 8 * s + 2 * off + 1;
                    } else {  // float: one 64-bit word per complex
                        t.index[8 * e + l] = 8 * s + off;
                    }
                    t.vr[2 * L * e + 2 * l] = t.vr[2 * L * e + 2 * l + 1] = re;
                    t.vi[2 * L * e + 2 * l] = t.vi[2 * L * e + 2 * l + 1] = im;
                }
                if (!ok) break;
                if (used == 0) b[0] = 0;  // all padding: read the group's own rows
                if (used < 2) b[1] = b[0];
                for (int s = 0; s < 2; ++s) {
                    t.base[2 * e + s] = b[s];
                    t.lo = first ? b[s] : std::min(t.lo, b[s]);
                    t.hi = first ? b[s] + L - 1 : std::max(t.hi, b[s] + L - 1);
                    first = false;
                }
            }
        t.ok[static_cast<size_t>(p)] = ok;
    }
    return t;
}

#if defined(__AVX512F__)
inline constexpr bool kWindowForm = true;
#else
inline constexpr bool kWindowForm = false;  // two-source permutes of 64-bit lanes need AVX-512
#endif

/// acc := the sums of one group of G = nv L rows in the window form (table entries of
/// `phase`, x at the group's first row), interleaved (re, im) as group_product stores them.
template <class T, bool Real, int NV>
inline void window_product(const WindowTable<T>& t, int phase, int w, const T* __restrict x0, T* __restrict acc)
{
    using simd::v8d;
    using simd::v8l;
    constexpr int L = WindowTable<T>::kLanes;
    constexpr int nv = NV;
    v8d a[nv] = {}, b[nv] = {};
    const std::ptrdiff_t* bp = t.base.data() + 2 * static_cast<size_t>(phase) * w * nv;
    const long long* ip = t.index.data() + 8 * static_cast<size_t>(phase) * w * nv;
    const T* rp = t.vr.data() + 2 * L * static_cast<size_t>(phase) * w * nv;
    const T* jp = t.vi.data() + 2 * L * static_cast<size_t>(phase) * w * nv;
    const auto load64 = [](const T* p) {  // 64 bytes as 8 doubles (bits only for float)
        v8d v;
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    const auto fma = [&](v8d& acc_v, const T* vp, v8d xv) {
        if constexpr (std::is_same_v<T, double>) {
            acc_v += load64(vp) * xv;
        } else {
            v16f av, xf, vf;
            std::memcpy(&av, &acc_v, sizeof av);
            std::memcpy(&xf, &xv, sizeof xf);
            std::memcpy(&vf, vp, sizeof vf);
            av += vf * xf;
            std::memcpy(&acc_v, &av, sizeof av);
        }
    };
    for (int k = 0; k < w; ++k) {
#pragma GCC unroll 2
        for (int v = 0; v < nv; ++v) {
            const size_t e = static_cast<size_t>(k) * nv + v;
            v8l idx;
            std::memcpy(&idx, ip + 8 * e, sizeof idx);
            const v8d xv = __builtin_shuffle(load64(x0 + 2 * bp[2 * e]), load64(x0 + 2 * bp[2 * e + 1]), idx);
            fma(a[v], rp + 2 * L * e, xv);
            if constexpr (!Real) fma(b[v], jp + 2 * L * e, xv);
        }
    }
    for (int v = 0; v < nv; ++v) {
        if constexpr (std::is_same_v<T, double>) {
            const v8d sign = {-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0};
            const v8d o = Real ? a[v] : a[v] + sign * __builtin_shufflevector(b[v], b[v], 1, 0, 3, 2, 5, 4, 7, 6);
            simd::store(acc + 8 * v, o);
        } else {
            v16f af, bf;
            std::memcpy(&af, &a[v], sizeof af);
            std::memcpy(&bf, &b[v], sizeof bf);
            const v16f sign = {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1};
            const v16f o = Real ? af
                                : af + sign * __builtin_shufflevector(bf, bf, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10,
                                                                       13, 12, 15, 14);
            std::memcpy(acc + 16 * v, &o, sizeof o);
        }
    }
}

}  // namespace topokpm::numerics::kernels::cpu::stencil
