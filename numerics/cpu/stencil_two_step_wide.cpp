// Two KPM steps per pass over memory at block widths R > 1 for 2-D stencils (graphene): strips
// of lattice lines, a wavefront over lines per strip (the contract and the schedule:
// numerics/cpu/stencil_two_step_wide.hpp). Written once over the value type T (double, or
// float for --precision single).
//
// A row's R complex values are whole vectors of at most 64 bytes (2 R values, at most 8
// doubles or 16 floats per vector: R = 2 takes one 256-bit vector of doubles or a 128-bit
// one of floats, R = 4 in float one of 256 bits); where a row is narrower than 64 bytes and a
// site has two orbitals (graphene), the interior rows go 2 or 4 per 64-byte vector instead
// (WideSteps::kG). The row is one chain per vector that adds
// scale v x per entry and scale (V - shift) x for the potential, with scale folded into the
// couplings once per call (4 FMAs per vector for graphene's three real couplings, where
// scale (acc + (V - shift) x) + beta y took 6; docs/performance.md, "branch s27-r16").
// Double: the chain starts from beta y (beta = -1, the KPM step: -y, folded into the first
// FMA as a multiply-subtract; beta = 0: zero, y never read). Float: the chain starts from
// zero and beta y is added last, so that y0 takes one rounding (the float epilogue's error
// model, cpu_stencil_single_test.cpp), and the folded couplings and a uniform
// scale (V - shift) are dithered over the sites (row_epilogue.hpp's DitheredFloat, per
// orbital and entry: the mean over 16 sites is the double value to 1/32 ulp; rounded to the
// nearest float they would scale the spectrum by up to half an ulp); a per-row potential
// term is rounded to the nearest float. Complex couplings use complex_block_simd.hpp's split
// (a += Re v x, b += Im v x, combined once). The dots run on the same vectors
// (row_epilogue.hpp's DotLanes rule); in float as sums of at most kSingleDotRun rows per
// lane, then added to double lanes (the bound of the R = 1 float form). Rows whose site has
// every neighbour inside its line (sites site_reach .. sites - site_reach - 1) use relative
// offsets; the others wrap or drop per entry.
#include "numerics/cpu/stencil_two_step_wide.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/cpu/row_epilogue.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics::kernels::cpu {
namespace {

template <class V, class T>
inline V vload(const T* p)
{
    V v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class V, class T>
inline void vstore(T* p, V v)
{
    std::memcpy(p, &v, sizeof v);
}

/// w in every lane (V{} + w would add 0.0 per lane: a scalar add before the broadcast, which
/// the compiler may not drop because 0.0 + -0.0 is +0.0).
template <class V, class T, std::size_t... I>
inline V splat_lanes(T w, std::index_sequence<I...>)
{
    return V{((void)I, w)...};
}
template <class V, class T>
inline V splat(T w)
{
    return splat_lanes<V>(w, std::make_index_sequence<sizeof(V) / sizeof(T)>{});
}

/// (re, im) pairs swapped.
template <class V, std::size_t... I>
inline V swapped_lanes(V b, std::index_sequence<I...>)
{
    return __builtin_shufflevector(b, b, static_cast<int>(I ^ 1u)...);
}
template <class V, class T>
inline V swapped(V b)
{
    return swapped_lanes(b, std::make_index_sequence<sizeof(V) / sizeof(T)>{});
}

/// (-1, +1) repeated: times swapped(b) it is i * b for b = (re, im) pairs.
template <class V, class T, std::size_t... I>
inline V minus_plus_lanes(std::index_sequence<I...>)
{
    return V{(I % 2 == 0 ? T(-1) : T(1))...};
}
template <class V, class T>
inline V times_i(V b)
{
    return swapped<V, T>(b) * minus_plus_lanes<V, T>(std::make_index_sequence<sizeof(V) / sizeof(T)>{});
}

/// a and b side by side (twice the lanes).
template <class H, std::size_t... I>
inline auto concat_lanes(H a, H b, std::index_sequence<I...>)
{
    return __builtin_shufflevector(a, b, static_cast<int>(I)...);
}
template <class T, class H>
inline auto concat(H a, H b)
{
    return concat_lanes(a, b, std::make_index_sequence<2 * sizeof(H) / sizeof(T)>{});
}

/// How a row's chain starts (double) or ends (float) with the old y's term: beta = 0 (zero;
/// y is never read), beta = -1 (the KPM step: -y; in double the first FMA takes it as a
/// multiply-subtract) or any other beta (beta y). -1 y is -y exactly, so the two nonzero
/// forms give the same values.
enum class BetaForm { Zero, MinusOne, General };

template <class T, int R, bool Real>
class WideSteps {
public:
    static constexpr bool kFloat = std::is_same_v<T, float>;
    static_assert(kFloat || std::is_same_v<T, double>, "double or float");
    static constexpr int kRowVals = 2 * R;  // T values per row
    static constexpr int kLanes = std::min<int>(kRowVals, 64 / static_cast<int>(sizeof(T)));  // T per vector
    static constexpr int NV = kRowVals / kLanes;
    static_assert(NV >= 1 && kRowVals % kLanes == 0, "whole vectors per row");
    using V = typename simd::VectorOf<T, kLanes>::type;
    /// Rows narrower than 64 bytes (R = 2, and R = 4 in float) with two orbitals per site
    /// (graphene): the interior rows go kG consecutive rows (kG / 2 whole sites) per 64-byte
    /// vector GV, each row's part of an entry loaded from its own neighbour and the parts
    /// joined (the couplings per lane); with one row per vector a row took about as long as
    /// a 64-byte one (its fixed work, not its width, bound it; docs/performance.md, "branch
    /// s28-fstrip").
    static constexpr int kFull = 64 / static_cast<int>(sizeof(T));
    static constexpr int kG = kRowVals < kFull ? kFull / kRowVals : 1;
    static_assert(kG == 1 || kG == 2 || kG == 4, "rows per 64-byte vector");
    using GV = typename simd::VectorOf<T, kFull>::type;

    /// Entries per row and orbitals of interior<>'s per-call tables (graphene: 3 and 2).
    static constexpr int kMaxOrbitals = 4, kMaxLen = 6;

    /// The couplings are stored times ops.scale (the chain adds scale v x per entry); float:
    /// dithered over the sites.
    WideSteps(const WideStencil2D& s, const AugmentedOps& ops)
        : s_(s), scale_(ops.scale), shift_(ops.shift), beta_(ops.beta)
    {
        const int nb = s.orbitals;
        line_vals_ = 2 * static_cast<std::ptrdiff_t>(R) * nb * s.sites;
        for (int o = 0; o < nb; ++o) {
            Table t;
            for (const WideStencil2D::Entry& e : s.rows[static_cast<size_t>(o)]) {
                t.sel.push_back(e.dline + 1);
                t.off.push_back(2 * static_cast<std::ptrdiff_t>(R) * (static_cast<std::ptrdiff_t>(nb) * e.dsite + e.b - o));
                if constexpr (kFloat) {
                    t.vr.push_back(dithered_float(scale_ * e.re));
                    t.vi.push_back(dithered_float(scale_ * e.im));
                } else {
                    t.vr.push_back(scale_ * e.re);
                    t.vi.push_back(scale_ * e.im);
                }
            }
            max_len_ = std::max(max_len_, static_cast<int>(t.sel.size()));
            tables_.push_back(std::move(t));
        }
        const double uniform_d = s.uniform_potential ? scale_ * (s.potential[0] - shift_) : 0.0;
        Coupling d_dither;
        if constexpr (kFloat) d_dither = dithered_float(uniform_d);
        else d_dither = uniform_d;
        for (int j = 0; j < kD; ++j) dd_[j] = at(d_dither, j);
        if (nb > kMaxOrbitals || max_len_ > kMaxLen) return;  // interior_len takes the table walk
        // The masks of missing neighbour lines that occur (bit 0: line - 1, bit 1: line + 1).
        for (int m = 0; m < 4; ++m) {
            const bool below = (m & 1) != 0, above = (m & 2) != 0;
            const bool occurs = s.periodic_lines ? m == 0
                                                 : (s.lines >= 3 && m == 0) || (s.lines >= 2 && (m == 1 || m == 2)) ||
                                                       (s.lines == 1 && m == 3);
            if (occurs) build_coeffs(m, below, above);
        }
        if constexpr (kG > 1) {
            gd_.assign(kD, GV{});
            for (int ph = 0; ph < kD; ++ph)
                for (int i = 0; i < kFull; ++i) gd_[ph][i] = dd_[kFloat ? (ph + i / kRowVals / nb) & 15 : 0];
        }
    }

    /// Per thread and step: the dots of one step's rows per lane of the row's vectors,
    /// sxx = x x, syx = y x, syxs = y swap(x) (row_epilogue.hpp's DotLanes rule: no shuffle
    /// per row), in double (float: the runs of kSingleDotRun rows added), folded into the
    /// per-column xx, yr, yi by fold().
    struct Dots {
        using DV = std::conditional_t<kFloat, double, V>;  // double lanes
        static constexpr int kN = kFloat ? kRowVals : NV;
        double xx[R] = {}, yr[R] = {}, yi[R] = {};
        DV sxx[kN] = {}, syx[kN] = {}, syxs[kN] = {};
        double gxx[kFull] = {}, gyx[kFull] = {}, gyxs[kFull] = {};  // kG > 1: the grouped rows' lanes
        double lane(const DV* s, int i) const
        {
            if constexpr (kFloat) return s[i];
            else return s[i / kLanes][i % kLanes];
        }
        void fold()
        {
            for (int c = 0; c < R; ++c) {
                const int i = 2 * c;
                xx[c] += lane(sxx, i) + lane(sxx, i + 1);
                yr[c] += lane(syx, i) + lane(syx, i + 1);
                yi[c] += lane(syxs, i) - lane(syxs, i + 1);
            }
            if constexpr (kG > 1)
                for (int i = 0; i < kFull; i += 2) {
                    const int c = (i % kRowVals) / 2;
                    xx[c] += gxx[i] + gxx[i + 1];
                    yr[c] += gyx[i] + gyx[i + 1];
                    yi[c] += gyxs[i] - gyxs[i + 1];
                }
        }
    };

    /// out := scale (H - shift) in + beta out on sites [z0, z1) of `line`. ahead: step A on
    /// blocks beyond the cache (run()), whose next line of `in` and this line of `out` come
    /// from memory: the interior rows of the KPM step (beta = -1) prefetch them.
    void rows(const T* in, T* out, int line, int z0, int z1, bool want_dots, bool ahead, Dots& d) const
    {
        if (z1 <= z0) return;
        const T* xl[3];
        for (int k = 0; k < 3; ++k) {
            int l = line + k - 1;
            if (l < 0 || l >= s_.lines) {
                if (!s_.periodic_lines) {
                    xl[k] = nullptr;
                    continue;
                }
                l = (l % s_.lines + s_.lines) % s_.lines;
            }
            xl[k] = in + line_vals_ * l;
        }
        const int h = s_.site_reach, ns = s_.sites, nb = s_.orbitals;
        const int ia = std::max(z0, h), ie = std::min(z1, ns - h);  // interior sites
        // The dot lanes in locals for the call: in d they would be reloaded after every store
        // to y (a T store may alias a vector of T).
        Lanes l{};
        if constexpr (!kFloat)
            for (int v = 0; v < NV; ++v) {
                l.xx[v] = d.sxx[v];
                l.yx[v] = d.syx[v];
                l.yxs[v] = d.syxs[v];
            }
        for (int z = z0; z < std::min(z1, ia); ++z) site<false>(xl, in, out, line, z, nb, want_dots, l, d);
        if (ie > ia) {
            if (beta_ == 0.0) interior_len<BetaForm::Zero, false>(xl, in, out, line, ia, ie, want_dots, l, d);
            else if (beta_ != -1.0) interior_len<BetaForm::General, false>(xl, in, out, line, ia, ie, want_dots, l, d);
            else if (ahead) interior_len<BetaForm::MinusOne, true>(xl, in, out, line, ia, ie, want_dots, l, d);
            else interior_len<BetaForm::MinusOne, false>(xl, in, out, line, ia, ie, want_dots, l, d);
        }
        for (int z = std::max(z0, std::max(ia, ie)); z < z1; ++z) site<false>(xl, in, out, line, z, nb, want_dots, l, d);
        if constexpr (kFloat) {
            if (want_dots) flush(l, d);
        } else {
            for (int v = 0; v < NV; ++v) {
                d.sxx[v] = l.xx[v];
                d.syx[v] = l.yx[v];
                d.syxs[v] = l.yxs[v];
            }
        }
    }

private:
    static constexpr std::ptrdiff_t kPrefetchBytes = 4096;  // step A's prefetch distance (docs/performance.md, "branch s27-r16")

public:
    /// Blocks x + y above this many bytes come from memory, and step A prefetches (below,
    /// served by the L3, the prefetches only cost load slots). A constant, not the cache size
    /// at run time: the Zen 5 core's L3 is 32 MiB, but this guest's sysconf / hwloc report the
    /// whole package's (docs/performance.md, "branch s27-r16").
    static constexpr double kPrefetchAboveBytes = 24.0 * 1024 * 1024;

private:
    /// The dot lanes of a call (float: the current run of at most kSingleDotRun rows).
    struct Lanes {
        V xx[NV], yx[NV], yxs[NV];
        int run = 0;  // float: rows in the run
    };

    /// A coupling as stored: double, or float dithered over the sites.
    using Coupling = std::conditional_t<kFloat, DitheredFloat, double>;

    struct Table {
        std::vector<int> sel;
        std::vector<std::ptrdiff_t> off;  // T values from the row's own position in its line
        std::vector<Coupling> vr, vi;     // scale v
    };

    static T at(double c, std::ptrdiff_t) { return c; }
    static T at(const DitheredFloat& c, std::ptrdiff_t site) { return c.at(site); }

    /// Float: the run's lane sums into d's double lanes; a new run.
    __attribute__((always_inline)) static inline void flush(Lanes& l, Dots& d)
    {
        if constexpr (kFloat) {
            for (int v = 0; v < NV; ++v)
#pragma omp simd
                for (int j = 0; j < kLanes; ++j) {
                    d.sxx[kLanes * v + j] += l.xx[v][j];
                    d.syx[kLanes * v + j] += l.yx[v][j];
                    d.syxs[kLanes * v + j] += l.yxs[v][j];
                }
            for (int v = 0; v < NV; ++v) l.xx[v] = l.yx[v] = l.yxs[v] = V{};
            l.run = 0;
        }
    }

    /// The grouped rows' dot lanes of a call (float: of at most kSingleDotRun groups).
    struct GLanes {
        GV xx, yx, yxs;
        int run = 0;
    };

    /// The group lanes into d's double lanes; a new run.
    __attribute__((always_inline)) static inline void flush_group(GLanes& l, Dots& d)
    {
#pragma omp simd
        for (int i = 0; i < kFull; ++i) {
            d.gxx[i] += l.xx[i];
            d.gyx[i] += l.yx[i];
            d.gyxs[i] += l.yxs[i];
        }
        l.xx = l.yx = l.yxs = GV{};
        l.run = 0;
    }

    /// The chain's start: double, beta y, or zero (beta = 0: y is never read); float: zero.
    template <BetaForm B>
    __attribute__((always_inline)) static inline void start_row(V (&a)[NV], const T* __restrict yo, V bv)
    {
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
            if constexpr (kFloat || B == BetaForm::Zero) a[v] = V{};
            else if constexpr (B == BetaForm::MinusOne) a[v] = -vload<V>(yo + kLanes * v);
            else a[v] = bv * vload<V>(yo + kLanes * v);
        }
    }

    /// The row's end, shared by the table walk (site) and the fixed-length path (interior):
    /// y = a + dv x with a = sum scale v x (and b the imaginary couplings' sums), dv =
    /// scale (V - shift), plus beta y (double: already in a; float: added here), and the dot
    /// lanes.
    template <BetaForm B>
    __attribute__((always_inline)) static inline void finish_row(V (&a)[NV], const V (&b)[NV], const T* __restrict xo,
                                                                 T* __restrict yo, V dv, V bv, bool want_dots, Lanes& l,
                                                                 Dots& d)
    {
        if constexpr (!Real)
            for (int v = 0; v < NV; ++v) a[v] += times_i<V, T>(b[v]);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
            const V xv = vload<V>(xo + kLanes * v);
            V yv = a[v] + dv * xv;
            if constexpr (kFloat) {
                if constexpr (B == BetaForm::MinusOne) yv -= vload<V>(yo + kLanes * v);
                else if constexpr (B == BetaForm::General) yv += bv * vload<V>(yo + kLanes * v);
            }
            vstore(yo + kLanes * v, yv);
            if (want_dots) {
                l.xx[v] += xv * xv;
                l.yx[v] += yv * xv;
                l.yxs[v] += yv * swapped<V, T>(xv);
            }
        }
        if constexpr (kFloat)
            if (want_dots && ++l.run == kSingleDotRun) flush(l, d);
    }

