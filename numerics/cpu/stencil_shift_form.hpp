#pragma once
/// @file stencil_shift_form.hpp
/// The R = 1 shifted-load run of the CPU stencil operator (ShiftTable, stencil_operator.hpp)
/// and the vector helpers of its epilogue that the site form shares: internal to numerics/cpu,
/// used by the one-step sweep (stencil_sweep.cpp) and the two-step lines
/// (stencil_two_step_lines.cpp).

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "numerics/cpu/stencil_operator.hpp"

namespace topokpm::numerics::kernels::cpu::stencil {

/// The potential term of 4 complex lanes starting at row q (q % B == 0 for a per-site
/// potential): d = V - shift per complex value, repeated over its (re, im).
template <int B>
__attribute__((always_inline)) inline simd::v8d potential_lanes(const double* pot, bool per_row, global_index q,
                                                                double shift)
{
    using simd::v8d;
    if (per_row) {
        const simd::v4d p = simd::load<simd::v4d>(pot + q);
        return __builtin_shufflevector(p, p, 0, 0, 1, 1, 2, 2, 3, 3) - shift;
    }
    if constexpr (B == 4) {
        return v8d{} + (pot[q / 4] - shift);
    } else {
        static_assert(B == 2, "B = 2 or 4");
        const double p0 = pot[q / 2] - shift, p1 = pot[q / 2 + 1] - shift;
        return v8d{p0, p0, p0, p0, p1, p1, p1, p1};
    }
}

/// One vector register of T: 4 complex doubles or 8 complex floats.
template <class T>
using VecOf = std::conditional_t<std::is_same_v<T, double>, simd::v8d, v16f>;

template <class T>
__attribute__((always_inline)) inline VecOf<T> load_vec(const T* p)
{
    VecOf<T> v;
    std::memcpy(&v, p, sizeof v);  // unaligned
    return v;
}

/// A constant v of the float epilogue dithered over the rows (kernels::cpu::dithered_float,
/// row_epilogue.hpp) as complex float lanes: row j's value at lanes 2j and 2j + 1 for
/// j < 32 (the 16-row pattern twice), so the lanes of the rows q .. q + 7 are the 16 floats
/// at at(q) (row q takes the value DitheredFloat::at(q) gives).
struct DitheredLanes {
    alignas(64) float v[64];
    explicit DitheredLanes(double value)
    {
        const kernels::cpu::DitheredFloat d = kernels::cpu::dithered_float(value);
        for (int j = 0; j < 32; ++j) v[2 * j] = v[2 * j + 1] = d.v[j % 16];
    }
    const float* at(global_index q) const { return v + 2 * (q & 15); }
};

/// Dot lanes of the float epilogue (xx += x x, yx += y x, yxs += y swap(x) per float lane),
/// each a float sum of at most kSingleDotRun products before add_to() puts it into the
/// double lanes of `lanes` and starts the next run.
struct FloatDotLanes {
    v16f xx{}, yx{}, yxs{};
    void add_to(kernels::cpu::DotLanes& lanes)
    {
        auto widen_add = [](simd::v8d& acc, v16f v) __attribute__((always_inline)) {
            acc += __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7), simd::v8d) +
                   __builtin_convertvector(__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15), simd::v8d);
        };
        widen_add(lanes.xx, xx);
        widen_add(lanes.yx, yx);
        widen_add(lanes.yxs, yxs);
        xx = yx = yxs = v16f{};
    }
};

