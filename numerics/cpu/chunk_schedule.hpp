#pragma once
/// @file chunk_schedule.hpp
/// How a CPU SELL kernel visits its chunks inside its `omp parallel` region: in the order of
/// a ChunkSchedule (numerics/sparse/sell_schedule.hpp: per thread an ordered list of chunk
/// ranges, e.g. the y-tiled order of lattice_chunk_schedule()), or, without one, as
/// `omp for schedule(static)`, the split of SellMatrix::build's fill.
///
/// Use (every thread of the team must call it, like an orphaned `omp for`):
///
///     #pragma omp parallel
///     {
///         ... thread-private accumulators ...
///         for_each_scheduled_chunk(schedule, a.num_chunks(), [&](local_index ch) { ... });
///         ... store the thread's partial sums ...
///     }
///
/// The schedule is used only when it was built for this team size and this matrix's chunk
/// count; otherwise (a nested region, a changed OMP_NUM_THREADS) the static split runs, so
/// the result is always right. There is no barrier at the end: the enclosing region's end
/// is one. Within a thread, chunks are visited in schedule order, so per-thread
/// sums (the dots) are deterministic for a fixed schedule and thread count.
///
/// NUMA: the schedule keeps each thread on the chunk range of the static split (only the
/// order inside it changes), so the rows a thread sweeps are the ones the builder's static
/// fill touched first. This machine has one NUMA node, so the first-touch effect cannot be
/// measured here.

#include <omp.h>

#include "numerics/sparse/sell_schedule.hpp"

namespace topokpm::numerics::kernels::cpu {

/// True when `schedule` can drive the current team over `num_chunks` chunks.
inline bool schedule_applies(const ChunkSchedule* schedule, local_index num_chunks)
{
    return schedule != nullptr && schedule->num_threads == omp_get_num_threads() &&
           schedule->num_chunks == num_chunks;
}

/// Calls fn(begin, end) for the calling thread's chunk ranges, in order.
template <class Fn>
inline void for_each_scheduled_range(const ChunkSchedule* schedule, local_index num_chunks, Fn&& fn)
{
    if (schedule_applies(schedule, num_chunks)) {
        const int t = omp_get_thread_num();
        for (const ChunkRange* r = schedule->begin(t); r != schedule->end(t); ++r) fn(r->begin, r->end);
    } else {
        // The split of `omp for schedule(static)` (libgomp's, as SellMatrix::build's fill;
        // sell_schedule_test checks it against the runtime): one contiguous range per thread.
        const ChunkRange r = static_chunk_range(num_chunks, omp_get_num_threads(), omp_get_thread_num());
        if (r.end > r.begin) fn(r.begin, r.end);
    }
}

/// Calls fn(ch) for every chunk of the calling thread, in schedule order.
template <class Fn>
inline void for_each_scheduled_chunk(const ChunkSchedule* schedule, local_index num_chunks, Fn&& fn)
{
    for_each_scheduled_range(schedule, num_chunks, [&](local_index begin, local_index end) {
        for (local_index ch = begin; ch < end; ++ch) fn(ch);
    });
}

}  // namespace topokpm::numerics::kernels::cpu
