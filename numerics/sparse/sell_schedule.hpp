#pragma once
/// @file sell_schedule.hpp
/// The order in which the threads of a SELL-C-σ sweep visit the chunks (issue 4, cache
/// blocking). A ChunkSchedule holds, per thread, an ordered list of chunk ranges
/// [begin, end); together they cover every chunk of the matrix exactly once. The kernels
/// iterate it with for_each_scheduled_chunk() (numerics/cpu/chunk_schedule.hpp) inside
/// their `omp parallel` region; without a schedule they use `omp for schedule(static)`.
///
/// Why: the ti rows are x slowest (models.md §2), so the x hops of row i reach the rows
/// one x plane (Ny Nz 4 rows) before and after it. In plain row order a thread needs the
/// x-vector rows of the planes x-1, x, x+1 in cache to read x only once per sweep: at
/// R = 32 that is 3 x 5 MiB per thread for ti 64x64x40: 30 MiB for 2 threads, which does
/// not stay in a 32 MiB L3 shared with other tenants (the Zen 4 VM of docs/performance.md).
/// (On a 2-vCPU Xeon with a 260 MiB L3 the tiled order measured equal to the untiled one
/// when the machine was quiet and 10-20 % faster at R = 32 while other VMs loaded it;
/// docs/performance.md, "Kernel design measurements", has the numbers.)
/// lattice_chunk_schedule() keeps each thread on its own contiguous rows (the same chunk
/// range as the static split, so the matrix and vectors stay where the builder's fill
/// placed them) but visits them in y tiles: for each tile of Ty cells in y (outer), for
/// each x plane (inner), the rows (x, y in the tile, all states). The working set is
/// then ~3 Ty S R 16 bytes of x per thread instead of 3 Ny S R 16.
///
/// Rounding to the σ window: SELL sorts rows only inside windows of W = σ rows (σ a
/// multiple of C; W = C when σ = 1), so the chunks [w W / C, (w+1) W / C) hold exactly the
/// rows [w W, (w+1) W). A row segment whose ends are multiples of W (or N) is therefore
/// exactly a chunk range. Segment ends inside a thread's range are rounded to the nearest
/// multiple of W and clamped into the range; the thread's own ends (chunk boundaries of
/// the static split) are kept. See build_from_row_segments() for the proof that the
/// rounded segments still partition the chunks.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "numerics/base/types.hpp"
#include "numerics/sparse/sell_matrix.hpp"

namespace topokpm::numerics {

/// Rows row = s + S (y + Ny x), s = 0..S-1 the states of the in-plane cell (x, y): ti
/// (S = 4 Nz, s = o + 4 z) and graphene (S = 2, x = m, y = n) in the canonical orders of
/// models.md §2-3. Mirrors numerics::PlaneWaveLattice (numerics/kpm/block_trace.hpp; the
/// same fields, so `LatticeRowOrder{p.nx, p.ny, p.states_per_cell}` converts).
struct LatticeRowOrder {
    int nx = 0, ny = 0;
    int states_per_cell = 0;  ///< S
};

/// Half-open ranges of chunk indices or of rows.
struct ChunkRange {
    local_index begin = 0, end = 0;
};
struct RowSegment {
    local_index begin = 0, end = 0;
};

/// Per thread an ordered list of chunk ranges (see the file comment).
struct ChunkSchedule {
    int num_threads = 0;
    local_index num_chunks = 0;
    /// The ranges of thread t are ranges[thread_begin[t] .. thread_begin[t + 1]).
    std::vector<ChunkRange> ranges;
    std::vector<std::size_t> thread_begin;  ///< size num_threads + 1
    /// Informational: the y tile in cells (0 = not tiled) and what the builder decided.
    int tile_cells = 0;
    std::string note;

    const ChunkRange* begin(int thread) const { return ranges.data() + thread_begin[thread]; }
    const ChunkRange* end(int thread) const { return ranges.data() + thread_begin[thread + 1]; }
};

/// Chunks [first, last) of thread t of `num_threads` under `omp for schedule(static)` over
/// n iterations, as libgomp splits them: q = n / T, the first n % T threads one more.
/// (The OpenMP standard leaves the exact split to the implementation; the tests check it
/// against the runtime.)
ChunkRange static_chunk_range(local_index n, int num_threads, int thread);

/// Generic builder: thread t visits the row segments segments[t] in their order; each thread's
/// segments must partition its rows of the static split (rows [C first, min(C last, N)) of
/// static_chunk_range()), in any order. Ends are rounded to the σ window as described in
/// the file comment; empty ranges are dropped and consecutive ones merged.
/// @throws DimensionMismatch when the segments do not partition the rows
ChunkSchedule build_from_row_segments(const SellStructure& matrix, const std::vector<std::vector<RowSegment>>& segments);

/// Cache budget and override for lattice_chunk_schedule().
struct TileOptions {
    /// Bytes of x-vector rows one thread may keep for the x-1, x, x+1 planes of a tile.
    /// Measured on the 2-core Zen 4 VM (32 MiB L3 shared with other tenants, 1 MiB L2 per
    /// core), ti 64x64x40, R = 32: the scan is in docs/performance.md, "Kernel design measurements".
    std::size_t cache_bytes_per_thread = std::size_t(2) << 20;
    /// > 0: the tile in cells of y regardless of the budget (ignored if >= Ny; spmmv-bench's
    /// sell-<C>t<Ty> operators set it for experiments). 0: from the budget.
    int tile_cells = 0;
};

/// The tile Ty (cells of y) lattice_chunk_schedule() uses for block width R; Ny (no tiling)
/// when three planes fit the budget or R <= 4.
int lattice_tile_cells(const LatticeRowOrder& lattice, int block_width, const TileOptions& options = {});

/// The cache-blocked order for lattice-ordered rows (file comment): thread t keeps the chunk
/// range of the static split and visits its rows y tile by y tile (outer), x plane by x
/// plane (inner). Degrades to the static split when lattice_tile_cells() == Ny.
/// @throws DimensionMismatch when nx ny S != matrix.num_rows()
ChunkSchedule lattice_chunk_schedule(const SellStructure& matrix, const LatticeRowOrder& lattice, int block_width,
                                     int num_threads, const TileOptions& options = {});

/// Empty string when the schedule covers every chunk of [0, num_chunks) exactly once and
/// its tables are consistent; otherwise what is wrong (for assertions and tests).
std::string check_chunk_schedule(const ChunkSchedule& schedule);

}  // namespace topokpm::numerics
