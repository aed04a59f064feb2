#pragma once
/// @file row_epilogue.hpp
/// What every CPU augmented-SpMMV kernel (SELL-C-σ, the matrix-free stencil) does after a
/// row's sums are known, and how its per-thread dot sums become the DotSums:
///   y = scale (acc - shift x) + beta y      (beta == 0: y is never read; it may be NaN)
///   <x|x> += |x|^2,  <y|x> += conj(y) x      (per column, on the new y)
/// The dot sums stay on each thread's stack during the sweep (summing into a shared array
/// put both threads on one cache line: R = 1 at 9 GB/s instead of 25) and are written to
/// `partial` once per thread, then added in thread order (reproducible for a fixed count).

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "numerics/base/operator.hpp"
#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"

namespace topokpm::numerics::kernels::cpu {

/// Row epilogue on interleaved (re, im) values of type T (double, or float for
/// --precision single). R > 0: compile-time width; R = 0: r. The arithmetic is double in
/// both cases: a float row's y is computed in double and rounded once when stored, and its
/// dots are summed in double from the stored float values (docs/performance.md, "Single
/// precision"); for T = double the casts are no-ops. (Float rows of the registered widths
/// R >= 2 take FloatRowEpilogue below; this serves the other widths.)
template <int R, class T>
inline void finish_row(const T* __restrict as, const T* __restrict xo, T* __restrict yo, int r, double scale,
                       double shift, double beta, bool want_dots, double* __restrict txx, double* __restrict tyr,
                       double* __restrict tyi)
{
    const int w = R > 0 ? R : r;
    if (beta == 0.0) {
#pragma omp simd
        for (int j = 0; j < 2 * w; ++j)
            yo[j] = static_cast<T>(scale * (static_cast<double>(as[j]) - shift * static_cast<double>(xo[j])));
    } else {
#pragma omp simd
        for (int j = 0; j < 2 * w; ++j)
            yo[j] = static_cast<T>(scale * (static_cast<double>(as[j]) - shift * static_cast<double>(xo[j])) +
                                   beta * static_cast<double>(yo[j]));
    }
    if (want_dots) {
#pragma omp simd
        for (int j = 0; j < w; ++j) {
            const double xre = xo[2 * j], xim = xo[2 * j + 1];
            const double yre = yo[2 * j], yim = yo[2 * j + 1];
            txx[j] += xre * xre + xim * xim;
            tyr[j] += yre * xre + yim * xim;  // conj(y) x
            tyi[j] += yre * xim - yim * xre;
        }
    }
}

/// finish_row (double) with AugmentedOps' accumulation of the row: acc += c_old y_old + c_x x
/// before y is overwritten, acc += c_new y after (the row's acc, x and y stay in L1 between).
template <int R>
inline void finish_row_accumulate(const double* __restrict as, const double* __restrict xo, double* __restrict yo,
                                  int r, double scale, double shift, double beta, bool want_dots,
                                  double* __restrict txx, double* __restrict tyr, double* __restrict tyi,
                                  double* __restrict ao, double c_old, double c_x, double c_new)
{
    const int w = R > 0 ? R : r;
    if (beta != 0.0) {  // beta == 0: y is never read (c_old is 0 then)
#pragma omp simd
        for (int j = 0; j < 2 * w; ++j) ao[j] += c_old * yo[j] + c_x * xo[j];
    } else {
#pragma omp simd
        for (int j = 0; j < 2 * w; ++j) ao[j] += c_x * xo[j];
    }
    finish_row<R>(as, xo, yo, r, scale, shift, beta, want_dots, txx, tyr, tyi);
#pragma omp simd
    for (int j = 0; j < 2 * w; ++j) ao[j] += c_new * yo[j];
}

/// Dot sums of the vector epilogue below, per double lane of a vector of 4 complex values:
///     xx += x x,   yx += y x,   yxs += y swap(x)   (swap: re and im exchanged)
/// so that for the lanes (2l, 2l+1) of one complex value |x|^2 = xx[2l] + xx[2l+1],
/// Re conj(y) x = yx[2l] + yx[2l+1], Im conj(y) x = yxs[2l] - yxs[2l+1]. Kept in registers
/// across a thread's whole sweep: no shuffle and no horizontal sum per row.
struct DotLanes {
    simd::v8d xx{}, yx{}, yxs{};
};

/// 4 complex values of y (one vector; for R < 4 they span 4 / R consecutive rows) from
/// their sums `av` (in double lanes, interleaved re, im):
///     y = scale (a + d x) + beta y,     dv = d per complex value, repeated for re and im
/// (SELL: d = -shift; the stencil: d = V_row - shift), dots into `lanes` from the stored y.
/// T = float: computed in double and rounded once when stored, as finish_row.
template <class T>
__attribute__((always_inline)) inline void finish_vector_sums(simd::v8d av, const T* __restrict xo,
                                                              T* __restrict yo, simd::v8d sv, simd::v8d dv,
                                                              double beta, bool want_dots, DotLanes& lanes)
{
    using simd::v8d;
    v8d xv, yv;
    if constexpr (std::is_same_v<T, double>) {
        xv = simd::load<v8d>(xo);
        yv = sv * (av + dv * xv);
        if (beta != 0.0) yv += beta * simd::load<v8d>(yo);  // beta == 0: y is never read
        simd::store(yo, yv);
    } else {
        simd::v8f xf, yf;
        std::memcpy(&xf, xo, sizeof xf);
        xv = simd::widen(xf);
        yv = sv * (av + dv * xv);
        if (beta != 0.0) {
            std::memcpy(&yf, yo, sizeof yf);
            yv += beta * simd::widen(yf);
        }
        yf = simd::narrow(yv);  // the one rounding to float
        std::memcpy(yo, &yf, sizeof yf);
        yv = simd::widen(yf);  // the dots see the stored value
    }
    if (want_dots) {
        const v8d xs = __builtin_shufflevector(xv, xv, 1, 0, 3, 2, 5, 4, 7, 6);
        lanes.xx += xv * xv;
        lanes.yx += yv * xv;
        lanes.yxs += yv * xs;
    }
}

/// finish_vector_sums with the sums stored at `a` (T values, as the SELL and grouped
/// stencil kernels leave them).
template <class T>
__attribute__((always_inline)) inline void finish_vector(const T* __restrict a, const T* __restrict xo,
                                                         T* __restrict yo, simd::v8d sv, simd::v8d dv, double beta,
                                                         bool want_dots, DotLanes& lanes)
{
    simd::v8d av;
    if constexpr (std::is_same_v<T, double>) {
        av = simd::load<simd::v8d>(a);
    } else {
        simd::v8f af;
        std::memcpy(&af, a, sizeof af);
        av = simd::widen(af);
    }
    finish_vector_sums(av, xo, yo, sv, dv, beta, want_dots, lanes);
}

#if defined(__AVX512F__)
/// finish_vector for 4 rows anywhere (R = 1, double: a SELL group whose rows the σ sort
/// took apart): x and y gathered with simd::gather4, y scattered back. The per-row
/// finish_row it replaces took about as long as the group's sums.
__attribute__((always_inline)) inline void finish_vector_rows(const double* __restrict a, const double* __restrict x,
                                                              double* __restrict y, const std::ptrdiff_t (&rows)[4],
                                                              simd::v8d sv, simd::v8d dv, double beta, bool want_dots,
                                                              DotLanes& lanes)
{
    using simd::v8d;
    const v8d xv = simd::gather4(x, rows[0], rows[1], rows[2], rows[3]);
    v8d yv = sv * (simd::load<v8d>(a) + dv * xv);
    if (beta != 0.0) yv += beta * simd::gather4(y, rows[0], rows[1], rows[2], rows[3]);  // beta == 0: y is never read
    const simd::v2d y0 = __builtin_shufflevector(yv, yv, 0, 1), y1 = __builtin_shufflevector(yv, yv, 2, 3);
    const simd::v2d y2 = __builtin_shufflevector(yv, yv, 4, 5), y3 = __builtin_shufflevector(yv, yv, 6, 7);
    std::memcpy(y + 2 * rows[0], &y0, sizeof y0);
    std::memcpy(y + 2 * rows[1], &y1, sizeof y1);
    std::memcpy(y + 2 * rows[2], &y2, sizeof y2);
    std::memcpy(y + 2 * rows[3], &y3, sizeof y3);
    if (want_dots) {
        const v8d xs = __builtin_shufflevector(xv, xv, 1, 0, 3, 2, 5, 4, 7, 6);
        lanes.xx += xv * xv;
        lanes.yx += yv * xv;
        lanes.yxs += yv * xs;
    }
}
#endif

/// A constant v of the float epilogue (scale, a uniform V - shift), dithered over the rows:
/// row r takes at(r) = v[r % 16], the float just below or just above v, k of every 16 rows
/// rounded up, spread evenly, so that the mean over 16 consecutive rows is v to 1/32 of a
/// float ulp. Rounding to the nearest float instead would scale (shift) the whole spectrum
/// by up to half an ulp, an error that grows like the moment index (graphene 256^2, M = 4096:
/// |mu_single - mu_double| up to 6e-6 instead of 3e-8, docs/performance.md); dithered, the
/// rows' errors cancel to first order for any state that is smooth on 16 rows.
struct DitheredFloat {
    float v[16];
    float at(std::int64_t row) const { return v[row & 15]; }
};
inline DitheredFloat dithered_float(double x)
{
    DitheredFloat d;
    float down = static_cast<float>(x);
    if (static_cast<double>(down) == x) {  // exact (graphene: V - shift = 0)
        for (float& w : d.v) w = down;
        return d;
    }
    if (static_cast<double>(down) > x) down = std::nextafter(down, -std::numeric_limits<float>::infinity());
    const float up = std::nextafter(down, std::numeric_limits<float>::infinity());
    const double frac = (x - down) / (static_cast<double>(up) - down);
    const int k = static_cast<int>(std::lround(16 * frac));  // rows rounded up
    for (int j = 0; j < 16; ++j) d.v[j] = (j + 1) * k / 16 > j * k / 16 ? up : down;
    return d;
}

/// The row epilogue of --precision single at R = 2, 4 and multiples of 8 (rows of R complex
/// floats, interleaved re, im), in float as the R = 1 shifted-load form of the stencil:
///     y = s (a + d x) + fl(beta) y0       (float fused multiply-adds, no conversion per row)
/// s and a uniform d dithered over the rows (DitheredFloat), a per-row d rounded to the
/// nearest float. Dots per float lane (xx += x x, yx += y x, yxs += y swap(x), as DotLanes)
/// over runs of at most kSingleDotRun rows, then added to double lanes: at most
/// (kSingleDotRun + 1) eps_f sum |y||x| per dot beyond the double summation's bound.
/// One per thread; add_to() once at the end of its sweep.
template <int R>
class FloatRowEpilogue {
    static_assert(R == 2 || R == 4 || R % 8 == 0, "whole vectors of 2, 4 or 8 complex floats");
    static constexpr int kF = 2 * R;              // floats per row
    static constexpr int kL = kF < 16 ? kF : 16;  // floats per vector
    static constexpr int kV = kF / kL;            // vectors per row
    using V = std::conditional_t<kL == 4, simd::v4f, std::conditional_t<kL == 8, simd::v8f, simd::v16f>>;
    static_assert(sizeof(V) == 4 * kL, "one vector of kL floats");

