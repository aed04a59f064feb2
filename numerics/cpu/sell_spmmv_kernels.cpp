// Fused augmented SpMMV over SELL-C-σ on the CPU (seed 004, Fig. 5):
//   y = scale (A - shift) x + beta y, with <x|x> and <y|x> per column, one pass over A.
// Layout: entry k of slot s of chunk j at chunk_start[j] + k*C + s (sell_matrix.hpp, padding
// = value 0 with a repeated valid column, so no branch); x, y row-major N x R, so the R
// values one matrix entry multiplies are contiguous and the R loop is the SIMD dimension.
// Complex numbers are handled as interleaved (re, im) doubles with explicit arithmetic:
// std::complex multiplication would add the C99 NaN-recovery branch (__muldc3) per entry.
//
// Vectorisation (GCC 12.2, -O3 -march=native, AVX-512; checked with -fopt-info-vec and
// objdump): the R loop is fully unrolled for the compile-time widths and GCC recognises
// the interleaved complex multiply-add: per 4 complex values one vmulpd (Im v * x), one
// vpermilpd (swap re/im), one vfmaddsub231pd (Re v * x -/+ ...) and the vaddpd into the
// accumulator, on zmm for R >= 4, ymm for R = 2, xmm for R = 1 (one complex per row: no
// SIMD across R is possible, and that width is memory-bound, B_min(1) = 2.23 bytes/flop).
// The epilogue (shift/scale/axpby, dots) vectorises too; the generic runtime-R kernel
// vectorises with a scalar remainder.
//
// Measured alternatives (ti 64x64x40, 2 threads, this machine), not kept:
//  * compile-time C = 32 instead of runtime C: equal within 2 % for every R, so C stays
//    a runtime parameter (no C x R instantiation matrix);
//  * split accumulators (Re v * x and Im v * x summed separately, no permute in the hot
//    loop): 10-25 % slower, twice the accumulator footprint in L1;
//  * row-wise order (one row at a time, its split accumulators in registers) for R >= 8:
//    15-60 % slower (fewer x rows in flight than with the C rows of a chunk side by side).
//
// Sweep order (issue 4). Both sweeps take an optional ChunkSchedule (sell_schedule.hpp,
// iterated by for_each_scheduled_chunk, chunk_schedule.hpp): each thread keeps the chunk
// range of the static split (the builder's first-touch split; this VM has one NUMA node,
// so first touch cannot be measured here, but the thread -> rows mapping stays contiguous
// and equal to the fill's) and visits it y tile by y tile (outer), x plane by x plane
// (inner), so the x rows of the planes x-1, x, x+1 of a tile stay in cache.
// Measured on the 2-vCPU Xeon (family 6 model 0xcf, AVX-512, 2 MiB L2 per core, a
// 260 MiB L3 shared with other VMs; triad b = 12-25 GB/s, varying from minute to minute),
// ti 64x64x40, 2 threads, spmmv-bench --interleave (all variants alternate in one process),
// medians of 9-15 sweeps:
//  * y tile Ty at R = 32, time relative to the untiled sweep, three runs (SELL-8-256):
//    Ty = 2: +7/-7/-2 %, 4: -1/-9/-7 %, 8: -9/-11/-14 %, 16: -10/-10/-13 %, 32: -9 % (one
//    run); SELL-32-256 (two runs): Ty = 4: -11/-7 %, 8: -9/-14 %, 16: -11/-13 %. The
//    default budget (2 MiB of x per thread for the three planes, TileOptions) gives Ty = 8
//    at R = 32 (8 tiles of 8 x 160 rows), 16 at R = 16, 32 at R = 8, none at R <= 4.
//    These scans ran while other VMs loaded the machine (b 12-25 GB/s). On the quiet machine
//    (b 25-26 GB/s, 3 runs of 15 interleaved sweeps) the orders are equal within noise:
//    SELL-8 R = 32 89.6/85.1 ms untiled vs 86.8/83.9 ms tiled (-3/-1 %), SELL-32 equal,
//    R = 8 (Ty 32) equal, R = 1 unchanged (static); the 260 MiB L3 of this Xeon holds the
//    untiled plane triple (30 MiB) when nobody else uses it. The tiles matter where the
//    L3 is small or shared (32 MiB Zen 4 of docs/performance.md, or a busy host).
//  * non-temporal stores of y (_mm_stream_pd of the finished row, y read first as beta != 0):
//    2x slower at R = 1 (24 -> 47-50 ms SELL-8, 24 -> 32.5 ms SELL-32) and at R = 32
//    (186-203 -> 372-391 ms), two alternating process pairs. Not kept.
//  * software prefetch (x rows of the last, i.e. largest-column, entry of each row and the
//    y rows, 1, 2 or 4 chunks ahead in the same range): 8-20 % slower at R = 32 and 3-15 %
//    at R = 8 than the tiled sweep without it (two in-process runs). Not kept: the sweep is
//    bound by the L2 -> core traffic of the x rows (in-cache ti 8x8x10, R = 32: 43-45
//    Gflop/s), and the prefetches add to exactly that.
#include <omp.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "numerics/cpu/chunk_schedule.hpp"
#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/cpu/row_epilogue.hpp"
#include "numerics/cpu/sell_sweep.hpp"
#include "numerics/spmmv/spmmv_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"
#include "runtime/base/log.hpp"

