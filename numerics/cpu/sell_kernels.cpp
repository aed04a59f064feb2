// Fused augmented SpMMV over SELL-C-σ on the CPU (seed 004, Fig. 5; contract in
// numerics/spmmv/sell_kernels.hpp):
//   y = scale (A - shift) x + beta y, with <x|x> and <y|x> per column, one pass over A.
// Layout: entry k of slot s of chunk j at chunk_start[j] + k*C + s (sell_matrix.hpp, padding
// = value 0 with a repeated valid column, so no branch); x, y row-major N x R, so the R
// values one matrix entry multiplies are contiguous and the R loop is the SIMD dimension.
// Complex numbers are handled as interleaved (re, im) doubles with explicit arithmetic:
// std::complex multiplication would add the C99 NaN-recovery branch (__muldc3) per entry.
//
// Registered widths (width_registry.hpp) with C a multiple of the register group run the
// register-blocked sweep (sell_sweep.hpp over complex_block_simd.hpp: split re/im
// accumulators in registers); every other (R, C) runs sweep<> below, which keeps the C x R
// interleaved sums of a chunk in an array (one PERFWARNING per shape). Both take an
// optional ChunkSchedule (sell_schedule.hpp): the thread keeps its static-split chunk range
// and visits it in y tiles so the x rows of the planes x-1, x, x+1 stay in cache.
// Measurements behind these choices (C at run time, the accumulator form, the sweep
// order, stores that were tried and dropped): docs/performance.md, "Kernel design
// measurements"; the register-blocked sweep prefetches the far x rows and the y rows of
// wide rows (R >= 16 in double; sell_sweep.hpp, prefetch_rows_ahead).
#include <omp.h>

#include <algorithm>
#include <complex>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "numerics/cpu/chunk_schedule.hpp"
#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/cpu/row_epilogue.hpp"
#include "numerics/cpu/sell_sweep.hpp"
#include "numerics/spmmv/sell_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"
#include "runtime/base/log.hpp"

