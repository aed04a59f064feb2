// One step per pass of the CPU stencil operator at every block width: the tiles, the register
// groups on the shared tables or on checked ones, the window and site forms at R = 1, and the
// row epilogues. The design: stencil_operator.hpp; the group products and the site form it
// runs: stencil_group_products.hpp, stencil_site_form.hpp.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/cpu/row_epilogue.hpp"
#include "numerics/cpu/stencil_group_products.hpp"
#include "numerics/cpu/stencil_operator.hpp"
#include "numerics/cpu/stencil_shift_form.hpp"
#include "numerics/cpu/stencil_site_form.hpp"
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
    // (site_sums_r2, site_sums_grouped), each column summed as in the R = 1 form.
    // Single, R = 8: the same tables (site_sums_grouped in float).
    static constexpr bool kSiteForm = kWindowForm && B == 4 && (R == 1 || R == 8 || (!kSingle && (R == 2 || R == 4)));
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
    // The site form in double and at R = 8 in float: software prefetch of x one x-plane ahead
    // (the plane the sweep reads first; at R > 1 also the plane behind and the next y-column)
    // and of y, site_pf values of T ahead (0: none; StencilTuning::site_prefetch_bytes).
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
    if ((!kSingle || R > 1) && site_form) {
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
    /// The whole z-columns (cx, cy), ya <= cy < yb (two_steps_planes).
    void columns(int cx, int ya, int yb)
    {
        for (int cy = ya; cy < yb; ++cy) column(cx, cy, 0, p.nz);
    }
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
    /// The site form at R > 1, before summing the sites [site, site + lines 64 B / (8 R T))
    /// (x0 = x at site): prefetch their lines p.site_pf values ahead in x of the x-plane ahead,
    /// the plane behind and the next y-column, and in y (ti 128x128x40, two steps per pass at
    /// R = 8: 1.04-1.14x the plane ahead and y only, 2026-11-29). Nothing when site_pf is 0.
    __attribute__((always_inline)) void prefetch_wide_sites(const T* x0, global_index site, int lines) const
    {
        if (p.site_pf <= 0) return;
        constexpr int kLine = 64 / sizeof(T);
        const std::ptrdiff_t column = std::ptrdiff_t(8) * R * p.nz;
        for (int l = 0; l < lines; ++l) {
            const std::ptrdiff_t k = p.site_pf + kLine * l;
            __builtin_prefetch(x0 + p.site_pf_plane + k, 0, 3);
            __builtin_prefetch(x0 - p.site_pf_plane + k, 0, 3);
            __builtin_prefetch(x0 + column + k, 0, 3);
            __builtin_prefetch(p.y + 8 * R * site + k, 1, 3);
        }
    }
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
        const BlockStencil& st = p.op.s_;
        // A field: the row's site in the stencil's own (x, y), for its entries' phases (the
        // divisions only then: without a field this path runs every boundary group).
        const bool field = st.field.active();
        const int fy = field ? static_cast<int>((site / st.nz) % st.ny) : 0;
        const int fx = field ? static_cast<int>(site / (global_index(st.nz) * st.ny)) : 0;
        for (int k = 0; k < w; ++k) {
            const size_t i = static_cast<size_t>(k) * G + g;
            std::ptrdiff_t col = g;  // padding / dropped: own row, value 0
            T vr = T(0), vi = T(0);
            if (k < len) {
                const RowEntry& e = ent[k];
                const global_index ns = e.term < 0 ? site : nbr[e.term];
                if (ns >= 0) {
                    col = static_cast<std::ptrdiff_t>(global_index(nb) * ns + e.b - r0);
                    complex_type v = e.v;
                    if (field) {
                        const int dy = e.term < 0 ? 0 : p.op.term_dy_[static_cast<size_t>(e.term)];
                        v = st.phased(v, e.term + 1, o, e.b, fx, fy, dy);
                    }
                    vr = static_cast<T>(v.real());
                    vi = static_cast<T>(v.imag());
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
                prefetch_wide_sites(x0, site, R * N);
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
                    site_sums_grouped<double, R, N>(c, x0, a);
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
    } else if constexpr (std::is_same_v<T, float> && R == 8) {
        // Single, R = 8: a site's row is one vector of 16 floats; the
        // grouped sums in float, then the float epilogue of the row-group path (finish_row).
        using simd::v16f;
        const SiteForm<float>& f = p.sites;
        const int ccx = f.cls[0][static_cast<size_t>(cx)], ccy = f.cls[1][static_cast<size_t>(cy)];
        const int* zcls = f.cls[2].data();
        for (int z = za; z < zb; ++z) {
            const SiteForm<float>::Class& c = f.at(ccx, ccy, zcls[z]);
            const global_index site = col_site0 + z;
            const float* x0 = p.x + 8 * R * site;
            prefetch_wide_sites(x0, site, R / 2);
            v16f a[1][4][1];
            site_sums_grouped<float, R, 1>(c, x0, a);
#pragma GCC unroll 4
            for (int o = 0; o < 4; ++o) {
                const global_index row = 4 * site + o;
                alignas(64) float sums[2 * R];
                std::memcpy(sums, &a[0][o][0], sizeof sums);
                const float d = p.uniform ? p.d_dither.at(row)
                                          : static_cast<float>((p.per_row ? p.pot[row] : p.pot[site]) - p.shift);
                float_rows.row(sums, p.x + 2 * R * row, p.y + 2 * R * row, p.s_dither.at(row), d, p.beta_f,
                               p.beta != 0.0, p.want_dots);
            }
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

bool CpuStencilOperator::planes_offered(int r) const
{
    if (extent_[0] == 1 || nb_ != 4 || tuning_.tblock_lines == 0) return false;
    const bool single = precision_ == Precision::Single;  // single: R = 1, 8; double: R = 1, 2, 4, 8
    if (r != 1 && !((r == 8 || (!single && (r == 2 || r == 4))) && tuning_.wide_site_form)) return false;
    if (!(single ? site_single_.ok : site_double_.ok)) return false;
    for (const auto& d : offsets_)
        if (std::abs(d[0]) > 1 || std::abs(d[1]) > 1) return false;
    return true;
}

int CpuStencilOperator::planes_strip(int r, int complex_bytes) const
{
    if (tuning_.tblock_strip_sites > 0) return tuning_.tblock_strip_sites;
    // About 160 KiB of one vector per x-plane strip (ti 128x128x40 on 2 cores, 2 MiB L2 each,
    // 2026-11-28: 8 columns at R = 8 1.10x the one-step sweep, 3 and 16 columns 1.07x and
    // 1.00x; 16 at R = 4 1.09x; 25-64 at R = 1 1.07-1.09x, 128 0.96x; docs/performance.md).
    const double column_bytes = static_cast<double>(complex_bytes) * nb_ * extent_[2] * r;
    return std::max(1, static_cast<int>(160.0 * 1024.0 / column_bytes));
}

template <class T>
void CpuStencilOperator::two_steps_planes_run(T* x, T* y, int r, const AugmentedOps& ops, DotSums* first,
                                              DotSums* second) const
{
    if constexpr (std::is_same_v<T, double>) {
        switch (r) {
        case 1: return two_steps_planes<T, 1, 4, false>(x, y, r, ops, first, second);
        case 2: return two_steps_planes<T, 2, 4, false>(x, y, r, ops, first, second);
        case 4: return two_steps_planes<T, 4, 4, false>(x, y, r, ops, first, second);
        case 8: return two_steps_planes<T, 8, 4, false>(x, y, r, ops, first, second);
        default: break;
        }
    } else {
        if (r == 1) return two_steps_planes<T, 1, 4, false>(x, y, r, ops, first, second);
        if (r == 8) return two_steps_planes<T, 8, 4, false>(x, y, r, ops, first, second);
    }
    TOPOKPM_REQUIRE(false, name(), ": two steps over x-planes at R = ", r, " (planes_offered lied)");
}

template void CpuStencilOperator::two_steps_planes_run(double*, double*, int, const AugmentedOps&, DotSums*,
                                                       DotSums*) const;
template void CpuStencilOperator::two_steps_planes_run(float*, float*, int, const AugmentedOps&, DotSums*,
                                                       DotSums*) const;

template <class T, int R, int B, bool Real>
void CpuStencilOperator::two_steps_planes(T* x, T* y, int runtime_r, const AugmentedOps& ops, DotSums* first,
                                          DotSums* second) const
{
    const SweepPlan<T, R, B, Real> a(*this, x, y, runtime_r, ops, first != nullptr);   // A: y from x
    const SweepPlan<T, R, B, Real> b(*this, y, x, runtime_r, ops, second != nullptr);  // B: x from y
    const int nx = extent_[0], ny = extent_[1];
    const int strip = planes_strip(a.rr, SweepPlan<T, R, B, Real>::kComplexBytes);
    // B's columns in the strips: [y_lo, ny - 1); the others (the y-wrap's) after the barrier.
    const int y_lo = periodic_[1] && ny > 1 ? 1 : 0;
    std::vector<double> pa(static_cast<size_t>(a.max_threads) * 3 * a.rr, 0.0), pb(pa.size(), 0.0);
    int team = 1;
#pragma omp parallel num_threads(a.max_threads)
    {
#pragma omp single
        team = omp_get_num_threads();  // (the barrier at its end: every thread sees team)
        const int t = omp_get_thread_num();
        const int p0 = static_cast<int>(static_cast<long>(nx) * t / team);
        const int p1 = static_cast<int>(static_cast<long>(nx) * (t + 1) / team);
        SweepThread<T, R, B, Real> ta(a), tb(b);
        const auto in_stream = [&](int q) { return q > p0 && q < p1 - 1; };
        for (int ya = 0; ya < ny; ya += strip) {
            const int yb = std::min(ny, ya + strip);
            const int ba = std::max(ya - 1, y_lo), be = std::min(yb - 1, ny - 1);
            for (int p = p0; p < p1; ++p) {
                ta.columns(p, ya, yb);
                if (in_stream(p - 1)) tb.columns(p - 1, ba, be);
            }
        }
#pragma omp barrier
        for (int q = p0; q < p1; ++q) {
            if (!in_stream(q)) {
                tb.columns(q, 0, ny);
                continue;
            }
            if (y_lo == 1) tb.columns(q, 0, 1);
            tb.columns(q, ny - 1, ny);
        }
        ta.store_dots(pa);
        tb.store_dots(pb);
    }
    if (first != nullptr) collect_dots(pa, team, a.rr, first);
    if (second != nullptr) collect_dots(pb, team, b.rr, second);
}

}  // namespace topokpm::numerics::kernels::cpu::stencil
