// One step per pass of the CPU stencil operator at every block width: the tiles, the register
// groups on the shared tables or on checked ones, the window and site forms at R = 1, and the
// row epilogues. The design: stencil_operator.hpp.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/cpu/row_epilogue.hpp"
#include "numerics/cpu/stencil_operator.hpp"
#include "numerics/cpu/stencil_shift_form.hpp"
#include "numerics/spmmv/width_registry.hpp"

namespace topokpm::numerics::kernels::cpu::stencil {

void CpuStencilOperator::do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const
{
    if (precision_ == Precision::Single) return apply_in_single(x, y, ops, dots);
    run(reinterpret_cast<const double*>(x.data()), reinterpret_cast<double*>(y.data()), x.num_cols(), ops, dots);
}

void CpuStencilOperator::do_apply(const BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                                  const AugmentedOps& ops, DotSums* dots) const
{
    if (precision_ != Precision::Single) return Operator::do_apply(x, y, ops, dots);  // throws
    run(reinterpret_cast<const float*>(x.data()), reinterpret_cast<float*>(y.data()), x.num_cols(), ops, dots);
}

template <class T>
void CpuStencilOperator::run(const T* x, T* y, int r, const AugmentedOps& ops, DotSums* dots) const
{
    switch (nb_) {
    case 2: return real_ ? dispatch_width<T, 2, true>(x, y, r, ops, dots) : dispatch_width<T, 2, false>(x, y, r, ops, dots);
    case 4: return dispatch_width<T, 4, false>(x, y, r, ops, dots);
    default: return dispatch_width<T, 0, false>(x, y, r, ops, dots);
    }
}

template <class T, int B, bool Real>
void CpuStencilOperator::dispatch_width(const T* x, T* y, int r, const AugmentedOps& ops, DotSums* dots) const
{
    with_width(r, [&](auto width) { sweep<T, decltype(width)::value, B, Real>(x, y, r, ops, dots); });
}

/// Tiles: x-slabs per thread while three x-planes of a thread are small; y-tiles of
/// about kTilePlaneBytes per plane (full z, all x) when a plane exceeds kPlaneLimit
/// (ti 64x64x40: R = 16 and 32 in double, R = 32 in single). StencilTuning::tiles
/// overrides (tuning and tests; in the relabelled axes, i.e. (1, nx, ny) for a lattice
/// with nz = 1). complex_bytes: 16 (double) or 8 (float) per vector entry.
Tiling CpuStencilOperator::choose_tiling(int r, int num_threads, double complex_bytes) const
{
    Tiling t{extent_[0], extent_[1], extent_[2]};
    if (tuning_.tiles[0] > 0) {
        t.tx = std::clamp(tuning_.tiles[0], 1, extent_[0]);
        t.ty = std::clamp(tuning_.tiles[1], 1, extent_[1]);
        t.tz = std::clamp(tuning_.tiles[2], 1, extent_[2]);
        return t;
    }
    constexpr double kPlaneLimit = 2.0 * 1024 * 1024, kTilePlaneBytes = 640.0 * 1024;
    const double line_bytes = complex_bytes * nb_ * r * extent_[2];  // one (x, y) z-column
    const int ty = static_cast<int>(std::max(1.0, kTilePlaneBytes / line_bytes));
    if (line_bytes * extent_[1] > kPlaneLimit && (extent_[1] + ty - 1) / ty >= 2 * num_threads) {
        t.ty = ty;
        return t;
    }
    if (extent_[0] >= num_threads) t.tx = (extent_[0] + num_threads - 1) / num_threads;
    else t.ty = (extent_[1] + num_threads - 1) / num_threads;
    return t;
}

/// Fills the shared relative tables for group size G: [phase][k][g], values rounded
/// to T (interleaved re, im; per = 1: the real parts only).
template <class T>
void CpuStencilOperator::fast_tables(int g_rows, int per, std::vector<std::ptrdiff_t>& cols, std::vector<T>& vals) const
{
    const int w = width_;
    cols.assign(static_cast<size_t>(nb_) * w * g_rows, 0);
    vals.assign(2 * cols.size(), T(0));
    for (int p = 0; p < nb_; ++p)
        for (int g = 0; g < g_rows; ++g) {
            const int o = (p + g) % nb_;
            const std::ptrdiff_t site_base = std::ptrdiff_t(nb_) * ((p + g) / nb_) - p;  // B s - r0
            const auto& row = entries_[o];
            for (int k = 0; k < w; ++k) {
                const size_t i = (static_cast<size_t>(p) * w + k) * g_rows + g;
                if (k < static_cast<int>(row.size())) {
                    const RowEntry& e = row[k];
                    const std::ptrdiff_t dl = e.term < 0 ? 0 : dlin_[e.term];
                    cols[i] = site_base + std::ptrdiff_t(nb_) * dl + e.b;
                    vals[per * i] = static_cast<T>(e.v.real());
                    if (per == 2) vals[2 * i + 1] = static_cast<T>(e.v.imag());
                } else {
                    cols[i] = g;  // padding: own row, value 0
                }
            }
        }
}

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

/// The sums of S consecutive sites of one SiteForm<double> class (x0: the first site's 4
/// rows), in double lanes.
template <int S>
__attribute__((always_inline)) inline void site_sums(const SiteForm<double>::Class& c, const double* __restrict x0,
                                                     simd::v8d (&a)[S])
{
    using simd::v8d;
    using simd::v8l;
    v8d b[S];
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) a[s] = b[s] = v8d{};
    const std::ptrdiff_t* off = c.off.data();
    const v8l* ip = c.idx.data();
    const v8d* rp = c.vr.data();
    const v8d* jp = c.vi.data();
    const int e_re = c.n_re, e_im = e_re + c.n_im, e_all = e_im + c.n_both;
    auto xs = [&](int i, int s) __attribute__((always_inline)) {
        return __builtin_shuffle(simd::load<v8d>(x0 + 8 * s + off[i]), ip[i]);
    };
    for (int i = 0; i < e_re; ++i) {
        const v8d v = rp[i];
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s) a[s] += v * xs(i, s);
    }
    for (int i = e_re; i < e_im; ++i) {
        const v8d v = jp[i];
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s) b[s] += v * xs(i, s);
    }
    for (int i = e_im; i < e_all; ++i) {
        const v8d vr = rp[i], vi = jp[i];
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s) {
            const v8d xv = xs(i, s);
            a[s] += vr * xv;
            b[s] += vi * xv;
        }
    }
    const v8d sign = {-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0};
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) a[s] += sign * __builtin_shufflevector(b[s], b[s], 1, 0, 3, 2, 5, 4, 7, 6);
}

