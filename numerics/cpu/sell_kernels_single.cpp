// Fused augmented SpMMV over SELL-C-σ in single precision (numerics/spmmv/sell_kernels.hpp):
//   y = scale (A - shift) x + beta y, with <x|x> and <y|x> per column accumulated in double.
// Same layout and structure as the double kernel (sell_kernels.cpp): x, y row-major
// N x R complex floats as interleaved (re, im) floats; the R loop is the SIMD dimension for
// R = 2, 4 and multiples of 8 (a row's complex floats in 16-, 32- or 64-byte vectors; R = 2
// and 4 measured 2.3x / 1.8x faster than the chunk-wide loop they replaced), the C rows of
// a chunk for R = 1.
//
// Precision of each step (docs/performance.md, "Single precision"):
//   * row sum over the stored entries in float (two real accumulators per vector as in
//     complex_block_simd.hpp: a += Re v x, b += Im v x, combined once per row);
//   * epilogue in double: y = scale (sum - shift x) + beta y, rounded once to float;
//   * dots in double per thread, summed in thread order (row_epilogue.hpp's collection).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "numerics/cpu/chunk_schedule.hpp"
#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/cpu/row_epilogue.hpp"
#include "numerics/cpu/sell_sweep.hpp"
#include "numerics/spmmv/sell_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"

