// Two KPM steps per pass over memory at block widths R > 1 for 2-D stencils (graphene): strips
// of lattice lines, a wavefront over lines per strip (the contract and the schedule:
// numerics/cpu/stencil_two_step_wide.hpp).
//
// A row's R complex values are R / 4 whole 512-bit vectors of complex doubles. The row is one
// chain per vector that starts from beta y (beta = -1, the KPM step: -y, folded into the first
// FMA as a multiply-subtract; beta = 0: zero, y never read) and adds scale v x per entry and
// scale (V - shift) x for the potential, with scale folded into the couplings once per call:
// 4 FMAs per vector for graphene's three real couplings, where scale (acc + (V - shift) x) +
// beta y took 6 (docs/performance.md, "branch s27-r16"). Complex couplings use
// complex_block_simd.hpp's split (a += Re v x, b += Im v x, combined once). The dots run on
// the same vectors (row_epilogue.hpp's DotLanes rule). Rows whose site has every neighbour
// inside its line (sites site_reach .. sites - site_reach - 1) use relative offsets; the
// others wrap or drop per entry.
#include "numerics/cpu/stencil_two_step_wide.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

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
inline simd::v8d splat(double w)
{
    return simd::v8d{w, w, w, w, w, w, w, w};
}

/// (re, im) pairs swapped, times (-1, +1): i * b for b = (re, im) pairs.
inline simd::v8d times_i(simd::v8d b)
{
    const simd::v8d s = __builtin_shufflevector(b, b, 1, 0, 3, 2, 5, 4, 7, 6);
    return s * simd::v8d{-1, 1, -1, 1, -1, 1, -1, 1};
}

/// How a row's chain starts (the old y's term): beta = 0 (zero; y is never read), beta = -1
/// (the KPM step: -y, which the first FMA takes as a multiply-subtract) or any other beta
/// (beta y). -1 y is -y exactly, so the two nonzero forms give the same values.
enum class BetaForm { Zero, MinusOne, General };

template <int R, bool Real>
class WideSteps {
public:
    using T = double;
    using V = simd::v8d;
    static constexpr int kLanes = 8;  // doubles per vector
    static constexpr int NV = 2 * R / kLanes;
    static_assert(NV >= 1 && 2 * R % kLanes == 0, "whole vectors per row");