/// The sums of S consecutive sites of one SiteForm<double> class at width R = 2 (x0: the
/// first site's 4 rows of 2 columns; a site is 2 vectors, vector h holds rows 2h and 2h + 1):
/// a[s][h]. Per lane the products and sums of site_sums in the same order (row o of the
/// neighbour read as row o ^ c: vector h ^ (c >> 1), its 256-bit halves swapped for odd c),
/// so each column's sums are those of the R = 1 form, bit for bit.
template <int S>
__attribute__((always_inline)) inline void site_sums_r2(const SiteForm<double>::Class& c, const double* __restrict x0,
                                                        simd::v8d (&a)[S][2])
{
    using simd::v8d;
    v8d b[S][2];
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) a[s][0] = a[s][1] = b[s][0] = b[s][1] = v8d{};
    const std::ptrdiff_t* off = c.off.data();
    const int* dg = c.diag.data();
    const v8d* rp = c.vr2.data();
    const v8d* jp = c.vi2.data();
    const int e_re = c.n_re, e_im = e_re + c.n_im, e_all = e_im + c.n_both;
    // Neighbour vector h (of site s) of item i, as row o of the own site reads it.
    auto xs = [&](int i, int s, int h) __attribute__((always_inline)) {
        const v8d v = simd::load<v8d>(x0 + 2 * off[i] + 16 * s + 8 * (h ^ (dg[i] >> 1)));
        return (dg[i] & 1) != 0 ? __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3) : v;
    };
    for (int i = 0; i < e_re; ++i)
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s)
            for (int h = 0; h < 2; ++h) a[s][h] += rp[2 * i + h] * xs(i, s, h);
    for (int i = e_re; i < e_im; ++i)
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s)
            for (int h = 0; h < 2; ++h) b[s][h] += jp[2 * i + h] * xs(i, s, h);
    for (int i = e_im; i < e_all; ++i)
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s)
            for (int h = 0; h < 2; ++h) {
                const v8d xv = xs(i, s, h);
                a[s][h] += rp[2 * i + h] * xv;
                b[s][h] += jp[2 * i + h] * xv;
            }
    const v8d sign = {-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0};
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s)
        for (int h = 0; h < 2; ++h)
            a[s][h] += sign * __builtin_shufflevector(b[s][h], b[s][h], 1, 0, 3, 2, 5, 4, 7, 6);
}

/// The sums of S consecutive sites of one SiteForm<double> class at width R = 4 or 8 (a row
/// is R / 4 whole vectors): a[s][o][j], vector j of row o of site s. Row o of item i reads
/// the neighbour's row o ^ c whole (no permute) and multiplies it by that row's value,
/// broadcast; per lane the products and sums of site_sums in the same order, so each
/// column's sums are those of the R = 1 form, bit for bit.
template <int R, int S>
__attribute__((always_inline)) inline void site_sums_wide(const SiteForm<double>::Class& c,
                                                          const double* __restrict x0,
                                                          simd::v8d (&a)[S][4][R / 4])
{
    using simd::v8d;
    constexpr int V = R / 4;  // vectors per row
    v8d b[S][4][V];
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s)
        for (int o = 0; o < 4; ++o)
            for (int j = 0; j < V; ++j) a[s][o][j] = b[s][o][j] = v8d{};
    const std::ptrdiff_t* off = c.off.data();
    const int* dg = c.diag.data();
    const v8d* rp = c.vr.data();
    const v8d* jp = c.vi.data();
    const int e_re = c.n_re, e_im = e_re + c.n_im, e_all = e_im + c.n_both;
    // Vector j of the neighbour row that row o of site s reads in item i.
    auto xs = [&](int i, int s, int o, int j) __attribute__((always_inline)) {
        return simd::load<v8d>(x0 + R * off[i] + 8 * R * s + 2 * R * (o ^ dg[i]) + 8 * j);
    };
    for (int i = 0; i < e_re; ++i)
#pragma GCC unroll 4
        for (int o = 0; o < 4; ++o) {
            const v8d v = v8d{} + rp[i][2 * o];
#pragma GCC unroll 8
            for (int s = 0; s < S; ++s)
                for (int j = 0; j < V; ++j) a[s][o][j] += v * xs(i, s, o, j);
        }
    for (int i = e_re; i < e_im; ++i)
#pragma GCC unroll 4
        for (int o = 0; o < 4; ++o) {
            const v8d v = v8d{} + jp[i][2 * o];
#pragma GCC unroll 8
            for (int s = 0; s < S; ++s)
                for (int j = 0; j < V; ++j) b[s][o][j] += v * xs(i, s, o, j);
        }
    for (int i = e_im; i < e_all; ++i)
#pragma GCC unroll 4
        for (int o = 0; o < 4; ++o) {
            const v8d vr = v8d{} + rp[i][2 * o], vi = v8d{} + jp[i][2 * o];
#pragma GCC unroll 8
            for (int s = 0; s < S; ++s)
                for (int j = 0; j < V; ++j) {
                    const v8d xv = xs(i, s, o, j);
                    a[s][o][j] += vr * xv;
                    b[s][o][j] += vi * xv;
                }
        }
    const v8d sign = {-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0};
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s)
        for (int o = 0; o < 4; ++o)
            for (int j = 0; j < V; ++j)
                a[s][o][j] += sign * __builtin_shufflevector(b[s][o][j], b[s][o][j], 1, 0, 3, 2, 5, 4, 7, 6);
}