    template <std::size_t... I>
    static V swapped(V v, std::index_sequence<I...>)
    {
        return __builtin_shufflevector(v, v, static_cast<int>(I ^ 1u)...);
    }
    static V load(const float* p)
    {
        V v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }

public:
    /// Row y (R complex floats) from its sums a and x; s, d: this row's scale and V - shift.
    __attribute__((always_inline)) inline void row(const float* __restrict a, const float* __restrict x,
                                                   float* __restrict y, float s, float d, float beta, bool read_y,
                                                   bool want_dots)
    {
        const V sv = V{} + s, dv = V{} + d, bv = V{} + beta;
#pragma GCC unroll 4
        for (int v = 0; v < kV; ++v) {
            const V xv = load(x + kL * v);
            const V old = read_y ? bv * load(y + kL * v) : V{};  // beta == 0: y is never read
            const V yv = sv * (load(a + kL * v) + dv * xv) + old;
            std::memcpy(y + kL * v, &yv, sizeof yv);
            if (want_dots) {
                fxx_[v] += xv * xv;
                fyx_[v] += yv * xv;
                fyxs_[v] += yv * swapped(xv, std::make_index_sequence<kL>{});
            }
        }
        if (want_dots && ++rows_ == kSingleDotRun) flush();
    }

    /// The dot sums per column into txx, tyr, tyi (added).
    void add_to(double* txx, double* tyr, double* tyi)
    {
        flush();
        for (int c = 0; c < R; ++c) {
            txx[c] += dxx_[2 * c] + dxx_[2 * c + 1];
            tyr[c] += dyx_[2 * c] + dyx_[2 * c + 1];
            tyi[c] += dyxs_[2 * c] - dyxs_[2 * c + 1];
        }
    }

private:
    /// The float run sums into the double lanes (once per kSingleDotRun rows).
    void flush()
    {
        auto widen_add = [](double* d, V (&f)[kV]) {
            alignas(64) float lanes[kF];
            std::memcpy(lanes, f, sizeof lanes);
#pragma omp simd
            for (int j = 0; j < kF; ++j) d[j] += lanes[j];
            for (V& v : f) v = V{};
        };
        widen_add(dxx_, fxx_);
        widen_add(dyx_, fyx_);
        widen_add(dyxs_, fyxs_);
        rows_ = 0;
    }