namespace topokpm::numerics {

namespace kernels::cpu {
namespace {

/// Accumulator vectors per group (each of the two real halves): 8 with AVX-512 (16 of the
/// 32 registers), 2 otherwise -- the double kernels' budget of complex sums, in vectors.
constexpr int kSingleVectors = 2 * simd::accumulator_complex / 8;

/// Rows side by side for block width R: fills the vector budget.
constexpr int single_group_rows(int r)
{
    const int floats = r >= 8 ? 16 : 2 * r;  // lanes of simd::SingleRowVector<R>
    const int per_row = 2 * r / floats;
    const int g = kSingleVectors / per_row;
    return g < 1 ? 1 : g;
}

/// Chunk-wide sweep for any width: the C rows' sums in an array, vectorised across the
/// rows of the chunk (R = 1: the SELL layout's purpose) or across R.
template <int Width>
void sweep_generic(const BasicSellMatrix<complex_single>& a, const float* x, float* y, int runtime_cols, const AugmentedOps& ops,
                   DotSums* dots, const ChunkSchedule* schedule)
{
    const int r = Width > 0 ? Width : runtime_cols;
    const int c = a.chunk_height();
    const local_index num_chunks = a.num_chunks();
    const std::int64_t* chunk_start = a.chunk_start().data();
    const local_index* chunk_length = a.chunk_length().data();
    const local_index* cols = a.columns().data();
    const float* vals = reinterpret_cast<const float*>(a.values().data());
    const local_index* row_of_slot = a.row_of_slot().data();
    const double scale = ops.scale, shift = ops.shift, beta = ops.beta;
    const bool want_dots = dots != nullptr;
    const int num_threads = omp_get_max_threads();
    std::vector<double> partial(static_cast<size_t>(num_threads) * 3 * r, 0.0);

#pragma omp parallel num_threads(num_threads)
    {
        std::vector<double> td(3 * static_cast<size_t>(r), 0.0);
        double* const txx = td.data();
        double* const tyr = td.data() + r;
        double* const tyi = td.data() + 2 * r;
        std::vector<float> acc(2 * static_cast<size_t>(c) * r);  // interleaved, per slot
        std::vector<float> are(c), aim(c);                        // R = 1: split re / im
        for_each_scheduled_chunk(schedule, num_chunks, [&](local_index ch) {
            const std::int64_t base = chunk_start[ch];
            const local_index width = chunk_length[ch];
            if constexpr (Width == 1) {
                float* __restrict pr = are.data();
                float* __restrict pi = aim.data();
                std::fill(are.begin(), are.end(), 0.0f);
                std::fill(aim.begin(), aim.end(), 0.0f);
                for (local_index k = 0; k < width; ++k) {
                    const std::int64_t kb = base + static_cast<std::int64_t>(k) * c;
#pragma omp simd
                    for (int s = 0; s < c; ++s) {
                        const float vr = vals[2 * (kb + s)], vi = vals[2 * (kb + s) + 1];
                        const std::int64_t col = cols[kb + s];
                        const float xr = x[2 * col], xi = x[2 * col + 1];
                        pr[s] += vr * xr - vi * xi;
                        pi[s] += vr * xi + vi * xr;
                    }
                }
                // Consecutive rows (most chunks of a lattice model): one vector epilogue over
                // the chunk, split re/im, dots reduced across the rows first.
                const local_index* slot_rows = row_of_slot + static_cast<size_t>(ch) * c;
                bool consecutive = slot_rows[0] >= 0;
                for (int s = 1; s < c; ++s) consecutive &= slot_rows[s] == slot_rows[0] + s;
                if (consecutive) {
                    const float* __restrict xo = x + 2 * static_cast<std::int64_t>(slot_rows[0]);
                    float* __restrict yo = y + 2 * static_cast<std::int64_t>(slot_rows[0]);
                    double sxx = 0.0, syr = 0.0, syi = 0.0;
#pragma omp simd reduction(+ : sxx, syr, syi)
                    for (int s = 0; s < c; ++s) {
                        const double xre = xo[2 * s], xim = xo[2 * s + 1];
                        double yre = scale * (static_cast<double>(pr[s]) - shift * xre);
                        double yim = scale * (static_cast<double>(pi[s]) - shift * xim);
                        if (beta != 0.0) {
                            yre += beta * static_cast<double>(yo[2 * s]);
                            yim += beta * static_cast<double>(yo[2 * s + 1]);
                        }
                        const float fre = static_cast<float>(yre), fim = static_cast<float>(yim);
                        yo[2 * s] = fre;
                        yo[2 * s + 1] = fim;
                        sxx += xre * xre + xim * xim;
                        syr += static_cast<double>(fre) * xre + static_cast<double>(fim) * xim;  // conj(y) x
                        syi += static_cast<double>(fre) * xim - static_cast<double>(fim) * xre;
                    }
                    if (want_dots) {
                        txx[0] += sxx;
                        tyr[0] += syr;
                        tyi[0] += syi;
                    }
                    return;  // this chunk is done (the lambda's body)
                }
                for (int s = 0; s < c; ++s) {
                    acc[2 * s] = pr[s];
                    acc[2 * s + 1] = pi[s];
                }
            } else {
                std::fill(acc.begin(), acc.end(), 0.0f);
                for (local_index k = 0; k < width; ++k) {
                    const std::int64_t kb = base + static_cast<std::int64_t>(k) * c;
                    for (int s = 0; s < c; ++s) {
                        const float vr = vals[2 * (kb + s)], vi = vals[2 * (kb + s) + 1];
                        const float* xr = x + 2 * static_cast<std::int64_t>(cols[kb + s]) * r;
                        float* as = acc.data() + 2 * static_cast<size_t>(s) * r;
#pragma omp simd
                        for (int j = 0; j < r; ++j) {
                            as[2 * j] += vr * xr[2 * j] - vi * xr[2 * j + 1];
                            as[2 * j + 1] += vr * xr[2 * j + 1] + vi * xr[2 * j];
                        }
                    }
                }
            }
            for (int s = 0; s < c; ++s) {
                const local_index row = row_of_slot[static_cast<size_t>(ch) * c + s];
                if (row < 0) continue;
                finish_row<Width>(acc.data() + 2 * static_cast<size_t>(s) * r,
                                         x + 2 * static_cast<std::int64_t>(row) * r,
                                         y + 2 * static_cast<std::int64_t>(row) * r, r, scale, shift, beta, want_dots,
                                         txx, tyr, tyi);
            }
        });
        store_thread_dots(partial, r, txx, tyr, tyi);
    }
    if (want_dots) collect_dots(partial, num_threads, r, dots);
}

template <int R>
void blocked(const BasicSellMatrix<complex_single>& a, const float* x, float* y, const AugmentedOps& ops, DotSums* dots,
             const ChunkSchedule* schedule)
{
    constexpr int g = single_group_rows(R);
    // The groups must tile the chunk; otherwise (C not a multiple of G) fall back to G = 1.
    const SellArrays<float> arrays = sell_arrays(a);
    if (a.chunk_height() % g == 0) return sell_sweep_blocked<float, R, g>(arrays, x, y, ops, dots, schedule);
    return sell_sweep_blocked<float, R, 1>(arrays, x, y, ops, dots, schedule);
}

}  // namespace

void sell_spmmv(const BasicSellMatrix<complex_single>& a, const complex_single* xc, complex_single* yc, int num_cols,
                       const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule)
{
    const float* x = reinterpret_cast<const float*>(xc);
    float* y = reinterpret_cast<float*>(yc);
    with_width(num_cols, [&](auto width) {
        constexpr int R = decltype(width)::value;
        // R = 1: the chunk's rows side by side; 2, 4 and multiples of 8: register-blocked.
        if constexpr (R == 1 || R == 0) sweep_generic<R>(a, x, y, num_cols, ops, dots, schedule);
        else blocked<R>(a, x, y, ops, dots, schedule);
    });
}

}  // namespace kernels::cpu
}  // namespace topokpm::numerics
