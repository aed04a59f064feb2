#pragma once
/// @file sell_sweep.hpp
/// The register-blocked augmented SpMMV sweep over SELL-C-σ, written once for double
/// and float (--precision single) values, both in sell_kernels.cpp:
/// chunks in the order of the ChunkSchedule (or the static split), each chunk as groups of
/// G rows whose G x R sums stay in registers, then the shared row epilogue (row_epilogue.hpp).

#include <omp.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "numerics/base/operator.hpp"
#include "numerics/cpu/chunk_schedule.hpp"
#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/cpu/row_epilogue.hpp"
#include "numerics/sparse/sell_matrix.hpp"

namespace topokpm::numerics::kernels::cpu {

/// True when every slot of the group holds a row (no padding slot of the last chunk).
template <int G>
inline bool rows_are_valid(const local_index* slot_rows)
{
    bool ok = true;
#pragma GCC unroll 32
    for (int g = 0; g < G; ++g) ok &= slot_rows[g] >= 0;
    return ok;
}

/// Software prefetch of wide rows (sell_sweep_blocked): x and y rows of at least this many
/// bytes (4 cache lines: R >= 16 in double, R >= 32 in float) are prefetched, and rows of at
/// least kPrefetchNarrowRowBytes (one line: R >= 4 in double, R >= 8 in float) in chunks of
/// at most kPrefetchNarrowWidth entries per row (graphene's 4; ti's 13 are left to the
/// hardware prefetchers, which keep up there: docs/performance.md, "prefetch of narrower rows") ...
inline constexpr int kPrefetchRowBytes = 256;
inline constexpr int kPrefetchNarrowRowBytes = 64;
inline constexpr int kPrefetchNarrowWidth = 8;
/// ... this many bytes of rows ahead of the row being summed.
inline constexpr int kPrefetchAheadBytes = 2048;

/// Prefetch for the G rows of a register group (slot_rows[g] < 0: a padding slot) of a
/// chunk whose column of entry k of slot g is cols[g + k c]: for each row, the x rows
/// col + D of its entries with |col - row| > D, and the y row row + D, D = the rows in
/// kPrefetchAheadBytes (at least G). On a lattice the row D ahead has this row's neighbours
/// shifted by D, so these are the far x rows (the +-y, +-x neighbours of ti, the +-y ones of
/// graphene) and the y row that row will need: the hardware prefetchers follow these streams
/// but not far enough ahead when every entry reads a whole row of >= 4 lines. The near rows
/// (|col - row| <= D) come with the row stream itself. A hint only: any matrix gives the same
/// result bit for bit, and addresses past the vectors' ends are never read (a prefetch does
/// not fault; the address is formed in integers). A matrix without the shift structure would
/// get the wrong rows prefetched (wasted traffic, same result); every model here is a lattice
/// (models.md). Measurements: docs/performance.md, "Wide SELL rows: software prefetch".
template <class T, int R, int G>
__attribute__((always_inline)) inline void prefetch_rows_ahead(const local_index* cols, int c, local_index width,
                                                               const local_index* slot_rows, const T* x, T* y)
{
    constexpr std::int64_t row_bytes = 2 * R * static_cast<std::int64_t>(sizeof(T));
    constexpr std::int64_t ahead = kPrefetchAheadBytes / row_bytes > G ? kPrefetchAheadBytes / row_bytes : G;
    const auto xa = reinterpret_cast<std::uintptr_t>(x), ya = reinterpret_cast<std::uintptr_t>(y);
#pragma GCC unroll 2
    for (int g = 0; g < G; ++g) {
        const std::int64_t row = slot_rows[g];
        if (row < 0) continue;
        for (local_index k = 0; k < width; ++k) {
            const std::int64_t col = cols[g + static_cast<std::int64_t>(k) * c];
            if (col - row > ahead || row - col > ahead) {
                const std::uintptr_t p = xa + static_cast<std::uintptr_t>((col + ahead) * row_bytes);
#pragma GCC unroll 8
                for (std::int64_t l = 0; l < row_bytes; l += 64)
                    __builtin_prefetch(reinterpret_cast<const void*>(p + static_cast<std::uintptr_t>(l)), 0, 3);
            }
        }
        const std::uintptr_t p = ya + static_cast<std::uintptr_t>((row + ahead) * row_bytes);
#pragma GCC unroll 8
        for (std::int64_t l = 0; l < row_bytes; l += 64)
            __builtin_prefetch(reinterpret_cast<const void*>(p + static_cast<std::uintptr_t>(l)), 1, 3);
    }
}

/// The arrays of a SELL-C-σ matrix a sweep reads, with values as interleaved (re, im) T:
/// double for BasicSellMatrix<complex_double>, float for BasicSellMatrix<complex_single>.
template <class T>
struct SellArrays {
    int c = 1;
    local_index num_chunks = 0;
    const std::int64_t* chunk_start = nullptr;
    const local_index* chunk_length = nullptr;
    const local_index* cols = nullptr;
    const T* vals = nullptr;
    const local_index* row_of_slot = nullptr;
    const local_index* chunk_first_row = nullptr;
};

/// The arrays of `a` as a sweep reads them (complex values as interleaved re, im reals;
/// real values as they are).
template <class V>
SellArrays<typename ValueTraits<V>::real> sell_arrays(const BasicSellMatrix<V>& a)
{
    return {a.chunk_height(),     a.num_chunks(),
            a.chunk_start().data(), a.chunk_length().data(),
            a.columns().data(),   reinterpret_cast<const typename ValueTraits<V>::real*>(a.values().data()),
            a.row_of_slot().data(), a.chunk_first_row().data()};
}

/// One sweep with the register-blocked inner loop (complex_block_simd.hpp): each chunk is
/// processed as C/G groups of G rows, every group's G x R sums in registers for the
/// chunk's whole width; wide rows prefetch ahead (kPrefetchRowBytes, prefetch_rows_ahead).
/// Requires C % G == 0 and, for double, (G R) % 4 == 0; for float,
/// R = 2, 4 or a multiple of 8, or R = 1 with G a multiple of 8 (simd::rows_times_block_single).
/// T = float: row sums in float; at R = 1 the epilogue and dots in double (finish_vector), at
/// R >= 2 in float (FloatRowEpilogue: scale and -shift dithered, dots in float runs). Real: the matrix
/// values are real (one T per entry, ValueTraits); the vectors stay complex.
template <class T, int R, int G, bool Real = false>
void sell_sweep_blocked(const SellArrays<T>& a, const T* x, T* y, const AugmentedOps& ops, DotSums* dots,
                        const ChunkSchedule* schedule)
{
    const int c = a.c;
    const local_index num_chunks = a.num_chunks;
    const std::int64_t* chunk_start = a.chunk_start;
    const local_index* chunk_length = a.chunk_length;
    const local_index* cols = a.cols;
    const T* vals = a.vals;
    const local_index* row_of_slot = a.row_of_slot;
    const double scale = ops.scale, shift = ops.shift, beta = ops.beta;
    const bool want_dots = dots != nullptr;
    // AugmentedOps' accumulation (fused for R >= 4 in double: SellOperator::fuses_accumulation).
    double* const acc_out = std::is_same_v<T, double> && R >= 4 && ops.accumulate != nullptr
                                ? reinterpret_cast<double*>(ops.accumulate->data())
                                : nullptr;

    // Float rows at R >= 2: the float epilogue (FloatRowEpilogue), scale and -shift dithered
    // over the rows (the matrix holds the whole diagonal).
    constexpr bool kFloatRows = std::is_same_v<T, float> && (R == 2 || R == 4 || R % 8 == 0);
    const DitheredFloat s_dither = dithered_float(scale), d_dither = dithered_float(-shift);
    const float beta_f = static_cast<float>(beta);

    const int num_threads = omp_get_max_threads();
    std::vector<double> partial(static_cast<size_t>(num_threads) * 3 * R, 0.0);

#pragma omp parallel num_threads(num_threads)
    {
        // Thread-private dot sums (stack, not `partial`: two threads summing into one
        // cache line made every row a false-sharing miss, R = 1 at 9 GB/s instead of 25).
        double txx[R] = {}, tyr[R] = {}, tyi[R] = {};
        // R = 1: the dots of consecutive-row groups as vector lanes in registers for the
        // whole sweep (DotLanes), reduced once at the end.
        DotLanes lanes;
        // T = float: the group's sums pass through this array of the thread (as a local of the
        // range callback, like the double sums below, GCC keeps the float sums in the local's stack slot).
        alignas(64) T acc_float[std::is_same_v<T, float> ? 2 * G * R : 1];
        std::conditional_t<kFloatRows, FloatRowEpilogue<kFloatRows ? R : 2>, char> float_rows{};

        // Without a schedule: the static split, contiguous chunk ranges per thread, the same
        // split as the builder's fill (first touch) and the vectors' rows stay in one thread's
        // caches. dynamic/guided (chunk 64) measured 3-6 % slower at R = 1 and equal at R = 32.
        // With a ChunkSchedule (lattice_chunk_schedule: the same per-thread chunk range,
        // visited in y tiles, x planes inner) see docs/performance.md, "Kernel design measurements".
        // The chunk loop is inside the range callback with every operand a local: per chunk
        // there is no call, and the stores to y cannot alias the scale or the pointers.
        for_each_scheduled_range(schedule, num_chunks, [&](local_index begin, local_index end) {
            const std::int64_t* const cs = chunk_start;
            const local_index* const cl = chunk_length;
            const local_index* const cc = cols;
            const T* const cv = vals;
            const local_index* const rs = row_of_slot;
            const local_index* const fr = a.chunk_first_row;
            const T* const xb = x;
            T* const yb = y;
            const int ch_rows = c;  // a local: stores to y cannot change it (it was reloaded per chunk)
            // T = double: the group's sums are a local of the range callback, so the compiler sees
            // that the stores to y cannot alias them and keeps them in registers from the entry loop
            // to the epilogue (captured from the parallel region, the complex R = 1 group was an
            // out-of-line call and every sum went through the stack: docs/performance.md, "SELL
            // R = 1: the group sums in registers").
            alignas(64) T ac_local[std::is_same_v<T, double> ? 2 * G * R : 1];
            T* const ac = std::is_same_v<T, double> ? ac_local : acc_float;
            const double sc = scale, sh = shift, be = beta;
            const bool wd = want_dots;
            const simd::v8d sv = simd::v8d{} + sc, dv = simd::v8d{} - sh;
            DotLanes dl = lanes;
            // R = 1: the chunk starts as a running sum and one first row per chunk
            // (chunk_first_row) place the sums, so chunk_start and row_of_slot (5 of the ~100
            // bytes per row of graphene with real values) are not streamed; row_of_slot is
            // read only for chunks of σ-sorted rows.
            std::int64_t next_base = cs[begin];
            for (local_index ch = begin; ch < end; ++ch) {
                const std::int64_t base = R == 1 ? next_base : cs[ch];
                const local_index width = cl[ch];
                next_base = base + static_cast<std::int64_t>(width) * ch_rows;
                const local_index first_row = R == 1 ? fr[ch] : -1;
                for (int s0 = 0; s0 < ch_rows; s0 += G) {
                    constexpr int per_entry = Real ? 1 : 2;  // reals per stored value
                    constexpr int row_bytes = 2 * R * static_cast<int>(sizeof(T));
                    if constexpr (row_bytes >= kPrefetchNarrowRowBytes)
                        if (row_bytes >= kPrefetchRowBytes || width <= kPrefetchNarrowWidth)
                            prefetch_rows_ahead<T, R, G>(cc + base + s0, ch_rows, width,
                                                         rs + static_cast<size_t>(ch) * ch_rows + s0, xb, yb);
                    if constexpr (std::is_same_v<T, double>)
                        simd::rows_times_block<R, G, true, Real>(width, cv + per_entry * (base + s0), 1, ch_rows,
                                                                 cc + base + s0, 1, ch_rows, xb, ac);
                    else
                        simd::rows_times_block_single<R, G, Real>(width, cv + per_entry * (base + s0), 1, ch_rows,
                                                                  cc + base + s0, 1, ch_rows, xb, ac);
                    const local_index* slot_rows = rs + static_cast<size_t>(ch) * ch_rows + s0;
                    if constexpr (R == 1) {
                        if (first_row >= 0) {
                            // G consecutive rows: their sums, x and y are each 2 G contiguous
                            // values in the same layout, G / 4 vectors of 4 complex.
                            const std::int64_t r0 = 2 * (static_cast<std::int64_t>(first_row) + s0);
#pragma GCC unroll 8
                            for (int v = 0; v < G / 4; ++v)
                                finish_vector(ac + 8 * v, xb + r0 + 8 * v, yb + r0 + 8 * v, sv, dv, be, wd, dl);
                            continue;
                        }
#if defined(__AVX512F__)
                        if constexpr (std::is_same_v<T, double>) {
                            if (rows_are_valid<G>(slot_rows)) {
#pragma GCC unroll 8
                                for (int v = 0; v < G / 4; ++v) {
                                    const local_index* sr = slot_rows + 4 * v;
                                    const std::ptrdiff_t rows4[4] = {sr[0], sr[1], sr[2], sr[3]};
                                    finish_vector_rows(ac + 8 * v, xb, yb, rows4, sv, dv, be, wd, dl);
                                }
                                continue;
                            }
                        }
#endif
                    }
                    for (int g = 0; g < G; ++g) {
                        const local_index row = slot_rows[g];
                        if (row < 0) continue;  // padding slot of the last chunk
                        if constexpr (kFloatRows) {
                            float_rows.row(ac + 2 * g * R, xb + 2 * static_cast<std::int64_t>(row) * R,
                                           yb + 2 * static_cast<std::int64_t>(row) * R, s_dither.at(row),
                                           d_dither.at(row), beta_f, be != 0.0, wd);
                            continue;
                        }
                        if constexpr (std::is_same_v<T, double> && R >= 4) {
                            if (acc_out != nullptr) {
                                finish_row_accumulate<R>(ac + 2 * g * R, xb + 2 * static_cast<std::int64_t>(row) * R,
                                                         yb + 2 * static_cast<std::int64_t>(row) * R, R, sc, sh, be, wd,
                                                         txx, tyr, tyi, acc_out + 2 * static_cast<std::int64_t>(row) * R,
                                                         ops.acc_old, ops.acc_x, ops.acc_new);
                                continue;
                            }
                        }
                        finish_row<R>(ac + 2 * g * R, xb + 2 * static_cast<std::int64_t>(row) * R,
                                      yb + 2 * static_cast<std::int64_t>(row) * R, R, sc, sh, be, wd, txx, tyr, tyi);
                    }
                }
            }
            lanes = dl;
        });
        if constexpr (R == 1) add_dot_lanes<1>(lanes, txx, tyr, tyi);
        if constexpr (kFloatRows) float_rows.add_to(txx, tyr, tyi);
        store_thread_dots(partial, R, txx, tyr, tyi);
    }
    if (want_dots) collect_dots(partial, num_threads, R, dots);
}

}  // namespace topokpm::numerics::kernels::cpu