    template <BetaForm B, bool Ahead>
    void interior_len(const T* const* xl, const T* in, T* out, int line, int za, int zb, bool want_dots, Lanes& l,
                      Dots& d) const
    {
        switch (s_.orbitals <= kMaxOrbitals ? max_len_ : 0) {
        case 1: return interior<1, B, Ahead>(xl, in, out, line, za, zb, want_dots, l, d);
        case 2: return interior<2, B, Ahead>(xl, in, out, line, za, zb, want_dots, l, d);
        case 3: return interior<3, B, Ahead>(xl, in, out, line, za, zb, want_dots, l, d);
        case 4: return interior<4, B, Ahead>(xl, in, out, line, za, zb, want_dots, l, d);
        case 5: return interior<5, B, Ahead>(xl, in, out, line, za, zb, want_dots, l, d);
        case 6: return interior<6, B, Ahead>(xl, in, out, line, za, zb, want_dots, l, d);
        default:
            for (int z = za; z < zb; ++z) site<true>(xl, in, out, line, z, s_.orbitals, want_dots, l, d);
        }
    }

    /// site<true> on sites [za, zb) of `line` (all interior) with LEN entries per orbital row:
    /// the entries' positions resolved once per call (a missing line's entries and the
    /// shorter rows' tails become zero-valued entries on the row itself, which add exact
    /// zeros), so a row is LEN fixed loads and FMAs per vector with no table lookups or
    /// checks, and the scalars live in registers or local tables (as members they were
    /// reloaded after every store to y). The same operations in the same order as site<true>.
    template <int LEN, BetaForm B, bool Ahead>
    void interior(const T* const* xl, const T* in, T* out, int line, int za, int zb, bool want_dots, Lanes& lanes,
                  Dots& d) const
    {
        static_assert(LEN <= kMaxLen, "interior_len's lengths");
        // The lanes in a local for the call (registers): through the reference they were
        // stored and reloaded per row where this function is not inlined (docs/performance.md,
        // "branch s28-fstrip").
        Lanes l = lanes;
        const int nb = s_.orbitals;
        const std::ptrdiff_t own = line_vals_ * line;  // this line's first value
        const T* base[kMaxOrbitals][LEN];
        for (int o = 0; o < nb; ++o) {
            const Table& t = tables_[static_cast<size_t>(o)];
            int n = 0;
            for (size_t k = 0; k < t.sel.size(); ++k) {
                const T* b = xl[t.sel[k]];
                if (b == nullptr) continue;  // past an open boundary
                base[o][n++] = b + 2 * R * o + t.off[k];
            }
            for (; n < LEN; ++n) base[o][n] = in + own + 2 * R * o;
        }
        // The couplings in the same order (coeffs_), copied to locals.
        const Coeffs& cf = coeffs_[(xl[0] == nullptr ? 1 : 0) + (xl[2] == nullptr ? 2 : 0)];
        alignas(64) T vr[kMaxOrbitals][LEN][kD], vi[kMaxOrbitals][LEN][kD];
        for (int o = 0; o < std::min(nb, kMaxOrbitals); ++o)  // nb <= kMaxOrbitals (interior_len)
            for (int k = 0; k < LEN; ++k) {
                std::memcpy(vr[o][k], cf.vr.data() + (o * kMaxLen + k) * kD, sizeof vr[o][k]);
                if constexpr (!Real) std::memcpy(vi[o][k], cf.vi.data() + (o * kMaxLen + k) * kD, sizeof vi[o][k]);
            }
        const double* const potential = s_.potential;
        const bool per_row = s_.per_row, uniform = s_.uniform_potential;
        const double scale = scale_, shift = shift_;
        const V bv = splat<V>(static_cast<T>(beta_));
        alignas(64) T dd[kD];  // the uniform d (float: per dither phase)
        std::memcpy(dd, dd_, sizeof dd);
        const std::ptrdiff_t site_vals = 2 * static_cast<std::ptrdiff_t>(R) * nb;
        // Step A's data from memory, kPrefetchBytes ahead: the next line of `in` (its rows
        // are first read here, half of them as neighbours: a strided pattern the hardware
        // prefetchers did not keep up with) and this line of `out` (beta y).
        const std::ptrdiff_t ahead_vals =
            site_vals * std::max<std::ptrdiff_t>(1, kPrefetchBytes / (static_cast<std::ptrdiff_t>(sizeof(T)) * site_vals));
        const T* const next = xl[2] != nullptr ? xl[2] + ahead_vals : in + own;  // no next line: this one
        T* const out_ahead = out + own + ahead_vals;
        constexpr int kLine = 64 / static_cast<int>(sizeof(T));  // T per cache line
        int zs = za;  // the first site left to the row loop below
        // kG > 1, nb = NB = 2 (graphene): the interior sites in groups of kG rows per vector.
        // NB at compile time: the neighbours of a group's later sites at fixed displacements
        // from its first site's (NB LEN pointers in registers, not kG LEN).
        auto grouped = [&](auto nb_c) __attribute__((always_inline)) {
                constexpr int NB = decltype(nb_c)::value;
                constexpr int ks = kG / NB;  // sites per group vector
                constexpr std::ptrdiff_t kSiteVals = 2 * static_cast<std::ptrdiff_t>(R) * NB;
                // Per entry and dither phase j of the group's first site: the couplings per
                // lane (lane i: row g = i / kRowVals of the group, orbital g % nb, site g / nb).
                alignas(64) GV gw[LEN][kD], gwi[Real ? 1 : LEN][kD], gd[kD];
                std::memcpy(gw, cf.gw.data(), sizeof gw);
                if constexpr (!Real) std::memcpy(gwi, cf.gwi.data(), sizeof gwi);
                std::memcpy(gd, gd_.data(), sizeof gd);
                const T* gbase[NB][LEN];
                for (int o = 0; o < NB; ++o)
                    for (int k = 0; k < LEN; ++k) gbase[o][k] = base[o][k];
                const std::ptrdiff_t line_site0 = static_cast<std::ptrdiff_t>(line) * s_.sites;
                const GV bg = splat<GV>(static_cast<T>(beta_));
                GLanes gl{};
                for (; zs + ks <= zb; zs += ks) {
                    const std::ptrdiff_t zo = kSiteVals * zs;
                    const std::ptrdiff_t site_g = line_site0 + zs;
                    const int j = kFloat ? static_cast<int>(site_g & 15) : 0;
                    if constexpr (Ahead)
                        for (std::ptrdiff_t c = 0; c < kSiteVals * ks; c += kLine) {
                            __builtin_prefetch(next + zo + c, 0, 3);
                            __builtin_prefetch(out_ahead + zo + c, 0, 3);
                        }
                    const std::ptrdiff_t row = NB * site_g;
                    const T* __restrict xo = in + 2 * R * row;
                    T* __restrict yo = out + 2 * R * row;
                    GV a, b{};
                    if constexpr (kFloat || B == BetaForm::Zero) a = GV{};
                    else if constexpr (B == BetaForm::MinusOne) a = -vload<GV>(yo);
                    else a = bg * vload<GV>(yo);
#pragma GCC unroll 8
                    for (int k = 0; k < LEN; ++k) {
                        auto part = [&](int g) __attribute__((always_inline)) {
                            return vload<V>(gbase[g % NB][k] + zo + kSiteVals * (g / NB));
                        };
                        GV xk;
                        if constexpr (kG == 2) xk = concat<T>(part(0), part(1));
                        else xk = concat<T>(concat<T>(part(0), part(1)), concat<T>(part(2), part(3)));
                        a += gw[k][j] * xk;
                        if constexpr (!Real) b += gwi[k][j] * xk;
                    }
                    GV dv;
                    if (uniform) {
                        dv = gd[j];
                    } else {
                        V dr[kG];
                        for (int g = 0; g < kG; ++g)
                            dr[g] = splat<V>(static_cast<T>(
                                scale * ((per_row ? potential[row + g] : potential[site_g + g / NB]) - shift)));
                        if constexpr (kG == 2) dv = concat<T>(dr[0], dr[1]);
                        else dv = concat<T>(concat<T>(dr[0], dr[1]), concat<T>(dr[2], dr[3]));
                    }
                    if constexpr (!Real) a += times_i<GV, T>(b);
                    const GV xv = vload<GV>(xo);
                    GV yv = a + dv * xv;
                    if constexpr (kFloat) {
                        if constexpr (B == BetaForm::MinusOne) yv -= vload<GV>(yo);
                        else if constexpr (B == BetaForm::General) yv += bg * vload<GV>(yo);
                    }
                    vstore(yo, yv);
                    if (want_dots) {
                        gl.xx += xv * xv;
                        gl.yx += yv * xv;
                        gl.yxs += yv * swapped<GV, T>(xv);
                        if constexpr (kFloat)
                            if (++gl.run == kSingleDotRun) flush_group(gl, d);
                    }
                }
                if (want_dots) flush_group(gl, d);
        };
        if constexpr (kG > 1)
            if (nb == 2) grouped(std::integral_constant<int, 2>{});  // graphene's two sublattices; other nb: the rows
        for (int z = zs; z < zb; ++z) {
            const std::ptrdiff_t zo = site_vals * z;
            const std::ptrdiff_t site_g = static_cast<std::ptrdiff_t>(line) * s_.sites + z;
            const int j = kFloat ? static_cast<int>(site_g & 15) : 0;  // the dither's phase
            if constexpr (Ahead)
                for (std::ptrdiff_t c = 0; c < site_vals; c += kLine) {
                    __builtin_prefetch(next + zo + c, 0, 3);
                    __builtin_prefetch(out_ahead + zo + c, 0, 3);
                }
            for (int o = 0; o < nb; ++o) {
                const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(nb) * site_g + o;
                const T* __restrict xo = in + 2 * R * row;
                T* __restrict yo = out + 2 * R * row;
                V a[NV], b[NV] = {};
                start_row<B>(a, yo, bv);
#pragma GCC unroll 8
                for (int k = 0; k < LEN; ++k) {
                    const T* p = base[o][k] + zo;
                    const V wr = splat<V>(vr[o][k][j]);
#pragma GCC unroll 8
                    for (int v = 0; v < NV; ++v) a[v] += wr * vload<V>(p + kLanes * v);
                    if constexpr (!Real) {
                        const V wi = splat<V>(vi[o][k][j]);
#pragma GCC unroll 8
                        for (int v = 0; v < NV; ++v) b[v] += wi * vload<V>(p + kLanes * v);
                    }
                }
                const T dv = uniform ? dd[j] : static_cast<T>(scale * ((per_row ? potential[row] : potential[site_g]) - shift));
                finish_row<B>(a, b, xo, yo, splat<V>(dv), bv, want_dots, l, d);
            }
        }
        lanes = l;
    }