/// The 4 complex floats of one site at p in the low half of a vector, zeros above (one
/// 256-bit load: nothing past the site is read).
__attribute__((always_inline)) inline v16f load_one_site(const float* p)
{
    const v8f v = loadf<v8f>(p);
    return __builtin_shufflevector(v, v8f{}, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

/// The complex lanes of v (two sites of 4) permuted within each site: lane o takes lane
/// o ^ C (a fixed shuffle of 64-bit lanes; C = 0: none).
template <int C>
__attribute__((always_inline)) inline v16f xor_lanes(v16f v)
{
    if constexpr (C == 0) {
        return v;
    } else {
        simd::v8d p;  // the same bits: one complex float per lane
        std::memcpy(&p, &v, sizeof p);
        p = __builtin_shufflevector(p, p, C, 1 ^ C, 2 ^ C, 3 ^ C, 4 + C, 4 + (1 ^ C), 4 + (2 ^ C), 4 + (3 ^ C));
        std::memcpy(&v, &p, sizeof v);
        return v;
    }
}

/// The sums of two consecutive sites of one SiteForm<float> class (x0: the first site's 4
/// rows) in out[0], or of one site in the low half (Lone), or of four sites in out[0] and
/// out[1] (Quad), in float lanes: per item and pair one load of the neighbour sites, the
/// permute of their complex lanes that the item's diagonal c fixes (none for c = 0) and one
/// FMA with the item's values. A lone site runs the pair's 512-bit operations on a zero high
/// half and a quad two pairs' side by side, so each lane's arithmetic (and rounding) is the
/// same in all three.
template <bool Lone, int Quad>
__attribute__((always_inline)) inline void site_sums_f(const SiteForm<float>::Class& c, const float* __restrict x0,
                                                       v16f (&out)[Quad ? 2 * Quad : 1])
{
    const std::ptrdiff_t* off = c.off.data();
    const v16f* rp = c.vr.data();
    const v16f* jp = c.vi.data();
    v16f a0{}, b0{}, a1{}, b1{}, a2{}, b2{}, a3{}, b3{};
    auto items = [&](auto kind, auto diagonal) __attribute__((always_inline)) {
        constexpr int K = decltype(kind)::value, C = decltype(diagonal)::value;
        for (int i = c.first[4 * K + C]; i < c.first[4 * K + C + 1]; ++i) {
            const float* p = x0 + off[i];
            const v16f xv = xor_lanes<C>(Lone ? load_one_site(p) : loadf<v16f>(p));
            if constexpr (K != 1) a0 += rp[i] * xv;
            if constexpr (K != 0) b0 += jp[i] * xv;
            if constexpr (Quad >= 1) {
                const v16f xw = xor_lanes<C>(loadf<v16f>(p + 16));
                if constexpr (K != 1) a1 += rp[i] * xw;
                if constexpr (K != 0) b1 += jp[i] * xw;
            }
            if constexpr (Quad >= 2) {
                const v16f xw = xor_lanes<C>(loadf<v16f>(p + 32));
                if constexpr (K != 1) a2 += rp[i] * xw;
                if constexpr (K != 0) b2 += jp[i] * xw;
                const v16f xu = xor_lanes<C>(loadf<v16f>(p + 48));
                if constexpr (K != 1) a3 += rp[i] * xu;
                if constexpr (K != 0) b3 += jp[i] * xu;
            }
        }
    };
    using std::integral_constant;
    auto all_diagonals = [&](auto kind) __attribute__((always_inline)) {
        items(kind, integral_constant<int, 0>{});
        items(kind, integral_constant<int, 1>{});
        items(kind, integral_constant<int, 2>{});
        items(kind, integral_constant<int, 3>{});
    };
    all_diagonals(integral_constant<int, 0>{});
    all_diagonals(integral_constant<int, 1>{});
    all_diagonals(integral_constant<int, 2>{});
    const v16f sign = {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1};
    out[0] = a0 + sign * __builtin_shufflevector(b0, b0, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    if constexpr (Quad >= 1)
        out[1] = a1 + sign * __builtin_shufflevector(b1, b1, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    if constexpr (Quad >= 2) {
        out[2] = a2 + sign * __builtin_shufflevector(b2, b2, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
        out[3] = a3 + sign * __builtin_shufflevector(b3, b3, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    }
}

/// The float epilogue of two sites (Lone: one, in the low half) whose first row is q
/// (x0 = x + 2 q, y0 = y + 2 q):
///     y = s (a + d x) + fl(beta) y0       (float fused multiply-adds)
/// s and a uniform d (d_rows != nullptr) dithered by row (DitheredLanes), a per-site or
/// per-row d = V - shift rounded to float; the dots into fd (one product per lane).
template <bool Lone>
__attribute__((always_inline)) inline void site_finish_f(v16f a, const float* __restrict x0, float* __restrict y0,
                                                         global_index q, const DitheredLanes& s_rows,
                                                         const DitheredLanes* d_rows, const double* pot, bool per_row,
                                                         double shift, float beta, bool read_y, bool want_dots,
                                                         FloatDotLanes& fd)
{
    auto load = [](const float* p) __attribute__((always_inline)) { return Lone ? load_one_site(p) : loadf<v16f>(p); };
    const v16f sv = loadf<v16f>(s_rows.at(q));
    v16f dv;
    if (d_rows != nullptr) {
        dv = loadf<v16f>(d_rows->at(q));
    } else if constexpr (!Lone) {
        dv = potential_lanes_f<4>(pot, per_row, q, shift);
    } else if (per_row) {  // the site's 4 rows only
        simd::v4d p;
        std::memcpy(&p, pot + q, sizeof p);
        const simd::v4f d = __builtin_convertvector(p - shift, simd::v4f);
        dv = __builtin_shufflevector(d, d, 0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 2, 2, 3, 3);
    } else {
        dv = v16f{} + static_cast<float>(pot[q / 4] - shift);
    }
    const v16f xv = load(x0);
    const v16f old = read_y ? (v16f{} + beta) * load(y0) : v16f{};  // beta == 0: y is never read
    const v16f yv = sv * (a + dv * xv) + old;
    std::memcpy(y0, &yv, Lone ? sizeof(float) * 8 : sizeof yv);
    if (want_dots) {  // a lone site's high lanes are 0
        fd.xx += xv * xv;
        fd.yx += yv * xv;
        fd.yxs += yv * __builtin_shufflevector(xv, xv, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    }
}

/// The float epilogue's constants of the site form (T = float): scale and a uniform
/// V - shift dithered by row; uniform_d = nullptr: the potential is read per site (or row).
struct SiteFloatConstants {
    const DitheredLanes* scale = nullptr;
    const DitheredLanes* uniform_d = nullptr;
};

/// Sites za <= z < zb of the z-column whose first site is `site0` and whose (x, y) classes
/// are cx, cy, in the SiteForm with the epilogue fused: 8, 4, 2 or 1 sites of one class per
/// step (fewer where the class changes: the z faces), each site with its own sums.
/// T = double: site_sums<S> (a vector per site; the dot lanes alternate between two sets by
/// site) and finish_vector_sums.
/// T = float: two sites per vector (site_sums_f) and the float epilogue (site_finish_f: no
/// conversion per row; dots per float lane in runs of at most kSingleDotRun products, then
/// into `lanes`); `fc` holds its dithered constants.
template <class T>
__attribute__((noinline)) void site_column(const SiteForm<T>& f, int cx, int cy, const T* __restrict x,
                                           T* __restrict y, global_index site0, int za, int zb,
                                           const double* pot, bool per_row, double scale, double shift,
                                           double beta, bool want_dots, kernels::cpu::DotLanes& lanes,
                                           const SiteFloatConstants& fc, std::ptrdiff_t pf = 0,
                                           std::ptrdiff_t pf_plane = 0)
{
    using simd::v8d;
    const int* zcls = f.cls[2].data();
    if constexpr (std::is_same_v<T, double>) {
        (void)fc;
        const v8d sv = v8d{} + scale;
        kernels::cpu::DotLanes l1{};
        for (int z = za; z < zb;) {
            const int cz = zcls[z];
            const SiteForm<double>::Class& c = f.at(cx, cy, cz);
            const global_index site = site0 + z;
            const T* x0 = x + 8 * site;
            T* y0 = y + 8 * site;
            // N sites of one class in one step: each site's sums and row ending as alone, the
            // dots alternating between two lane sets.
            const auto sites = [&](auto n) __attribute__((always_inline)) {
                constexpr int N = decltype(n)::value;
                if (pf > 0)  // the x plane ahead and y, pf doubles ahead of these sites
                    for (int l = 0; l < N; ++l) {
                        __builtin_prefetch(x0 + pf_plane + pf + 8 * l, 0, 3);
                        __builtin_prefetch(y0 + pf + 8 * l, 1, 3);
                    }
                v8d a[N];
                site_sums<N>(c, x0, a);
#pragma GCC unroll 8
                for (int k = 0; k < N; ++k)
                    kernels::cpu::finish_vector_sums(a[k], x0 + 8 * k, y0 + 8 * k, sv,
                                                     potential_lanes<4>(pot, per_row, 4 * site + 4 * k, shift), beta,
                                                     want_dots, k % 2 == 0 ? lanes : l1);
                z += N;
            };
            if (z + 7 < zb && zcls[z + 7] == cz) sites(std::integral_constant<int, 8>{});
            else if (z + 3 < zb && zcls[z + 3] == cz) sites(std::integral_constant<int, 4>{});  // (classes are monotone along z)
            else if (z + 1 < zb && zcls[z + 1] == cz) sites(std::integral_constant<int, 2>{});
            else sites(std::integral_constant<int, 1>{});
        }
        lanes.xx += l1.xx;
        lanes.yx += l1.yx;
        lanes.yxs += l1.yxs;
    } else {
        (void)scale;
        const float beta_f = static_cast<float>(beta);
        const bool read_y = beta != 0.0;
        FloatDotLanes fd, fd2;  // the even and the odd pairs of a step
        int run = 0;            // products per lane in fd since its last add_to (fd2: at most as many)
        for (int z = za; z < zb;) {
            const int cz = zcls[z];
            const SiteForm<float>::Class& c = f.at(cx, cy, cz);
            const global_index site = site0 + z;
            const float* x0 = x + 8 * site;
            float* y0 = y + 8 * site;
            const bool eight = z + 7 < zb && zcls[z + 7] == cz;  // (classes are monotone along z)
            const int products = eight ? 2 : 1;                  // this step's, per lane of fd
            if (want_dots && run + products > kSingleDotRun) {
                fd.add_to(lanes);
                fd2.add_to(lanes);
                run = 0;
            }
            run += products;
            if (eight) {
                v16f sums[4];
                site_sums_f<false, 2>(c, x0, sums);
                for (int k = 0; k < 4; ++k)
                    site_finish_f<false>(sums[k], x0 + 16 * k, y0 + 16 * k, 4 * site + 8 * k, *fc.scale, fc.uniform_d, pot, per_row,
                                     shift, beta_f, read_y, want_dots, k % 2 ? fd2 : fd);
                z += 8;
            } else if (z + 3 < zb && zcls[z + 3] == cz) {
                v16f sums[2];
                site_sums_f<false, 1>(c, x0, sums);
                site_finish_f<false>(sums[0], x0, y0, 4 * site, *fc.scale, fc.uniform_d, pot, per_row, shift, beta_f,
                                     read_y, want_dots, fd);
                site_finish_f<false>(sums[1], x0 + 16, y0 + 16, 4 * site + 8, *fc.scale, fc.uniform_d, pot, per_row,
                                     shift, beta_f, read_y, want_dots, fd2);
                z += 4;
            } else if (z + 1 < zb && zcls[z + 1] == cz) {
                v16f sums[1];
                site_sums_f<false, 0>(c, x0, sums);
                site_finish_f<false>(sums[0], x0, y0, 4 * site, *fc.scale, fc.uniform_d, pot, per_row, shift, beta_f,
                                     read_y, want_dots, fd);
                z += 2;
            } else {
                v16f sums[1];
                site_sums_f<true, 0>(c, x0, sums);
                site_finish_f<true>(sums[0], x0, y0, 4 * site, *fc.scale, fc.uniform_d, pot, per_row, shift, beta_f,
                                    read_y, want_dots, fd);
                z += 1;
            }
        }
        if (want_dots && run > 0) {
            fd.add_to(lanes);
            fd2.add_to(lanes);
        }
    }
}

/// One sweep<T, R, B, Real>'s shared state, set up before its threads start: the operands,
/// the epilogue's constants, the tables of the paths its groups take, the prefetch streams and
/// the tiling. Read-only while the threads run (SweepThread).
template <class T, int R, int B, bool Real>
struct SweepPlan {
    static constexpr bool kSingle = std::is_same_v<T, float>;
    static_assert(kSingle || std::is_same_v<T, double>, "float or double");
    static constexpr int kComplexBytes = 2 * static_cast<int>(sizeof(T));  // one vector entry
    static constexpr int kPerLine = 64 / static_cast<int>(sizeof(T));      // T values per cache line
    static constexpr int G = R > 0 ? group_size<T>(R) : 1;
    // Real couplings where a real-valued product exists; the other widths keep the complex
    // tables (imaginary parts 0: the same sums).
    static constexpr bool kReal = Real && real_group_product<T, R, G>();
    static constexpr int kPer = kReal ? 1 : 2;  // table values per entry
    // R = 1: the shifted-load form where the stencil has few distinct offsets (graphene),
    // else the permuted-load form of the fast tables where the lattice allows it (ti).
    static constexpr int kShiftLanes = ShiftTable<T>::kLanes;
    // R = 1, B = 4: the site form for every site (ti; single: two sites per vector, the
    // float epilogue with the constants below).
    // Double, R = 2, 4, 8, B = 4: the same site tables, a site's rows as R vectors
    // (site_sums_r2, site_sums_wide), each column summed as in the R = 1 form.
    static constexpr bool kSiteForm = kWindowForm && B == 4 && (R == 1 || (!kSingle && (R == 2 || R == 4 || R == 8)));
    static constexpr int kWinLanes = WindowTable<T>::kLanes;
    static constexpr bool kWindow = kWindowForm && R == 1 && G % kWinLanes == 0 && G / kWinLanes <= 2;
    // Single, R >= 2: the float epilogue (FloatRowEpilogue), scale and a uniform V - shift
    // dithered over the rows as in the R = 1 shifted-load form.
    static constexpr bool kFloatRows = kSingle && (R == 2 || R == 4 || (R > 0 && R % 8 == 0));

    SweepPlan(const CpuStencilOperator& op, const T* x, T* y, int runtime_r, const AugmentedOps& ops, bool want_dots);
    SweepPlan(const SweepPlan&) = delete;
    SweepPlan& operator=(const SweepPlan&) = delete;

    const CpuStencilOperator& op;
    const T* x;
    T* y;
    const int rr, nb, nx, ny, nz, w, num_terms;
    const double scale, shift, beta;
    const bool want_dots;
    // AugmentedOps' accumulation (fuses_accumulation: the R >= 4 double epilogue only).
    double* const acc_out;
    const double acc_co, acc_cx, acc_cn;
    const bool per_row;
    const double* const pot;
    const bool periodic[3];
    const ShiftTable<T>* shift_t = nullptr;  ///< the shifted-load form, or nullptr
    const bool uniform;
    const SiteForm<T>& sites;
    const bool site_form;
    std::vector<std::ptrdiff_t> fast_cols;   ///< the shared tables (fast_tables), unless shifted or site form
    std::vector<T> fast_vals;
    WindowTable<T> win;
    const global_index num_rows_total;
    // Software prefetch (fast path): the rows D ahead in every distinct x stream and in y.
    std::vector<std::ptrdiff_t> streams;     ///< in T values, relative to x + 2 R r0
    std::ptrdiff_t pf_ahead_y = 0;
    int pf_lines = 0, num_streams = 0;
    const kernels::cpu::DitheredFloat s_dither, d_dither;
    const float beta_f;
    // Double, the site form: software prefetch of x one x-plane ahead (the plane the sweep
    // reads first) and of y, site_pf doubles ahead (0: none; StencilTuning::site_prefetch_bytes).
    std::ptrdiff_t site_pf = 0, site_pf_plane = 0;
    // Single, R = 1, the site form: the same dithers as complex lanes.
    std::optional<DitheredLanes> site_scale, site_d;
    SiteFloatConstants site_fc;
    const int max_threads;
    const Tiling tiling;
    int ntx = 1, nty = 1, ntz = 1;
    long num_tiles = 1;

private:
    void prefetch_streams();
};

template <class T, int R, int B, bool Real>
SweepPlan<T, R, B, Real>::SweepPlan(const CpuStencilOperator& o, const T* x_in, T* y_in, int runtime_r,
                                    const AugmentedOps& ops, bool dots_wanted)
    : op(o), x(x_in), y(y_in), rr(R > 0 ? R : runtime_r), nb(B > 0 ? B : o.nb_), nx(o.extent_[0]),
      ny(o.extent_[1]), nz(o.extent_[2]), w(o.width_), num_terms(static_cast<int>(o.offsets_.size())),
      scale(ops.scale), shift(ops.shift), beta(ops.beta), want_dots(dots_wanted),
      acc_out(ops.accumulate != nullptr && R >= 4 && !kSingle ? reinterpret_cast<double*>(ops.accumulate->data())
                                                               : nullptr),
      acc_co(ops.acc_old), acc_cx(ops.acc_x), acc_cn(ops.acc_new), per_row(o.s_.potential_per_row()),
      pot(o.s_.potential.data()), periodic{o.periodic_[0], o.periodic_[1], o.periodic_[2]},
      uniform(o.uniform_potential_), sites(o.site_tables<T>()), site_form(kSiteForm && sites.ok && (R == 1 || o.tuning_.wide_site_form)),
      num_rows_total(o.s_.num_rows()), s_dither(kernels::cpu::dithered_float(scale)),
      d_dither(kernels::cpu::dithered_float(pot[0] - shift)), beta_f(static_cast<float>(beta)),
      max_threads(omp_get_max_threads()), tiling(o.choose_tiling(rr, max_threads, kComplexBytes))
{
    if constexpr (R == 1 && (B == 2 || B == 4))
        if (op.shift_form<T>().nd > 0) shift_t = &op.shift_form<T>();
    if (shift_t == nullptr && !site_form) op.fast_tables<T>(G, kPer, fast_cols, fast_vals);
    if constexpr (kWindow)
        if (shift_t == nullptr && !site_form) win = window_table<T>(nb, w, G, kPer, fast_cols, fast_vals);
    prefetch_streams();
    if (!kSingle && site_form) {
        const int bytes = o.tuning_.site_prefetch_bytes < 0 ? kSitePrefetchBytes : o.tuning_.site_prefetch_bytes;
        site_pf = bytes / static_cast<int>(sizeof(T));
        site_pf_plane = std::ptrdiff_t(8 * rr) * ny * nz;
    }
    if (kSingle && site_form) {
        site_fc.scale = &site_scale.emplace(scale);
        if (uniform) site_fc.uniform_d = &site_d.emplace(pot[0] - shift);
    }
    ntx = (nx + tiling.tx - 1) / tiling.tx;
    nty = (ny + tiling.ty - 1) / tiling.ty;
    ntz = (nz + tiling.tz - 1) / tiling.tz;
    num_tiles = static_cast<long>(ntx) * nty * ntz;
}

/// Only for R >= 16, where a row is >= 4 lines in double (at R <= 8 it measured neutral to
/// slower). Streams: the row itself and every neighbour offset at least one z-column away.
template <class T, int R, int B, bool Real>
void SweepPlan<T, R, B, Real>::prefetch_streams()
{
    if (rr >= 16) {
        std::vector<std::ptrdiff_t> rows_off{0};
        for (const std::ptrdiff_t dl : op.dlin_)
            if ((dl >= std::ptrdiff_t(nz) || dl <= -std::ptrdiff_t(nz)) &&
                std::find(rows_off.begin(), rows_off.end(), dl * nb) == rows_off.end())
                rows_off.push_back(dl * nb);
        const std::ptrdiff_t ahead = std::max<std::ptrdiff_t>(G, 4096 / (kComplexBytes * rr));  // 4 KiB ahead
        for (const std::ptrdiff_t o : rows_off) streams.push_back(2 * rr * (o + ahead));
    }
    pf_ahead_y = streams.empty() ? 0 : streams[0];
    pf_lines = (G * rr * kComplexBytes + 63) / 64;
    num_streams = static_cast<int>(streams.size());
}

/// One thread's part of a sweep: its tiles (OpenMP static), the register sums of a group,
/// the group tables of the checked path and the thread's dot sums.
template <class T, int R, int B, bool Real>
class SweepThread {
public:
    using Plan = SweepPlan<T, R, B, Real>;
    explicit SweepThread(const Plan& plan) : p(plan)
    {
        chk_cols.resize(static_cast<size_t>(p.w) * G);
        chk_vals.resize(2 * chk_cols.size());
        nbr.resize(static_cast<size_t>(std::max(p.num_terms, 1)));
    }
    SweepThread(const SweepThread&) = delete;
    SweepThread& operator=(const SweepThread&) = delete;

    /// The z-columns of tile `tile` (x slowest, then y, then z).
    void tile(long index);
    /// The thread's dots, in double, into its slot of `partial` (store_thread_dots).
    void store_dots(std::vector<double>& partial);

private:
    static constexpr int G = Plan::G;
    static constexpr bool kReal = Plan::kReal;
    static constexpr int kPer = Plan::kPer;
    static constexpr bool kSingle = Plan::kSingle;
    static constexpr bool kFloatRows = Plan::kFloatRows;

    void column(int cx, int cy, int za, int zb);
    void site_column_wide(int cx, int cy, global_index col_site0, int za, int zb);
    void shifted_column(int cx, int cy, global_index col_site0, int za, int zb);
    void fast_rows(global_index fa, global_index fe);
    void checked(int cx, int cy, global_index col_site0, global_index ra, global_index re);
    void checked_table(int cx, int cy, global_index col_site0, global_index r0, int count, global_index& last_site);
    void shift_rows(global_index ra, global_index re);
    // The epilogue of a group whose sums acc holds (acc: a local array of the caller, so that
    // the sums can stay in registers from the group's product to its epilogue).
    void finish(const T* acc, global_index r0, int count);
    void finish_vectors(const T* acc, global_index r0);
    void finish_row(const T* acc, global_index row, int g);

    const Plan& p;
    static constexpr int kDots = R > 0 ? R : 1;
    double xx_fixed[kDots] = {}, yr_fixed[kDots] = {}, yi_fixed[kDots] = {};
    std::vector<double> dyn = std::vector<double>(R > 0 ? 0 : 3 * static_cast<size_t>(p.rr), 0.0);
    double* const txx = R > 0 ? xx_fixed : dyn.data();
    double* const tyr = R > 0 ? yr_fixed : dyn.data() + p.rr;
    double* const tyi = R > 0 ? yi_fixed : dyn.data() + 2 * p.rr;
    // R >= 4: per double lane, sxx = x x, syx = y x, syxs = y swap(x) (re/im swapped);
    // <x|x> = sxx[2c] + sxx[2c+1], Re <y|x> = syx[2c] + syx[2c+1],
    // Im <y|x> = syxs[2c] - syxs[2c+1] (= Re y Im x - Im y Re x). No de-interleaving
    // shuffles in the row loop. (Single: the same double lanes, from the float values.)
    static constexpr int kLanes = R >= 4 ? 2 * R : 8;
    alignas(64) double sxx[kLanes] = {}, syx[kLanes] = {}, syxs[kLanes] = {};

    std::vector<T> acc_dyn = std::vector<T>(R > 0 ? 0 : 2 * static_cast<size_t>(p.rr));  // runtime R: a group's sums
    // Checked-group table and the neighbour sites of the site last seen.
    std::vector<std::ptrdiff_t> chk_cols;
    std::vector<T> chk_vals;
    std::vector<global_index> nbr;

    // R = 1: the dots of whole groups as vector lanes (row_epilogue.hpp, DotLanes).
    kernels::cpu::DotLanes lanes;
    // Single, R >= 2: the rows' epilogue and dots in float (row_epilogue.hpp).
    std::conditional_t<kFloatRows, kernels::cpu::FloatRowEpilogue<kFloatRows ? R : 2>, char> float_rows{};
};

/// y rows [r0, r0 + count) from acc.
template <class T, int R, int B, bool Real>
__attribute__((always_inline)) inline void SweepThread<T, R, B, Real>::finish(const T* acc, global_index r0, int count)
{
    if constexpr (R == 1 && G % 4 == 0) {
        if (count == G) return finish_vectors(acc, r0);
    }
    for (int g = 0; g < count; ++g) finish_row(acc, r0 + g, g);
}

/// R = 1, a whole group: G / 4 vectors of 4 complex, potential per lane.
template <class T, int R, int B, bool Real>
__attribute__((always_inline)) inline void SweepThread<T, R, B, Real>::finish_vectors(const T* acc, global_index r0)
{
    const double scale = p.scale, shift = p.shift;
    const double* const pot = p.pot;
    using simd::v8d;
    const v8d sv = v8d{} + scale;
#pragma GCC unroll 4
    for (int v = 0; v < G / 4; ++v) {
        const global_index row0 = r0 + 4 * v;
        v8d dv;
        if (p.per_row) {  // graphene: 4 contiguous values, each over its (re, im)
            const simd::v4d pv = simd::load<simd::v4d>(pot + row0);
            dv = __builtin_shufflevector(pv, pv, 0, 0, 1, 1, 2, 2, 3, 3) - shift;
        } else if (B == 4 && row0 % 4 == 0) {  // ti: the 4 rows of one site
            dv = v8d{} + (pot[row0 / 4] - shift);
        } else {
            for (int l = 0; l < 4; ++l)
                dv[2 * l] = dv[2 * l + 1] = pot[(row0 + l) / p.nb] - shift;
        }
        const std::ptrdiff_t o = 2 * (r0 + 4 * v);
        kernels::cpu::finish_vector(acc + 8 * v, p.x + o, p.y + o, sv, dv, p.beta, p.want_dots, lanes);
    }
}

/// Row `row` of y from the sums of group row g: y = scale (acc + (V - shift) x) + beta y.
template <class T, int R, int B, bool Real>
__attribute__((always_inline)) inline void SweepThread<T, R, B, Real>::finish_row(const T* acc, global_index row,
                                                                                int g)
{
    const int rr = p.rr;
    const double scale = p.scale, beta = p.beta;
    const double v = p.per_row ? p.pot[row] : p.pot[row / p.nb];
    const double dshift = v - p.shift;
    const T* __restrict xo = p.x + 2 * row * rr;
    T* __restrict yo = p.y + 2 * row * rr;
    const T* __restrict a = acc + 2 * g * rr;
    if constexpr (R >= 4 && !kSingle) {  // whole vectors of 4 complex, dots kept interleaved
        using simd::v8d;
        double* const acc_out = p.acc_out;
        const bool want_dots = p.want_dots;
        const v8d sv = v8d{} + scale, dv = v8d{} + dshift, bv = v8d{} + beta;
        const v8d ko = v8d{} + p.acc_co, kx = v8d{} + p.acc_cx, kn = v8d{} + p.acc_cn;
#pragma GCC unroll 8
        for (int v = 0; v < R / 4; ++v) {
            const v8d xv = simd::load<v8d>(xo + 8 * v);
            v8d yv = sv * (simd::load<v8d>(a + 8 * v) + dv * xv);
            const v8d yold = beta != 0.0 ? simd::load<v8d>(yo + 8 * v) : v8d{};  // beta == 0: never read y
            yv += bv * yold;
            simd::store(yo + 8 * v, yv);
            if (acc_out != nullptr) {  // acc += c_old y_old + c_x x + c_new y
                T* ao = acc_out + 2 * row * rr + 8 * v;
                simd::store(ao, simd::load<v8d>(ao) + ko * yold + kx * xv + kn * yv);
            }
            if (want_dots) {
                const v8d xs = __builtin_shufflevector(xv, xv, 1, 0, 3, 2, 5, 4, 7, 6);
                simd::store(sxx + 8 * v, simd::load<v8d>(sxx + 8 * v) + xv * xv);
                simd::store(syx + 8 * v, simd::load<v8d>(syx + 8 * v) + yv * xv);
                simd::store(syxs + 8 * v, simd::load<v8d>(syxs + 8 * v) + yv * xs);
            }
        }
    } else if constexpr (kFloatRows) {  // single, R >= 2: the float epilogue
        const float d = p.uniform ? p.d_dither.at(row) : static_cast<float>(dshift);
        float_rows.row(a, xo, yo, p.s_dither.at(row), d, p.beta_f, beta != 0.0, p.want_dots);
    } else {
        // y = scale (acc + (V - shift) x) + beta y: the shared epilogue with shift - V
        // (for floats: in double, rounded once; row_epilogue.hpp).
        kernels::cpu::finish_row<R>(a, xo, yo, rr, scale, -dshift, beta, p.want_dots, txx, tyr, tyi);
    }
}

/// Interior rows [ra, re) of a z-column in the shifted-load form.
template <class T, int R, int B, bool Real>
void SweepThread<T, R, B, Real>::shift_rows(global_index ra, global_index re)
{
    if constexpr (R == 1 && (B == 2 || B == 4)) {
        const ShiftTable<T>& st = *p.shift_t;
        switch (st.nd) {
#define TOPOKPM_SHIFT_CASE(n)                                                                                         \
    case n:                                                                                                           \
        return shift_run<T, Real, n, B>(st, p.x, p.y, ra, re, p.pot, p.per_row, p.uniform, p.scale, p.shift, p.beta, \
                                        p.want_dots, lanes);
            TOPOKPM_SHIFT_CASE(1)
            TOPOKPM_SHIFT_CASE(2)
            TOPOKPM_SHIFT_CASE(3)
            TOPOKPM_SHIFT_CASE(4)
            TOPOKPM_SHIFT_CASE(5)
            TOPOKPM_SHIFT_CASE(6)
#undef TOPOKPM_SHIFT_CASE
        default: break;
        }
    }
    (void)ra;
    (void)re;
}

/// The table of the group of `count` rows from r0 in z-column (cx, cy) with explicit
/// neighbour checks: wrapped neighbours, dropped ones (value 0, own row) and rows past the
/// end (a valid column, value 0, output dropped). last_site: the site whose neighbours nbr holds.
template <class T, int R, int B, bool Real>
void SweepThread<T, R, B, Real>::checked_table(int cx, int cy, global_index col_site0, global_index r0, int count,
                                               global_index& last_site)
{
    const int w = p.w, nb = p.nb;
    for (int g = 0; g < G; ++g) {
        if (g >= count) {  // past the end: a valid column, value 0, output dropped
            for (int k = 0; k < w; ++k) {
                chk_cols[static_cast<size_t>(k) * G + g] = 0;
                chk_vals[kPer * (static_cast<size_t>(k) * G + g)] = T(0);
                if constexpr (!kReal) chk_vals[2 * (static_cast<size_t>(k) * G + g) + 1] = T(0);
            }
            continue;
        }
        const global_index row = r0 + g;
        const global_index site = row / nb;
        const int o = static_cast<int>(row - site * nb);
        if (site != last_site) {
            last_site = site;
            const int cz = static_cast<int>(site - col_site0);
            for (int t = 0; t < p.num_terms; ++t) {
                const auto& d = p.op.offsets_[t];
                const int qx = neighbour_coord(cx + d[0], p.nx, p.periodic[0]);
                const int qy = neighbour_coord(cy + d[1], p.ny, p.periodic[1]);
                const int qz = neighbour_coord(cz + d[2], p.nz, p.periodic[2]);
                nbr[t] = (qx < 0 || qy < 0 || qz < 0) ? -1 : qz + global_index(p.nz) * (qy + global_index(p.ny) * qx);
            }
        }
        const auto& ent = p.op.entries_[o];
        const int len = static_cast<int>(ent.size());
        for (int k = 0; k < w; ++k) {
            const size_t i = static_cast<size_t>(k) * G + g;
            std::ptrdiff_t col = g;  // padding / dropped: own row, value 0
            T vr = T(0), vi = T(0);
            if (k < len) {
                const RowEntry& e = ent[k];
                const global_index ns = e.term < 0 ? site : nbr[e.term];
                if (ns >= 0) {
                    col = static_cast<std::ptrdiff_t>(global_index(nb) * ns + e.b - r0);
                    vr = static_cast<T>(e.v.real());
                    vi = static_cast<T>(e.v.imag());
                    (void)vi;
                }
            }
            chk_cols[i] = col;
            chk_vals[kPer * i] = vr;
            if constexpr (!kReal) chk_vals[2 * i + 1] = vi;
        }
    }
}

/// Rows [ra, re) of the z-column (cx, cy) with explicit neighbour checks.
template <class T, int R, int B, bool Real>
void SweepThread<T, R, B, Real>::checked(int cx, int cy, global_index col_site0, global_index ra, global_index re)
{
    alignas(64) T acc_fixed[R > 0 ? 2 * G * R : 1];
    T* const acc = R > 0 ? acc_fixed : acc_dyn.data();
    global_index last_site = -1;
    for (global_index r0 = ra; r0 < re; r0 += G) {
        const int count = static_cast<int>(std::min<global_index>(G, re - r0));
        checked_table(cx, cy, col_site0, r0, count, last_site);
        group_product<T, R, G, kReal>(p.w, chk_vals.data(), chk_cols.data(), p.x + 2 * r0 * p.rr, acc, p.rr);
        finish(acc, r0, count);
    }
}

/// The z-segment [za, zb) of column (cx, cy) with a shifted-load form: the whole vectors of
/// interior sites shifted, the rest checked (also every column whose shifted reads would
/// leave the vector: the lattice's ends).
template <class T, int R, int B, bool Real>
void SweepThread<T, R, B, Real>::shifted_column(int cx, int cy, global_index col_site0, int za, int zb)
{
    constexpr int kShiftLanes = Plan::kShiftLanes;
    const CpuStencilOperator& op = p.op;
    const int nb = p.nb;
    const global_index ra = nb * (col_site0 + za), re = nb * (col_site0 + zb);
    const int iza = std::max(za, op.lo_[2]), izb = std::min(zb, op.hi_[2]);
    global_index sa = re, se = re;
    if (cx >= op.lo_[0] && cx < op.hi_[0] && cy >= op.lo_[1] && cy < op.hi_[1] && iza < izb) {
        sa = nb * (col_site0 + iza);
        se = sa + (nb * (col_site0 + izb) - sa) / kShiftLanes * kShiftLanes;
    }
    if (se > sa && sa + p.shift_t->lo >= 0 && se - kShiftLanes + p.shift_t->hi < p.num_rows_total) {
        checked(cx, cy, col_site0, ra, sa);
        shift_rows(sa, se);
        checked(cx, cy, col_site0, se, re);
    } else {
        checked(cx, cy, col_site0, ra, re);
    }
}

/// Whole interior groups [fa, fe) on the shared tables (the window form where it applies),
/// with the software prefetch of R >= 16.
template <class T, int R, int B, bool Real>
void SweepThread<T, R, B, Real>::fast_rows(global_index fa, global_index fe)
{
    constexpr int kPerLine = Plan::kPerLine;
    const int rr = p.rr, nb = p.nb, w = p.w;
    const T* const x = p.x;
    alignas(64) T acc_fixed[R > 0 ? 2 * G * R : 1];
    T* const acc = R > 0 ? acc_fixed : acc_dyn.data();
    for (global_index r0 = fa; r0 < fe; r0 += G) {
        if (p.num_streams > 0) {
            const T* xb = x + 2 * r0 * rr;
            for (int st = 0; st < p.num_streams; ++st)
                for (int l = 0; l < p.pf_lines; ++l) __builtin_prefetch(xb + p.streams[st] + kPerLine * l, 0, 3);
            const T* yb = p.y + 2 * r0 * rr + p.pf_ahead_y;
            for (int l = 0; l < p.pf_lines; ++l) __builtin_prefetch(yb + kPerLine * l, 1, 3);
        }
        const int phase = static_cast<int>(r0 % nb);
        if constexpr (Plan::kWindow) {
            const WindowTable<T>& win = p.win;
            if (win.ok[static_cast<size_t>(phase)] && r0 + win.lo >= 0 && r0 + win.hi < p.num_rows_total) {
                window_product<T, kReal, G / Plan::kWinLanes>(win, phase, w, x + 2 * r0, acc);
                finish(acc, r0, G);
                continue;
            }
        }
        const size_t off = static_cast<size_t>(phase) * w * G;
        group_product<T, R, G, kReal>(w, p.fast_vals.data() + kPer * off, p.fast_cols.data() + off, x + 2 * r0 * rr,
                                      acc, rr);
        finish(acc, r0, G);
    }
}

/// The z-segment [za, zb) of column (cx, cy): the site form, the shifted-load form, or whole
/// interior groups on the shared tables between checked ends.
template <class T, int R, int B, bool Real>
void SweepThread<T, R, B, Real>::column(int cx, int cy, int za, int zb)
{
    const CpuStencilOperator& op = p.op;
    const int nb = p.nb;
    const global_index col_site0 = global_index(p.nz) * (cy + global_index(p.ny) * cx);
    const global_index ra = nb * (col_site0 + za), re = nb * (col_site0 + zb);
    if constexpr (Plan::kSiteForm) {
        if (p.site_form) {
            if constexpr (R > 1) return site_column_wide(cx, cy, col_site0, za, zb);
            const SiteForm<T>& sites = p.sites;
            site_column(sites, sites.cls[0][static_cast<size_t>(cx)], sites.cls[1][static_cast<size_t>(cy)], p.x, p.y,
                        col_site0, za, zb, p.pot, p.per_row, p.scale, p.shift, p.beta, p.want_dots, lanes, p.site_fc,
                        p.site_pf, p.site_pf_plane);
            return;
        }
    }
    if (p.shift_t != nullptr) return shifted_column(cx, cy, col_site0, za, zb);
    global_index fa = re, fe = re;  // fast rows [fa, fe)
    const int iza = std::max(za, op.lo_[2]), izb = std::min(zb, op.hi_[2]);
    if (cx >= op.lo_[0] && cx < op.hi_[0] && cy >= op.lo_[1] && cy < op.hi_[1] && iza < izb) {
        fa = nb * (col_site0 + iza);
        fe = fa + (nb * (col_site0 + izb) - fa) / G * G;
    }
    if (fa >= fe) fa = fe = re;  // no whole interior group: all checked
    checked(cx, cy, col_site0, ra, std::min(fa, re));
    fast_rows(fa, fe);
    checked(cx, cy, col_site0, std::max(fe, ra), re);
}

/// Sites za <= z < zb of column (cx, cy) in the site form at R = 2, 4, 8 (double): up to
/// 16 / R sites of one class per step (fewer where the class changes: the z faces), each
/// site with its own sums; R = 2: the epilogue of site_column per vector (finish_vector_sums,
/// dots in two lane sets); R >= 4: finish_row per row (the dots in sxx/syx/syxs, the fused
/// accumulation).
template <class T, int R, int B, bool Real>
void SweepThread<T, R, B, Real>::site_column_wide(int cx, int cy, global_index col_site0, int za, int zb)
{
    if constexpr (std::is_same_v<T, double> && (R == 2 || R == 4 || R == 8)) {
        using simd::v8d;
        const SiteForm<double>& f = p.sites;
        const int ccx = f.cls[0][static_cast<size_t>(cx)], ccy = f.cls[1][static_cast<size_t>(cy)];
        const int* zcls = f.cls[2].data();
        const v8d sv = v8d{} + p.scale;
        const v8d bv = v8d{} + p.beta, ko = v8d{} + p.acc_co, kx = v8d{} + p.acc_cx, kn = v8d{} + p.acc_cn;
        kernels::cpu::DotLanes l1{};
        constexpr int V = R >= 4 ? R / 4 : 1;
        v8d dxx[2][V] = {}, dyx[2][V] = {}, dyxs[2][V] = {};  // R >= 4: by row parity
        for (int z = za; z < zb;) {
            const int cz = zcls[z];
            const SiteForm<double>::Class& c = f.at(ccx, ccy, cz);
            const global_index site = col_site0 + z;
            const double* x0 = p.x + 8 * R * site;
            const auto sites = [&](auto n) __attribute__((always_inline)) {
                constexpr int N = decltype(n)::value;
                if (p.site_pf > 0)  // the x plane ahead and y, site_pf doubles ahead of these sites
                    for (int l = 0; l < R * N; ++l) {
                        __builtin_prefetch(x0 + p.site_pf_plane + p.site_pf + 8 * l, 0, 3);
                        __builtin_prefetch(p.y + 8 * R * site + p.site_pf + 8 * l, 1, 3);
                    }
                if constexpr (R == 2) {
                    v8d a[N][2];
                    site_sums_r2<N>(c, x0, a);
#pragma GCC unroll 8
                    for (int k = 0; k < N; ++k)
                        for (int h = 0; h < 2; ++h) {
                            const global_index row0 = 4 * (site + k) + 2 * h;
                            v8d dv;
                            if (p.per_row) {
                                const double d0 = p.pot[row0] - p.shift, d1 = p.pot[row0 + 1] - p.shift;
                                dv = v8d{d0, d0, d0, d0, d1, d1, d1, d1};
                            } else {
                                dv = v8d{} + (p.pot[site + k] - p.shift);
                            }
                            kernels::cpu::finish_vector_sums(a[k][h], x0 + 16 * k + 8 * h, p.y + 2 * R * row0, sv,
                                                             dv, p.beta, p.want_dots, h == 0 ? lanes : l1);
                        }
                } else {
                    v8d a[N][4][R / 4];
                    site_sums_wide<R, N>(c, x0, a);
                    // finish_row's arithmetic (the same y, bit for bit), the dots in registers.
#pragma GCC unroll 8
                    for (int k = 0; k < N; ++k)
#pragma GCC unroll 4
                        for (int o = 0; o < 4; ++o) {
                            const global_index row = 4 * (site + k) + o;
                            const v8d dv = v8d{} + ((p.per_row ? p.pot[row] : p.pot[site + k]) - p.shift);
#pragma GCC unroll 2
                            for (int j = 0; j < R / 4; ++j) {
                                const std::ptrdiff_t e = 2 * R * row + 8 * j;
                                const v8d xv = simd::load<v8d>(p.x + e);
                                v8d yv = sv * (a[k][o][j] + dv * xv);
                                const v8d yold = p.beta != 0.0 ? simd::load<v8d>(p.y + e) : v8d{};  // beta == 0: never read y
                                yv += bv * yold;
                                simd::store(p.y + e, yv);
                                if (p.acc_out != nullptr)  // acc += c_old y_old + c_x x + c_new y
                                    simd::store(p.acc_out + e, simd::load<v8d>(p.acc_out + e) + ko * yold + kx * xv + kn * yv);
                                if (p.want_dots) {
                                    const v8d xsw = __builtin_shufflevector(xv, xv, 1, 0, 3, 2, 5, 4, 7, 6);
                                    dxx[o & 1][j] += xv * xv;
                                    dyx[o & 1][j] += yv * xv;
                                    dyxs[o & 1][j] += yv * xsw;
                                }
                            }
                        }
                }
                z += N;
            };
            // (classes are monotone along z)
            if constexpr (R == 2)
                if (z + 3 < zb && zcls[z + 3] == cz) {
                    sites(std::integral_constant<int, 4>{});
                    continue;
                }
            if constexpr (R <= 4)
                if (z + 1 < zb && zcls[z + 1] == cz) {
                    sites(std::integral_constant<int, 2>{});
                    continue;
                }
            sites(std::integral_constant<int, 1>{});
        }
        lanes.xx += l1.xx;
        lanes.yx += l1.yx;
        lanes.yxs += l1.yxs;
        if constexpr (R >= 4)
            if (p.want_dots)
                for (int j = 0; j < V; ++j) {
                    simd::store(sxx + 8 * j, simd::load<v8d>(sxx + 8 * j) + (dxx[0][j] + dxx[1][j]));
                    simd::store(syx + 8 * j, simd::load<v8d>(syx + 8 * j) + (dyx[0][j] + dyx[1][j]));
                    simd::store(syxs + 8 * j, simd::load<v8d>(syxs + 8 * j) + (dyxs[0][j] + dyxs[1][j]));
                }
    } else {
        (void)cx, (void)cy, (void)col_site0, (void)za, (void)zb;
    }
}

template <class T, int R, int B, bool Real>
void SweepThread<T, R, B, Real>::tile(long index)
{
    const Tiling& tiling = p.tiling;
    const int jx = static_cast<int>(index / (long(p.nty) * p.ntz));
    const int jy = static_cast<int>((index / p.ntz) % p.nty);
    const int jz = static_cast<int>(index % p.ntz);
    const int x0 = jx * tiling.tx, x1 = std::min(p.nx, x0 + tiling.tx);
    const int y0 = jy * tiling.ty, y1 = std::min(p.ny, y0 + tiling.ty);
    const int za = jz * tiling.tz, zb = std::min(p.nz, za + tiling.tz);
    for (int cx = x0; cx < x1; ++cx)
        for (int cy = y0; cy < y1; ++cy) column(cx, cy, za, zb);
}

template <class T, int R, int B, bool Real>
void SweepThread<T, R, B, Real>::store_dots(std::vector<double>& partial)
{
    if constexpr (R == 1 || R == 2) kernels::cpu::add_dot_lanes<R>(lanes, txx, tyr, tyi);
    if constexpr (R >= 4)
        for (int j = 0; j < R; ++j) {
            txx[j] = sxx[2 * j] + sxx[2 * j + 1];
            tyr[j] = syx[2 * j] + syx[2 * j + 1];
            tyi[j] = syxs[2 * j] - syxs[2 * j + 1];
        }
    if constexpr (kFloatRows) float_rows.add_to(txx, tyr, tyi);
    store_thread_dots(partial, p.rr, txx, tyr, tyi);
}

template <class T, int R, int B, bool Real>
void CpuStencilOperator::sweep(const T* x, T* y, int runtime_r, const AugmentedOps& ops, DotSums* dots) const
{
    const SweepPlan<T, R, B, Real> plan(*this, x, y, runtime_r, ops, dots != nullptr);
    std::vector<double> partial(static_cast<size_t>(plan.max_threads) * 3 * plan.rr, 0.0);
    int team = 1;
#pragma omp parallel num_threads(plan.max_threads)
    {
#pragma omp single
        team = omp_get_num_threads();
        SweepThread<T, R, B, Real> thread(plan);
#pragma omp for schedule(static)
        for (long tile = 0; tile < plan.num_tiles; ++tile) thread.tile(tile);
        thread.store_dots(partial);
    }
    if (dots != nullptr) collect_dots(partial, team, plan.rr, dots);
}

}  // namespace topokpm::numerics::kernels::cpu::stencil