namespace topokpm::numerics::kernels::cpu {
namespace {

/// One sweep. Width > 0: compile-time R; Width == 0: runtime R (generic fallback).
template <int Width>
void sweep(const SellMatrix& a, const complex_type* xc, complex_type* yc, int runtime_cols,
           const AugmentedOps& ops, DotSums* dots, const ChunkSchedule* schedule)
{
    const int r = Width > 0 ? Width : runtime_cols;
    const int c = a.chunk_height();
    const local_index num_chunks = a.num_chunks();
    const std::int64_t* chunk_start = a.chunk_start().data();
    const local_index* chunk_length = a.chunk_length().data();
    const local_index* cols = a.columns().data();
    const double* vals = reinterpret_cast<const double*>(a.values().data());
    const local_index* row_of_slot = a.row_of_slot().data();
    const double* x = reinterpret_cast<const double*>(xc);
    double* y = reinterpret_cast<double*>(yc);
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
        // FMA dependency: 13 x 4 cycles per row, measured 17 ns/row at R = 1) and the chunk's
        // values are read contiguously, which is what SELL-C-σ's layout is for.
        std::vector<double> acc(2 * static_cast<size_t>(c) * r);
        constexpr int kMax = Width > 0 ? Width : 1;
        double xx_fixed[kMax] = {}, yr_fixed[kMax] = {}, yi_fixed[kMax] = {};
        std::vector<double> dyn(Width > 0 ? 0 : 3 * static_cast<size_t>(r), 0.0);
        double* const txx = Width > 0 ? xx_fixed : dyn.data();
        double* const tyr = Width > 0 ? yr_fixed : dyn.data() + r;
        double* const tyi = Width > 0 ? yi_fixed : dyn.data() + 2 * r;

        for_each_scheduled_chunk(schedule, num_chunks, [&](local_index ch) {
            const std::int64_t base = chunk_start[ch];
            const local_index width = chunk_length[ch];
            double* const a = acc.data();
            std::fill(acc.begin(), acc.end(), 0.0);
            for (local_index k = 0; k < width; ++k) {
                const std::int64_t kb = base + static_cast<std::int64_t>(k) * c;
                for (int s = 0; s < c; ++s) {
                    const double vr = vals[2 * (kb + s)], vi = vals[2 * (kb + s) + 1];
                    const double* xr = x + 2 * static_cast<std::int64_t>(cols[kb + s]) * r;
                    double* as = a + 2 * static_cast<size_t>(s) * r;
#pragma omp simd
                    for (int j = 0; j < r; ++j) {
                        as[2 * j] += vr * xr[2 * j] - vi * xr[2 * j + 1];
                        as[2 * j + 1] += vr * xr[2 * j + 1] + vi * xr[2 * j];
                    }
                }
            }
            for (int s = 0; s < c; ++s) {
                const local_index row = row_of_slot[static_cast<size_t>(ch) * c + s];
                if (row < 0) continue;
                finish_row<Width>(a + 2 * static_cast<size_t>(s) * r, x + 2 * static_cast<std::int64_t>(row) * r,
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

template <int R, int G>
bool try_group(int c, const SellMatrix& a, const complex_type* x, complex_type* y, const AugmentedOps& ops,
               DotSums* dots, const ChunkSchedule* schedule)
{
    if constexpr (G >= 1 && (G * R) % 4 == 0) {
        if (pick_group(R, c) == G) {
            const SellArrays<double> arrays{a.chunk_height(), a.num_chunks(), a.chunk_start().data(),
                                            a.chunk_length().data(), a.columns().data(),
                                            reinterpret_cast<const double*>(a.values().data()),
                                            a.row_of_slot().data()};
            sell_sweep_blocked<double, R, G>(arrays, reinterpret_cast<const double*>(x), reinterpret_cast<double*>(y),
                                             ops, dots, schedule);
            return true;
        }
        return try_group<R, G / 2>(c, a, x, y, ops, dots, schedule);
    } else {
        (void)c, (void)a, (void)x, (void)y, (void)ops, (void)dots, (void)schedule;
        return false;
    }
}

template <int R>
void dispatch_width(const SellMatrix& a, const complex_type* x, complex_type* y, const AugmentedOps& ops,
                    DotSums* dots, const ChunkSchedule* schedule)
{
    if (try_group<R, simd::group_rows(R, 1 << 20)>(a.chunk_height(), a, x, y, ops, dots, schedule)) return;
    warn_generic_once(R, a.chunk_height());
    sweep<R>(a, x, y, R, ops, dots, schedule);
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
    with_width(num_cols, [&](auto width) {
        constexpr int R = decltype(width)::value;
        if constexpr (R > 0) {
            dispatch_width<R>(a, x, y, ops, dots, schedule);
        } else {
            warn_generic_once(num_cols, a.chunk_height());
            sweep<0>(a, x, y, num_cols, ops, dots, schedule);
        }
    });
}

}  // namespace topokpm::numerics::kernels::cpu
