#pragma once
/// @file stencil_site_form.hpp
/// The site form of the CPU stencil sweep (stencil_sweep.cpp; the design:
/// stencil_operator.hpp, SiteForm): a site's 4 rows summed at once from the XOR diagonals of
/// its classes, in double (site_sums, site_sums_r2), in float lanes (site_sums_f,
/// site_finish_f), by neighbour block at R = 4, 8 (site_sums_grouped, double and float), and
/// site_column, which runs one column of sites with its epilogue and dots. Inline templates for the one translation unit that sweeps.

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#include <vector>

#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/cpu/row_epilogue.hpp"
#include "numerics/cpu/stencil_operator.hpp"
#include "numerics/cpu/stencil_shift_form.hpp"

namespace topokpm::numerics::kernels::cpu::stencil {

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
    // The items [begin, end) of one part only (values real: rp into a; imaginary: jp into b).
    auto one_part = [&](int begin, int end, const v8d* vp, v8d (&sum)[S]) __attribute__((always_inline)) {
        for (int i = begin; i < end; ++i) {
            const v8d v = vp[i];
#pragma GCC unroll 8
            for (int s = 0; s < S; ++s) sum[s] += v * xs(i, s);
        }
    };
    one_part(0, e_re, rp, a);
    one_part(e_re, e_im, jp, b);
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
    // The items [begin, end) of one part only (values real: rp into a; imaginary: jp into b).
    auto one_part = [&](int begin, int end, const v8d* vp, v8d (&sum)[S][2]) __attribute__((always_inline)) {
        for (int i = begin; i < end; ++i)
#pragma GCC unroll 8
            for (int s = 0; s < S; ++s)
                for (int h = 0; h < 2; ++h) sum[s][h] += vp[2 * i + h] * xs(i, s, h);
    };
    one_part(0, e_re, rp, a);
    one_part(e_re, e_im, jp, b);
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

/// The sums of S consecutive sites of one SiteForm class at width R from its grouped items
/// (SiteForm::Class::group_off ...): a neighbour's vectors of each of its 4 rows are loaded
/// once per group and serve every item (diagonal) of that block (the ti blocks have two
/// diagonals each: half the loads of one load per item); row o of an item reads the
/// neighbour's row o ^ c whole and multiplies it by that row's value, broadcast by a load,
/// real parts into a and imaginary parts into b, b joined to a (times i) at the end. T =
/// double: R = 4, 8 (a row is R / 4 vectors of 8 doubles; a[s][o][j]); per lane the products
/// and sums of site_sums in the same order, so each column's sums are those of the R = 1 form,
/// bit for bit. T = float: R = 8 (a row is one vector of 16 floats), the same in float.
template <class T, int R, int S>
__attribute__((always_inline)) inline void site_sums_grouped(
    const typename SiteForm<T>::Class& c, const T* __restrict x0,
    std::conditional_t<std::is_same_v<T, double>, simd::v8d, simd::v16f> (&a)[S][4][2 * R * sizeof(T) / 64])
{
    using Vec = std::conditional_t<std::is_same_v<T, double>, simd::v8d, simd::v16f>;
    constexpr int L = 64 / sizeof(T);  // values per vector
    constexpr int V = 2 * R / L;       // vectors per row
    static_assert(V >= 1 && 2 * R % L == 0, "whole vectors per row");
    Vec b[S][4][V];
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s)
        for (int o = 0; o < 4; ++o)
            for (int j = 0; j < V; ++j) a[s][o][j] = b[s][o][j] = Vec{};
    const int groups = static_cast<int>(c.group_off.size());
    const std::ptrdiff_t* off = c.group_off.data();
    const int* first = c.group_first.data();
    const int* code = c.item_code.data();
    const T* val = c.item_val.data();
    const auto load = [](const T* p) __attribute__((always_inline)) {  // one unaligned vector
        if constexpr (std::is_same_v<T, double>) return (Vec)_mm512_loadu_pd(p);
        else return (Vec)_mm512_loadu_ps(p);
    };
    for (int g = 0; g < groups; ++g) {
        Vec xn[S][4][V];  // the neighbour's rows
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s)
            for (int o = 0; o < 4; ++o)
                for (int j = 0; j < V; ++j)
                    xn[s][o][j] = load(x0 + R * off[g] + 8 * R * s + 2 * R * o + L * j);
        // Row o += value of row o * the neighbour's row o ^ C, into a (Re) or b (Im).
        const auto item = [&](auto diagonal, Vec (&sum)[S][4][V], const T* v) __attribute__((always_inline)) {
            constexpr int C = decltype(diagonal)::value;
#pragma GCC unroll 4
            for (int o = 0; o < 4; ++o) {
                Vec vo;  // a broadcast load (Vec{} + v[o] adds and shuffles)
                if constexpr (std::is_same_v<T, double>) vo = (Vec)_mm512_set1_pd(v[o]);
                else vo = (Vec)_mm512_set1_ps(v[o]);
#pragma GCC unroll 8
                for (int s = 0; s < S; ++s)
                    for (int j = 0; j < V; ++j) sum[s][o][j] += vo * xn[s][o ^ C][j];
            }
        };
        for (int i = first[g]; i < first[g + 1]; ++i) {
            const T* v = val + 4 * i;
            switch (code[i]) {
            case 0: item(std::integral_constant<int, 0>{}, a, v); break;
            case 1: item(std::integral_constant<int, 1>{}, a, v); break;
            case 2: item(std::integral_constant<int, 2>{}, a, v); break;
            case 3: item(std::integral_constant<int, 3>{}, a, v); break;
            case 4: item(std::integral_constant<int, 0>{}, b, v); break;
            case 5: item(std::integral_constant<int, 1>{}, b, v); break;
            case 6: item(std::integral_constant<int, 2>{}, b, v); break;
            default: item(std::integral_constant<int, 3>{}, b, v); break;
            }
        }
    }
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s)
        for (int o = 0; o < 4; ++o)
            for (int j = 0; j < V; ++j) {
                if constexpr (std::is_same_v<T, double>) {
                    const Vec sign = {-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0};
                    a[s][o][j] += sign * __builtin_shufflevector(b[s][o][j], b[s][o][j], 1, 0, 3, 2, 5, 4, 7, 6);
                } else {
                    const Vec sign = {-1.f, 1.f, -1.f, 1.f, -1.f, 1.f, -1.f, 1.f, -1.f, 1.f, -1.f, 1.f, -1.f, 1.f, -1.f, 1.f};
                    a[s][o][j] += sign * __builtin_shufflevector(b[s][o][j], b[s][o][j], 1, 0, 3, 2, 5, 4, 7, 6, 9, 8,
                                                                 11, 10, 13, 12, 15, 14);
                }
            }
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

}  // namespace topokpm::numerics::kernels::cpu::stencil
