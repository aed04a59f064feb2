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

#include <vector>

#include "numerics/base/operator.hpp"

namespace topokpm::numerics::kernels::cpu {

/// Row epilogue on interleaved (re, im) values of type T (double, or float for
/// --precision single). R > 0: compile-time width; R = 0: r. The arithmetic is double in
/// both cases: a float row's y is computed in double and rounded once when stored, and its
/// dots are summed in double from the stored float values (docs/performance.md, "Single
/// precision"); for T = double the casts are no-ops.
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