    template <bool Interior>
    __attribute__((always_inline)) inline void site(const T* const* xl, const T* in, T* out, int line, int z, int nb,
                                                    bool want_dots, Lanes& l, Dots& d) const
    {
        const std::ptrdiff_t site_g = static_cast<std::ptrdiff_t>(line) * s_.sites + z;
        const V bv = splat<V>(static_cast<T>(beta_));
        for (int o = 0; o < nb; ++o) {
            const std::ptrdiff_t q = static_cast<std::ptrdiff_t>(nb) * z + o;  // row in its line
            const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(nb) * site_g + o;
            const T* __restrict xo = in + 2 * R * row;
            T* __restrict yo = out + 2 * R * row;
            const Table& t = tables_[static_cast<size_t>(o)];
            const int len = static_cast<int>(t.sel.size());
            V a[NV], b[NV] = {};
            if (beta_ == 0.0) start_row<BetaForm::Zero>(a, yo, bv);
            else start_row<BetaForm::General>(a, yo, bv);
            for (int k = 0; k < len; ++k) {
                const T* base = xl[t.sel[static_cast<size_t>(k)]];
                if (base == nullptr) continue;  // the neighbour line is past an open boundary
                const T* p;
                if constexpr (Interior) {
                    p = base + 2 * R * q + t.off[static_cast<size_t>(k)];
                } else {
                    const WideStencil2D::Entry& e = s_.rows[static_cast<size_t>(o)][static_cast<size_t>(k)];
                    int zz = z + e.dsite;
                    if (zz < 0 || zz >= s_.sites) {
                        if (!s_.periodic_sites) continue;
                        zz = (zz % s_.sites + s_.sites) % s_.sites;
                    }
                    p = base + 2 * static_cast<std::ptrdiff_t>(R) * (static_cast<std::ptrdiff_t>(nb) * zz + e.b);
                }
                const V vr = splat<V>(at(t.vr[static_cast<size_t>(k)], site_g));
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) a[v] += vr * vload<V>(p + kLanes * v);
                if constexpr (!Real) {
                    const V vi = splat<V>(at(t.vi[static_cast<size_t>(k)], site_g));
#pragma GCC unroll 8
                    for (int v = 0; v < NV; ++v) b[v] += vi * vload<V>(p + kLanes * v);
                }
            }
            T dv;
            if (s_.uniform_potential) dv = dd_[kFloat ? site_g & 15 : 0];
            else dv = static_cast<T>(scale_ * ((s_.per_row ? s_.potential[row] : s_.potential[site_g]) - shift_));
            if (beta_ == 0.0) finish_row<BetaForm::Zero>(a, b, xo, yo, splat<V>(dv), bv, want_dots, l, d);
            else finish_row<BetaForm::General>(a, b, xo, yo, splat<V>(dv), bv, want_dots, l, d);
        }
    }

    /// interior<>'s couplings for one mask of missing neighbour lines, the entries of each
    /// orbital without those past the boundary, zeros after them: vr, vi [orbital][entry]
    /// [dither phase]; kG > 1: gw, gwi [entry][phase of the group's first site] per lane.
    struct Coeffs {
        std::vector<T> vr, vi;
        std::vector<GV> gw, gwi;
    };

    void build_coeffs(int m, bool below, bool above)
    {
        const int nb = s_.orbitals;
        Coeffs& c = coeffs_[m];
        c.vr.assign(static_cast<size_t>(kMaxOrbitals) * kMaxLen * kD, T(0));
        c.vi = c.vr;
        for (int o = 0; o < nb; ++o) {
            const Table& t = tables_[static_cast<size_t>(o)];
            int n = 0;
            for (size_t k = 0; k < t.sel.size(); ++k) {
                if ((t.sel[k] == 0 && below) || (t.sel[k] == 2 && above)) continue;
                for (int j = 0; j < kD; ++j) {
                    c.vr[static_cast<size_t>((o * kMaxLen + n) * kD + j)] = at(t.vr[k], j);
                    c.vi[static_cast<size_t>((o * kMaxLen + n) * kD + j)] = at(t.vi[k], j);
                }
                ++n;
            }
        }
        if constexpr (kG > 1) {
            if (nb != 2) return;  // the grouped loop: graphene only
            c.gw.assign(static_cast<size_t>(max_len_) * kD, GV{});
            c.gwi = c.gw;
            for (int k = 0; k < max_len_; ++k)
                for (int ph = 0; ph < kD; ++ph)
                    for (int i = 0; i < kFull; ++i) {
                        const int g = i / kRowVals, o = g % nb, q = kFloat ? (ph + g / nb) & 15 : 0;
                        c.gw[static_cast<size_t>(k * kD + ph)][i] = c.vr[static_cast<size_t>((o * kMaxLen + k) * kD + q)];
                        c.gwi[static_cast<size_t>(k * kD + ph)][i] = c.vi[static_cast<size_t>((o * kMaxLen + k) * kD + q)];
                    }
        }
    }

    const WideStencil2D& s_;
    double scale_ = 1.0, shift_ = 0.0, beta_ = 0.0;
    static constexpr int kD = kFloat ? 16 : 1;  // dither phases
    T dd_[kD] = {};            // the uniform d = scale (V - shift) per phase (float: dithered over the sites)
    std::vector<GV> gd_;       // kG > 1: the same per lane of a group, per phase of its first site
    Coeffs coeffs_[4];         // per mask of missing neighbour lines (build_coeffs)
    std::ptrdiff_t line_vals_ = 0;  // T values per line
    std::vector<Table> tables_;
    int max_len_ = 0;  // entries of the longest orbital row
};