    /// The couplings are stored times ops.scale (the chain adds scale v x per entry).
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
                t.vr.push_back(scale_ * e.re);
                t.vi.push_back(scale_ * e.im);
            }
            max_len_ = std::max(max_len_, static_cast<int>(t.sel.size()));
            tables_.push_back(std::move(t));
        }
    }

    /// Per thread and step: the dots of one step's rows per lane of the row's vectors,
    /// sxx = x x, syx = y x, syxs = y swap(x) (row_epilogue.hpp's DotLanes rule: no shuffle
    /// per row), folded into the per-column xx, yr, yi by fold().
    struct Dots {
        double xx[R] = {}, yr[R] = {}, yi[R] = {};
        V sxx[NV] = {}, syx[NV] = {}, syxs[NV] = {};
        void fold()
        {
            for (int c = 0; c < R; ++c) {
                    const int v = c / 4, l = 2 * (c % 4);
                    xx[c] += sxx[v][l] + sxx[v][l + 1];
                    yr[c] += syx[v][l] + syx[v][l + 1];
                    yi[c] += syxs[v][l] - syxs[v][l + 1];
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
        // to y (a double store may alias a vector of doubles).
        Lanes l;
        for (int v = 0; v < NV; ++v) {
            l.xx[v] = d.sxx[v];
            l.yx[v] = d.syx[v];
            l.yxs[v] = d.syxs[v];
        }
        for (int z = z0; z < std::min(z1, ia); ++z) site<false>(xl, in, out, line, z, nb, want_dots, l);
        if (ie > ia) {
            if (beta_ == 0.0) interior_len<BetaForm::Zero, false>(xl, in, out, line, ia, ie, want_dots, l);
            else if (beta_ != -1.0) interior_len<BetaForm::General, false>(xl, in, out, line, ia, ie, want_dots, l);
            else if (ahead) interior_len<BetaForm::MinusOne, true>(xl, in, out, line, ia, ie, want_dots, l);
            else interior_len<BetaForm::MinusOne, false>(xl, in, out, line, ia, ie, want_dots, l);
        }
        for (int z = std::max(z0, std::max(ia, ie)); z < z1; ++z) site<false>(xl, in, out, line, z, nb, want_dots, l);
        for (int v = 0; v < NV; ++v) {
            d.sxx[v] = l.xx[v];
            d.syx[v] = l.yx[v];
            d.syxs[v] = l.yxs[v];
        }
    }

private:
    static constexpr int kMaxOrbitals = 4;  // interior<>'s per-call tables (graphene: 2)
    static constexpr std::ptrdiff_t kPrefetchBytes = 4096;  // step A's prefetch distance (docs/performance.md, "branch s27-r16")

public:
    /// Blocks x + y above this many bytes come from memory, and step A prefetches (below,
    /// served by the L3, the prefetches only cost load slots). A constant, not the cache size
    /// at run time: the Zen 5 core's L3 is 32 MiB, but this guest's sysconf / hwloc report the
    /// whole package's (docs/performance.md, "branch s27-r16").
    static constexpr double kPrefetchAboveBytes = 24.0 * 1024 * 1024;

private:

    struct Lanes {
        V xx[NV], yx[NV], yxs[NV];
    };

    struct Table {
        std::vector<int> sel;
        std::vector<std::ptrdiff_t> off;  // doubles from the row's own position in its line
        std::vector<T> vr, vi;            // scale v
    };

    /// The chain's start: beta y, or zero (beta = 0: y is never read).
    template <BetaForm B>
    __attribute__((always_inline)) static inline void start_row(V (&a)[NV], const T* __restrict yo, V bv)
    {
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
            if constexpr (B == BetaForm::Zero) a[v] = V{};
            else if constexpr (B == BetaForm::MinusOne) a[v] = -vload<V>(yo + kLanes * v);
            else a[v] = bv * vload<V>(yo + kLanes * v);
        }
    }

    /// The row's end, shared by the table walk (site) and the fixed-length path (interior):
    /// y = a + dv x with a = beta y + sum scale v x (and b the imaginary couplings' sums),
    /// dv = scale (V - shift), and the dot lanes.
    __attribute__((always_inline)) static inline void finish_row(V (&a)[NV], const V (&b)[NV], const T* __restrict xo,
                                                                 T* __restrict yo, V dv, bool want_dots, Lanes& d)
    {
        if constexpr (!Real)
            for (int v = 0; v < NV; ++v) a[v] += times_i(b[v]);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) {
            const V xv = vload<V>(xo + kLanes * v);
            const V yv = a[v] + dv * xv;
            vstore(yo + kLanes * v, yv);
            if (want_dots) {
                const V xs = __builtin_shufflevector(xv, xv, 1, 0, 3, 2, 5, 4, 7, 6);
                d.xx[v] += xv * xv;
                d.yx[v] += yv * xv;
                d.yxs[v] += yv * xs;
            }
        }
    }

    template <BetaForm B, bool Ahead>
    void interior_len(const T* const* xl, const T* in, T* out, int line, int za, int zb, bool want_dots, Lanes& d) const
    {
        switch (s_.orbitals <= kMaxOrbitals ? max_len_ : 0) {
        case 1: return interior<1, B, Ahead>(xl, in, out, line, za, zb, want_dots, d);
        case 2: return interior<2, B, Ahead>(xl, in, out, line, za, zb, want_dots, d);
        case 3: return interior<3, B, Ahead>(xl, in, out, line, za, zb, want_dots, d);
        case 4: return interior<4, B, Ahead>(xl, in, out, line, za, zb, want_dots, d);
        case 5: return interior<5, B, Ahead>(xl, in, out, line, za, zb, want_dots, d);
        case 6: return interior<6, B, Ahead>(xl, in, out, line, za, zb, want_dots, d);
        default:
            for (int z = za; z < zb; ++z) site<true>(xl, in, out, line, z, s_.orbitals, want_dots, d);
        }
    }

    /// site<true> on sites [za, zb) of `line` (all interior) with LEN entries per orbital row:
    /// the entries' positions resolved once per call (a missing line's entries and the
    /// shorter rows' tails become zero-valued entries on the row itself, which add exact
    /// zeros), so a row is LEN fixed loads and FMAs per vector with no table lookups or
    /// checks, and the scalars live in registers (as members they were reloaded after every
    /// store to y). The same operations in the same order as site<true>.
    template <int LEN, BetaForm B, bool Ahead>
    void interior(const T* const* xl, const T* in, T* out, int line, int za, int zb, bool want_dots, Lanes& d) const
    {
        const int nb = s_.orbitals;
        const std::ptrdiff_t own = line_vals_ * line;  // this line's first value
        const T* base[kMaxOrbitals][LEN];
        T vr[kMaxOrbitals][LEN], vi[kMaxOrbitals][LEN];
        for (int o = 0; o < nb; ++o) {
            const Table& t = tables_[static_cast<size_t>(o)];
            int n = 0;
            for (size_t k = 0; k < t.sel.size(); ++k) {
                const T* b = xl[t.sel[k]];
                if (b == nullptr) continue;  // past an open boundary
                base[o][n] = b + 2 * R * o + t.off[k];
                vr[o][n] = t.vr[k];
                vi[o][n] = t.vi[k];
                ++n;
            }
            for (; n < LEN; ++n) {
                base[o][n] = in + own + 2 * R * o;
                vr[o][n] = 0;
                vi[o][n] = 0;
            }
        }
        const double* const potential = s_.potential;
        const bool per_row = s_.per_row;
        const double scale = scale_, shift = shift_;
        const V bv = splat(beta_);
        const std::ptrdiff_t site_vals = 2 * static_cast<std::ptrdiff_t>(R) * nb;
        // Step A's data from memory, kPrefetchBytes ahead: the next line of `in` (its rows
        // are first read here, half of them as neighbours: a strided pattern the hardware
        // prefetchers did not keep up with) and this line of `out` (beta y).
        const std::ptrdiff_t ahead_vals = site_vals * std::max<std::ptrdiff_t>(1, kPrefetchBytes / (8 * site_vals));
        const T* const next = xl[2] != nullptr ? xl[2] + ahead_vals : in + own;  // no next line: this one
        T* const out_ahead = out + own + ahead_vals;
        for (int z = za; z < zb; ++z) {
            const std::ptrdiff_t zo = site_vals * z;
            const std::ptrdiff_t site_g = static_cast<std::ptrdiff_t>(line) * s_.sites + z;
            if constexpr (Ahead)
                for (std::ptrdiff_t c = 0; c < site_vals; c += kLanes) {
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
                    const V wr = splat(vr[o][k]);
#pragma GCC unroll 8
                    for (int v = 0; v < NV; ++v) a[v] += wr * vload<V>(p + kLanes * v);
                    if constexpr (!Real) {
                        const V wi = splat(vi[o][k]);
#pragma GCC unroll 8
                        for (int v = 0; v < NV; ++v) b[v] += wi * vload<V>(p + kLanes * v);
                    }
                }
                const double pot = per_row ? potential[row] : potential[site_g];
                finish_row(a, b, xo, yo, splat(scale * (pot - shift)), want_dots, d);
            }
        }
    }

    template <bool Interior>
    __attribute__((always_inline)) inline void site(const T* const* xl, const T* in, T* out, int line, int z, int nb,
                                                    bool want_dots, Lanes& d) const
    {
        const std::ptrdiff_t site_g = static_cast<std::ptrdiff_t>(line) * s_.sites + z;
        const V bv = splat(beta_);
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
                const V vr = splat(t.vr[static_cast<size_t>(k)]);
#pragma GCC unroll 8
                for (int v = 0; v < NV; ++v) a[v] += vr * vload<V>(p + kLanes * v);
                if constexpr (!Real) {
                    const V vi = splat(t.vi[static_cast<size_t>(k)]);
#pragma GCC unroll 8
                    for (int v = 0; v < NV; ++v) b[v] += vi * vload<V>(p + kLanes * v);
                }
            }
            const double pot = s_.per_row ? s_.potential[row] : s_.potential[site_g];
            finish_row(a, b, xo, yo, splat(scale_ * (pot - shift_)), want_dots, d);
        }
    }

    const WideStencil2D& s_;
    double scale_ = 1.0, shift_ = 0.0, beta_ = 0.0;
    std::ptrdiff_t line_vals_ = 0;  // T values per line
    std::vector<Table> tables_;
    int max_len_ = 0;  // entries of the longest orbital row
};