/// The potential term of 8 complex float lanes starting at row q (q % B == 0 for a
/// per-site potential): d = fl(V - shift) per complex value, repeated over its (re, im).
template <int B>
__attribute__((always_inline)) inline v16f potential_lanes_f(const double* pot, bool per_row, global_index q,
                                                             double shift)
{
    if (per_row) {
        simd::v8d p;
        std::memcpy(&p, pot + q, sizeof p);
        const v8f d = __builtin_convertvector(p - shift, v8f);
        return __builtin_shufflevector(d, d, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    }
    constexpr int kSites = 8 / B;  // sites per vector, 2 B lanes each
    v16f d;
    for (int k = 0; k < kSites; ++k) {
        const float dk = static_cast<float>(pot[q / B + k] - shift);
        for (int l = 0; l < 2 * B; ++l) d[2 * B * k + l] = dk;
    }
    return d;
}

/// The interior rows [ra, re) of one z-column in the shifted-load form (ShiftTable), with
/// the epilogue fused: the sums never leave the registers. ra % B == 0, (re - ra) % kLanes
/// == 0, and every row of every site in [ra, re) has all its neighbours inside the box.
/// Two vectors per iteration with their own dot lanes (the dot FMAs' latency, not their
/// throughput, would bound one chain); `lanes` gets both. Not inlined: one call per column,
/// and the loop keeps its own register allocation.
/// T = float: the whole row in float, 16 lanes (8 complex rows) per vector, no conversion
/// per row: y = fl(scale) (a + fl(V - shift) x) + fl(beta) y0 in float fused multiply-adds,
/// with scale and a uniform V - shift dithered over the rows (dithered_lanes); beta, -1 or 0
/// in the KPM recurrence, is one float. The dots: float lane sums of kSingleDotRun products,
/// added to the double lanes after each run (stencil_kernels.hpp).
template <class T, bool Real, int ND, int B>
__attribute__((noinline)) void shift_run(const ShiftTable<T>& t, const T* __restrict x, T* __restrict y, global_index ra, global_index re,
               const double* pot, bool per_row, bool uniform, double scale, double shift, double beta,
               bool want_dots, kernels::cpu::DotLanes& lanes)
{
    using simd::v8d;
    using V = VecOf<T>;
    constexpr int L = ShiftTable<T>::kLanes;
    constexpr bool kDouble = std::is_same_v<T, double>;
    V vr[ND], vi[ND];
    std::ptrdiff_t off[ND];
#pragma GCC unroll 8
    for (int i = 0; i < ND; ++i) {
        vr[i] = load_vec(t.vr.data() + 2 * L * i);
        if constexpr (!Real) vi[i] = load_vec(t.vi.data() + 2 * L * i);
        off[i] = 2 * t.offset[static_cast<size_t>(i)];
    }
    // The row sums a = sum_i v_i x(r + d_i), in T.
    auto sums = [&](const T* xb) __attribute__((always_inline)) {
        V a = vr[0] * load_vec(xb + off[0]), b{};
        if constexpr (!Real) b = vi[0] * load_vec(xb + off[0]);
#pragma GCC unroll 8
        for (int i = 1; i < ND; ++i) {
            const V xv = load_vec(xb + off[i]);
            a += vr[i] * xv;
            if constexpr (!Real) b += vi[i] * xv;
        }
        if constexpr (!Real) {
            if constexpr (kDouble) {
                const v8d sign = {-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0};
                a += sign * __builtin_shufflevector(b, b, 1, 0, 3, 2, 5, 4, 7, 6);
            } else {
                const v16f sign = {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1};
                a += sign * __builtin_shufflevector(b, b, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
            }
        }
        return a;
    };
    if constexpr (kDouble) {
        const v8d sv = v8d{} + scale;
        const v8d du = v8d{} + (pot[0] - shift);  // uniform potential: one value for every row
        kernels::cpu::DotLanes l0 = lanes, l1{};
        auto body = [&](global_index r0, kernels::cpu::DotLanes& dl) __attribute__((always_inline)) {
            const T* xb = x + 2 * r0;
            const v8d a = sums(xb);
            const v8d dv = uniform ? du : potential_lanes<B>(pot, per_row, r0, shift);
            kernels::cpu::finish_vector_sums(a, xb, y + 2 * r0, sv, dv, beta, want_dots, dl);
        };
        global_index r0 = ra;
        for (; r0 + 2 * L <= re; r0 += 2 * L) {
            body(r0, l0);
            body(r0 + L, l1);
        }
        if (r0 < re) body(r0, l0);
        lanes.xx = l0.xx + l1.xx;
        lanes.yx = l0.yx + l1.yx;
        lanes.yxs = l0.yxs + l1.yxs;
    } else {
        const DitheredLanes ds(scale), dd(pot[0] - shift);  // uniform potential: not read per row
        const v16f sv[2] = {loadf<v16f>(ds.v), loadf<v16f>(ds.v + 16)};
        const v16f du[2] = {loadf<v16f>(dd.v), loadf<v16f>(dd.v + 16)};
        const v16f bv = v16f{} + static_cast<float>(beta);
        const bool read_y = beta != 0.0;  // beta == 0: y is never read
        // y of 8 rows at r0 (dither half 0 or 1); the dots of its x and the stored y into fd.
        auto body = [&](global_index r0, int half, FloatDotLanes& fd) __attribute__((always_inline)) {
            const T* xb = x + 2 * r0;
            T* yb = y + 2 * r0;
            const v16f a = sums(xb);
            const v16f xv = load_vec(xb);
            const v16f dv = uniform ? du[half] : potential_lanes_f<B>(pot, per_row, r0, shift);
            const v16f old = read_y ? bv * load_vec(yb) : v16f{};
            const v16f yv = sv[half] * (a + dv * xv) + old;
            std::memcpy(yb, &yv, sizeof yv);
            if (want_dots) {
                fd.xx += xv * xv;
                fd.yx += yv * xv;
                fd.yxs += yv * __builtin_shufflevector(xv, xv, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
            }
        };
        // Float lane sums of kSingleDotRun products each (two sets: f0, f1, added in float),
        // then into the double lanes.
        constexpr int kDotChunk = 2 * kSingleDotRun;
        auto flush = [&](const FloatDotLanes& f0, const FloatDotLanes& f1) __attribute__((always_inline)) {
            FloatDotLanes sum{f0.xx + f1.xx, f0.yx + f1.yx, f0.yxs + f1.yxs};
            sum.add_to(lanes);
        };
        global_index r0 = ra;
        while (r0 < re) {
            FloatDotLanes f0, f1;
            const global_index end = std::min<global_index>(re, r0 + static_cast<global_index>(kDotChunk) * L);
            for (; r0 + 2 * L <= end; r0 += 2 * L) {
                body(r0, 0, f0);
                body(r0 + L, 1, f1);
            }
            if (r0 < end) {
                body(r0, 0, f0);
                r0 += L;
            }
            if (want_dots) flush(f0, f1);
        }
    }
}

}  // namespace topokpm::numerics::kernels::cpu::stencil