template <class T, int R, bool Real>
void run(const WideStencil2D& s, T* x, T* y, const AugmentedOps& ops, DotSums* first, DotSums* second, int strip)
{
    using Steps = WideSteps<T, R, Real>;
    const Steps steps(s, ops);
    const bool want_dots = first != nullptr;
    const bool ahead = 2.0 * 2 * sizeof(T) * R * s.orbitals * static_cast<double>(s.sites) * s.lines >
                       Steps::kPrefetchAboveBytes;
    const int ns = s.sites, h = s.site_reach;
    const int lo = s.periodic_sites ? std::min(h, ns) : 0;  // B's sites [0, lo): the wrap, at the end
    strip = std::max(strip, 1);
    const int nstrips = (ns + strip - 1) / strip;
    const int max_threads = omp_get_max_threads();
    std::vector<double> part_a(static_cast<size_t>(max_threads) * 3 * R, 0.0), part_b(part_a.size(), 0.0);
    int team = 1;
#pragma omp parallel num_threads(max_threads)
    {
        const int t = omp_get_thread_num(), p = omp_get_num_threads();
        if (t == 0) team = p;  // read after the region (an omp single would add a barrier per pass)
        const int l0 = static_cast<int>(static_cast<long long>(s.lines) * t / p);
        const int l1 = static_cast<int>(static_cast<long long>(s.lines) * (t + 1) / p);
        typename Steps::Dots da, db;
        auto step_a = [&](int line, int z0, int z1) { steps.rows(x, y, line, z0, z1, want_dots, ahead, da); };
        auto step_b = [&](int line, int z0, int z1) { steps.rows(y, x, line, z0, z1, want_dots, false, db); };
        for (int si = 0; si < nstrips; ++si) {
            const int a0 = si * strip, a1 = std::min(ns, a0 + strip);
            // B lags A by site_reach sites: it needs A on sites up to z + h, and A on the next
            // strip still reads x down to a1 - h.
            const int b0 = std::max(a0 - h, lo), b1 = si + 1 == nstrips ? ns : std::max(a1 - h, lo);
            for (int l = l0; l < l1; ++l) {
                step_a(l, a0, a1);
                if (l >= l0 + 2) step_b(l - 1, b0, b1);
            }
        }
        for (int l = l0 + 1; l < l1 - 1; ++l) step_b(l, 0, lo);  // the wrap: every A of these lines is done
#pragma omp barrier
        if (l1 > l0) step_b(l0, 0, ns);
        if (l1 - 1 > l0) step_b(l1 - 1, 0, ns);
        if (want_dots) {
            da.fold();
            db.fold();
            store_thread_dots(part_a, R, da.xx, da.yr, da.yi);
            store_thread_dots(part_b, R, db.xx, db.yr, db.yi);
        }
    }
    if (want_dots) {
        collect_dots(part_a, team, R, first);
        collect_dots(part_b, team, R, second);
    }
}