    V fxx_[kV] = {}, fyx_[kV] = {}, fyxs_[kV] = {};
    alignas(64) double dxx_[kF] = {}, dyx_[kF] = {}, dyxs_[kF] = {};
    int rows_ = 0;
};

/// Adds the lane sums of `lanes` to the per-column sums (R = 1, 2, 4: lane pair l of a
/// vector holds column l % R).
template <int R>
inline void add_dot_lanes(const DotLanes& lanes, double* txx, double* tyr, double* tyi)
{
    static_assert(R == 1 || R == 2 || R == 4, "4 complex lanes per vector");
    for (int l = 0; l < 4; ++l) {
        txx[l % R] += lanes.xx[2 * l] + lanes.xx[2 * l + 1];
        tyr[l % R] += lanes.yx[2 * l] + lanes.yx[2 * l + 1];
        tyi[l % R] += lanes.yxs[2 * l] - lanes.yxs[2 * l + 1];
    }
}

/// The calling thread's dot sums into its slot of `partial` (3 r doubles per thread).
inline void store_thread_dots(std::vector<double>& partial, int r, const double* txx, const double* tyr,
                              const double* tyi)
{
    double* out = partial.data() + static_cast<size_t>(omp_get_thread_num()) * 3 * r;
    for (int j = 0; j < r; ++j) {
        out[j] = txx[j];
        out[r + j] = tyr[j];
        out[2 * r + j] = tyi[j];
    }
}

/// dots := the sum of the first `num_threads` slots of `partial`, in thread order.
inline void collect_dots(const std::vector<double>& partial, int num_threads, int r, DotSums* dots)
{
    dots->reset(r);
    for (int t = 0; t < num_threads; ++t) {
        const double* p = partial.data() + static_cast<size_t>(t) * 3 * r;
        for (int j = 0; j < r; ++j) {
            dots->xx[j] += p[j];
            dots->yx[j] += complex_type(p[r + j], p[2 * r + j]);
        }
    }
}

}  // namespace topokpm::numerics::kernels::cpu