template <int R, bool Real>
void run(const WideStencil2D& s, double* x, double* y, const AugmentedOps& ops, DotSums* first, DotSums* second, int strip)
{
    using Steps = WideSteps<R, Real>;
    const Steps steps(s, ops);
    const bool want_dots = first != nullptr;
    const bool ahead = 2.0 * 16 * R * s.orbitals * static_cast<double>(s.sites) * s.lines > Steps::kPrefetchAboveBytes;
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

template <bool Real>
void dispatch(const WideStencil2D& s, double* x, double* y, int r, const AugmentedOps& ops, DotSums* first, DotSums* second,
              int strip)
{
    switch (r) {
    case 4: return run<4, Real>(s, x, y, ops, first, second, strip);
    case 8: return run<8, Real>(s, x, y, ops, first, second, strip);
    case 16: return run<16, Real>(s, x, y, ops, first, second, strip);
    case 32: return run<32, Real>(s, x, y, ops, first, second, strip);
    default: break;
    }
    TOPOKPM_REQUIRE(false, "two_steps_wide: no kernel for width ", r);
}

}  // namespace

bool two_steps_wide_offered(int r, bool single)
{
    return !single && (r == 4 || r == 8 || r == 16 || r == 32);
}

int two_steps_wide_strip(const WideStencil2D& s, int r, int complex_bytes, int requested)
{
    if (requested >= 1) return requested;
    constexpr double kStripBytes = 64.0 * 1024;
    const double site_bytes = static_cast<double>(complex_bytes) * s.orbitals * r;
    return std::max(s.site_reach + 1, static_cast<int>(kStripBytes / site_bytes));
}

void two_steps_wide(const WideStencil2D& s, double* x, double* y, int r, const AugmentedOps& ops, DotSums* first,
                    DotSums* second, int strip_sites)
{
    TOPOKPM_REQUIRE(static_cast<int>(s.rows.size()) == s.orbitals, "two_steps_wide: ", s.rows.size(),
                    " row tables for ", s.orbitals, " orbitals");
    if (s.real) return dispatch<true>(s, x, y, r, ops, first, second, strip_sites);
    dispatch<false>(s, x, y, r, ops, first, second, strip_sites);
}

}  // namespace topokpm::numerics::kernels::cpu

namespace topokpm::numerics {

bool cpu_stencil_two_steps_at(int r, Precision precision)
{
    return r > 1 && kernels::cpu::two_steps_wide_offered(r, precision == Precision::Single);
}

}  // namespace topokpm::numerics