template <class T, bool Real>
void dispatch(const WideStencil2D& s, T* x, T* y, int r, const AugmentedOps& ops, DotSums* first, DotSums* second,
              int strip)
{
    switch (r) {
    case 2: return run<T, 2, Real>(s, x, y, ops, first, second, strip);
    case 4: return run<T, 4, Real>(s, x, y, ops, first, second, strip);
    case 8: return run<T, 8, Real>(s, x, y, ops, first, second, strip);
    case 16: return run<T, 16, Real>(s, x, y, ops, first, second, strip);
    case 32: return run<T, 32, Real>(s, x, y, ops, first, second, strip);
    default: break;
    }
    TOPOKPM_REQUIRE(false, "two_steps_wide: no kernel for width ", r);
}

}  // namespace

bool two_steps_wide_offered(int r)
{
    return r == 2 || r == 4 || r == 8 || r == 16 || r == 32;
}

int two_steps_wide_strip(const WideStencil2D& s, int r, int complex_bytes, int requested)
{
    if (requested >= 1) return requested;
    constexpr double kStripBytes = 64.0 * 1024;
    const double site_bytes = static_cast<double>(complex_bytes) * s.orbitals * r;
    return std::max(s.site_reach + 1, static_cast<int>(kStripBytes / site_bytes));
}

template <class T>
void two_steps_wide(const WideStencil2D& s, T* x, T* y, int r, const AugmentedOps& ops, DotSums* first,
                    DotSums* second, int strip_sites)
{
    TOPOKPM_REQUIRE(static_cast<int>(s.rows.size()) == s.orbitals, "two_steps_wide: ", s.rows.size(),
                    " row tables for ", s.orbitals, " orbitals");
    if (s.real) return dispatch<T, true>(s, x, y, r, ops, first, second, strip_sites);
    dispatch<T, false>(s, x, y, r, ops, first, second, strip_sites);
}

template void two_steps_wide<double>(const WideStencil2D&, double*, double*, int, const AugmentedOps&, DotSums*,
                                     DotSums*, int);
template void two_steps_wide<float>(const WideStencil2D&, float*, float*, int, const AugmentedOps&, DotSums*, DotSums*,
                                    int);

}  // namespace topokpm::numerics::kernels::cpu

namespace topokpm::numerics {

bool cpu_stencil_two_steps_at(int r, Precision)
{
    return r > 1 && kernels::cpu::two_steps_wide_offered(r);  // the same widths in both precisions
}

}  // namespace topokpm::numerics