namespace topokpm::numerics::kernels::cpu {
namespace {

/// R = 1, one chunk: the C rows' sums side by side (split re / im), vectorised across the
/// rows. Consecutive rows (most chunks of a lattice model) get one vector epilogue with the
/// dots reduced across the rows first: returns true, the chunk is done. Otherwise the sums
/// are left interleaved in `acc` for the per-row epilogue.
template <typename T, bool Real>
bool sweep_chunk_r1(const T* vals, const local_index* cols, const T* x, T* y, std::int64_t base, local_index width,
                    int c, const local_index* slot_rows, T* __restrict pr, T* __restrict pi, T* acc, double scale,
                    double shift, double beta, bool want_dots, double* txx, double* tyr, double* tyi)
{
    std::fill(pr, pr + c, T(0));
    std::fill(pi, pi + c, T(0));
    for (local_index k = 0; k < width; ++k) {
        const std::int64_t kb = base + static_cast<std::int64_t>(k) * c;
#pragma omp simd
        for (int s = 0; s < c; ++s) {
            const T vr = Real ? vals[kb + s] : vals[2 * (kb + s)];
            const std::int64_t col = cols[kb + s];
            const T xr = x[2 * col], xi = x[2 * col + 1];
            if constexpr (Real) {
                pr[s] += vr * xr;
                pi[s] += vr * xi;
            } else {
                const T vi = vals[2 * (kb + s) + 1];
                pr[s] += vr * xr - vi * xi;
                pi[s] += vr * xi + vi * xr;
            }
        }
    }
    bool consecutive = slot_rows[0] >= 0;
    for (int s = 1; s < c; ++s) consecutive &= slot_rows[s] == slot_rows[0] + s;
    if (!consecutive) {
        for (int s = 0; s < c; ++s) {
            acc[2 * s] = pr[s];
            acc[2 * s + 1] = pi[s];
        }
        return false;
    }
    const T* __restrict xo = x + 2 * static_cast<std::int64_t>(slot_rows[0]);
    T* __restrict yo = y + 2 * static_cast<std::int64_t>(slot_rows[0]);
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
        const T fre = static_cast<T>(yre), fim = static_cast<T>(yim);
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
    return true;
}

/// The chunk-wide sweep over T = double or float values (every (R, C) without a register-
/// blocked instance; in single precision also R = 1 with C not a multiple of 8). Width > 0: compile-time R; Width == 0:
/// runtime R. The C x R interleaved sums of a chunk live in an array; the row epilogue is
/// computed in double (row_epilogue.hpp), so single precision rounds once per stored value.
template <class V, int Width, typename T = typename ValueTraits<V>::real>
void sweep(const BasicSellMatrix<V>& a, const T* x, T* y, int runtime_cols, const AugmentedOps& ops, DotSums* dots,
           const ChunkSchedule* schedule)
{
    constexpr bool Real = !ValueTraits<V>::is_complex;
    const int r = Width > 0 ? Width : runtime_cols;
    const int c = a.chunk_height();
    const local_index num_chunks = a.num_chunks();
    const std::int64_t* chunk_start = a.chunk_start().data();
    const local_index* chunk_length = a.chunk_length().data();
    const local_index* cols = a.columns().data();
    const T* vals = reinterpret_cast<const T*>(a.values().data());
    const local_index* row_of_slot = a.row_of_slot().data();
    const double scale = ops.scale, shift = ops.shift, beta = ops.beta;
    const bool want_dots = dots != nullptr;

    const int num_threads = omp_get_max_threads();
    // Per thread: xx[r], yx_re[r], yx_im[r].
    std::vector<double> partial(static_cast<size_t>(num_threads) * 3 * r, 0.0);

#pragma omp parallel num_threads(num_threads)
    {
        // Accumulators and the thread's dot sums live on the thread's own stack (registers
        // for the fixed widths) and are written to `partial` once at the end: summing into
        // `partial` directly put both threads' sums on one cache line and made every row
        // a false-sharing miss (measured: R = 1 at 9 GB/s instead of ~25).
        // Accumulators for all C rows of a chunk: the entry loop runs k outer, rows inner, so
        // the C x R accumulation chains are independent (a single row's chain is a serial
        // FMA dependency) and the chunk's values are read contiguously, which is what
        // SELL-C-σ's layout is for.
        std::vector<T> acc(2 * static_cast<size_t>(c) * r);
        std::vector<T> are(c), aim(c);  // R = 1: split re / im sums of the chunk's rows
        constexpr int kMax = Width > 0 ? Width : 1;
        double xx_fixed[kMax] = {}, yr_fixed[kMax] = {}, yi_fixed[kMax] = {};
        std::vector<double> dyn(Width > 0 ? 0 : 3 * static_cast<size_t>(r), 0.0);
        double* const txx = Width > 0 ? xx_fixed : dyn.data();
        double* const tyr = Width > 0 ? yr_fixed : dyn.data() + r;
        double* const tyi = Width > 0 ? yi_fixed : dyn.data() + 2 * r;

        for_each_scheduled_chunk(schedule, num_chunks, [&](local_index ch) {
            const std::int64_t base = chunk_start[ch];
            const local_index width = chunk_length[ch];
            if constexpr (Width == 1) {
                if (sweep_chunk_r1<T, Real>(vals, cols, x, y, base, width, c, row_of_slot + static_cast<size_t>(ch) * c,
                                   are.data(), aim.data(), acc.data(), scale, shift, beta, want_dots, txx, tyr, tyi))
                    return;  // consecutive rows: the chunk is done
            } else {
                std::fill(acc.begin(), acc.end(), T(0));
                for (local_index k = 0; k < width; ++k) {
                    const std::int64_t kb = base + static_cast<std::int64_t>(k) * c;
                    for (int s = 0; s < c; ++s) {
                        const T vr = Real ? vals[kb + s] : vals[2 * (kb + s)];
                        const T vi = Real ? T(0) : vals[2 * (kb + s) + 1];
                        const T* xr = x + 2 * static_cast<std::int64_t>(cols[kb + s]) * r;
                        T* as = acc.data() + 2 * static_cast<size_t>(s) * r;
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
                finish_row<Width>(acc.data() + 2 * static_cast<size_t>(s) * r, x + 2 * static_cast<std::int64_t>(row) * r,
                                  y + 2 * static_cast<std::int64_t>(row) * r, r, scale, shift, beta, want_dots, txx,
                                  tyr, tyi);
            }
        });
        store_thread_dots(partial, r, txx, tyr, tyi);
    }
    if (want_dots) collect_dots(partial, num_threads, r, dots);
}

/// "1, 2, 4, 8, 16, 32" for the default registry.
std::string registered_width_text()
{
    std::string text;
    for (const int w : registered_widths()) text += (text.empty() ? "" : ", ") + std::to_string(w);
    return text;
}

void warn_generic_once(int width, int chunk_height)
{
    static std::mutex mutex;
    static std::set<std::pair<int, int>> warned;
    std::lock_guard<std::mutex> lock(mutex);
    if (warned.insert({width, chunk_height}).second)
        log::perf_warning("no specialised SELL SpMMV kernel for block width R = ", width, " and chunk height C = ",
                          chunk_height, "; using the generic kernel (specialised: R in ", registered_width_text(),
                          " with C a multiple of 4/R; C in 8, 16, 32 recommended)");
}

/// Largest G <= the register budget with C % G == 0 and (G R) % 4 == 0; 0 if none.
constexpr int pick_group(int r, int c)
{
    for (int g = simd::group_rows(r, 1 << 20); g >= 1; g /= 2)
        if (c % g == 0 && (g * r) % 4 == 0) return g;
    return 0;
}

template <int R, int G, class V>
bool try_group(int c, const BasicSellMatrix<V>& a, const double* x, double* y, const AugmentedOps& ops,
               DotSums* dots, const ChunkSchedule* schedule)
{
    if constexpr (G >= 1 && (G * R) % 4 == 0) {
        if (pick_group(R, c) == G) {
            sell_sweep_blocked<double, R, G, !ValueTraits<V>::is_complex>(sell_arrays(a), x, y, ops, dots, schedule);
            return true;
        }
        return try_group<R, G / 2>(c, a, x, y, ops, dots, schedule);
    } else {
        (void)c, (void)a, (void)x, (void)y, (void)ops, (void)dots, (void)schedule;
        return false;
    }
}

/// Double vectors, V = complex_double or double values.
template <int R, class V>
void dispatch_width(const BasicSellMatrix<V>& a, const double* x, double* y, const AugmentedOps& ops, DotSums* dots,
                    const ChunkSchedule* schedule)
{
    if (try_group<R, simd::group_rows(R, 1 << 20)>(a.chunk_height(), a, x, y, ops, dots, schedule)) return;
    warn_generic_once(R, a.chunk_height());
    sweep<V, R>(a, x, y, R, ops, dots, schedule);
}

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

/// R = 1 in single precision: the largest G = 8 n <= 8 kSingleVectors dividing C (C = 8: 8,
/// C = 32: 32), 0 when C is not a multiple of 8 (the chunk-wide sweep then runs).
template <class V, int G = 8 * kSingleVectors>
bool blocked_r1(const BasicSellMatrix<V>& a, const float* x, float* y, const AugmentedOps& ops, DotSums* dots,
                const ChunkSchedule* schedule)
{
    if constexpr (G < 8) {
        (void)a, (void)x, (void)y, (void)ops, (void)dots, (void)schedule;
        return false;
    } else {
        if (a.chunk_height() % G != 0) return blocked_r1<V, G / 2>(a, x, y, ops, dots, schedule);
        sell_sweep_blocked<float, 1, G, !ValueTraits<V>::is_complex>(sell_arrays(a), x, y, ops, dots, schedule);
        return true;
    }
}

template <int R, class V>
void blocked(const BasicSellMatrix<V>& a, const float* x, float* y, const AugmentedOps& ops, DotSums* dots,
             const ChunkSchedule* schedule)
{
    constexpr int g = single_group_rows(R);
    constexpr bool real = !ValueTraits<V>::is_complex;
    // The groups must tile the chunk; otherwise (C not a multiple of G) fall back to G = 1.
    const SellArrays<float> arrays = sell_arrays(a);
    if (a.chunk_height() % g == 0) return sell_sweep_blocked<float, R, g, real>(arrays, x, y, ops, dots, schedule);
    return sell_sweep_blocked<float, R, 1, real>(arrays, x, y, ops, dots, schedule);
}

/// Every width of the sweep, for vectors of real type F: double (V = complex_double or
/// double values) or float (--precision single, V = complex_single or float: float row sums,
/// the epilogue and the dots in double). Registered widths run the register-blocked sweep;
/// in single precision R = 1 runs it across 8 rows per vector when C is a multiple of 8
/// (else the chunk-wide sweep) and 2, 4 and multiples of 8 with 16-, 32- or 64-byte row
/// vectors. Other widths take the chunk-wide generic sweep.
template <class F, class V>
void sweep_widths(const BasicSellMatrix<V>& a, const std::complex<F>* xc, std::complex<F>* yc, int num_cols,
                  const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule)
{
    const F* x = reinterpret_cast<const F*>(xc);
    F* y = reinterpret_cast<F*>(yc);
    constexpr bool is_double = std::is_same_v<F, double>;
    with_width(num_cols, [&](auto width) {
        constexpr int R = decltype(width)::value;
        if constexpr (R == 0) {
            if constexpr (is_double) warn_generic_once(num_cols, a.chunk_height());
            sweep<V, 0>(a, x, y, num_cols, ops, dots, schedule);
        } else if constexpr (is_double) {
            dispatch_width<R>(a, x, y, ops, dots, schedule);
        } else if constexpr (R == 1) {
            if (!blocked_r1(a, x, y, ops, dots, schedule)) sweep<V, 1>(a, x, y, num_cols, ops, dots, schedule);
        } else {
            blocked<R>(a, x, y, ops, dots, schedule);
        }
    });
}

}  // namespace

const char* compiled_isa() { return simd::compiled_isa; }

void sell_spmmv(const SellMatrix& a, const complex_type* x, complex_type* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots)
{
    sell_spmmv(a, x, y, num_cols, ops, dots, nullptr);
}

void sell_spmmv(const SellMatrix& a, const complex_type* x, complex_type* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule)
{
    sweep_widths(a, x, y, num_cols, ops, dots, schedule);
}

void sell_spmmv(const BasicSellMatrix<double>& a, const complex_double* x, complex_double* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule)
{
    sweep_widths(a, x, y, num_cols, ops, dots, schedule);
}

void sell_spmmv(const BasicSellMatrix<complex_single>& a, const complex_single* x, complex_single* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule)
{
    sweep_widths(a, x, y, num_cols, ops, dots, schedule);
}

void sell_spmmv(const BasicSellMatrix<float>& a, const complex_single* x, complex_single* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule)
{
    sweep_widths(a, x, y, num_cols, ops, dots, schedule);
}

}  // namespace topokpm::numerics::kernels::cpu
