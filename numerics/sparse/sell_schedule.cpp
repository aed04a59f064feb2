#include "numerics/sparse/sell_schedule.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "runtime/base/error.hpp"

namespace topokpm::numerics {

ChunkRange static_chunk_range(local_index n, int num_threads, int thread)
{
    TOPOKPM_REQUIRE(num_threads >= 1 && thread >= 0 && thread < num_threads && n >= 0, "static_chunk_range(", n, ", ",
                    num_threads, ", ", thread, ")");
    // libgomp's split for schedule(static) without a chunk size (loop.c, gomp_iter_static_next).
    local_index q = n / num_threads;
    local_index t = n % num_threads;
    if (thread < t) {
        ++q;
        t = 0;
    }
    const local_index first = q * thread + t;
    return {first, first + q};
}

// Why the rounded segments partition the chunks exactly once.
// Thread t owns the chunks [c0, c1) of the static split, i.e. (apart from the σ windows
// that straddle c0 C or c1 C, which stay split as in the builder's static fill) the rows
// [R0, R1) = [c0 C, min(c1 C, N)). Its segments, sorted by their first row, are
// [b_1, e_1), ..., [b_k, e_k) with b_1 = R0, e_i = b_{i+1}, e_k = R1 (checked below; empty
// segments are ignored). Every segment end r is mapped to a chunk boundary by ONE function
//     g(R0) = c0,  g(R1) = c1,  otherwise g(r) = clamp(round_W(r), R0, R1) / C  (R1 -> c1),
// round_W = the nearest multiple of the window W (W is a multiple of C, so the result is a
// chunk boundary). g is non-decreasing on [R0, R1] and hits c0 and c1 at the ends, so the
// images [g(b_i), g(e_i)) are consecutive: g(e_i) = g(b_{i+1}); some may be empty. Their
// union is [g(R0), g(R1)) = [c0, c1) and no two overlap. The threads' [c0, c1) partition
// [0, num_chunks) (static_chunk_range), so every chunk is visited exactly once, in
// whatever order the segments come in. Merging a range into its predecessor when it
// starts where that one ends changes nothing. Inside (c0, c1) the boundaries are window
// boundaries, where the chunks hold exactly the rows of their windows (σ sorts only inside
// windows), so a chunk range holds exactly the rows of its rounded segment.
ChunkSchedule build_from_row_segments(const SellStructure& matrix, const std::vector<std::vector<RowSegment>>& segments)
{
    const int num_threads = static_cast<int>(segments.size());
    TOPOKPM_REQUIRE(num_threads >= 1, "a chunk schedule needs at least one thread");
    const local_index n = matrix.num_rows();
    const local_index c = matrix.chunk_height();
    const local_index num_chunks = matrix.num_chunks();
    const std::int64_t window = std::max<std::int64_t>(c, matrix.sigma());  // sigma() is 1 or a multiple of C

    ChunkSchedule s;
    s.num_threads = num_threads;
    s.num_chunks = num_chunks;
    s.thread_begin.push_back(0);
    for (int t = 0; t < num_threads; ++t) {
        const ChunkRange own = static_chunk_range(num_chunks, num_threads, t);
        const local_index r0 = std::min<local_index>(n, static_cast<local_index>(std::int64_t(own.begin) * c));
        const local_index r1 = std::min<local_index>(n, static_cast<local_index>(std::int64_t(own.end) * c));

        std::vector<RowSegment> sorted;
        for (const RowSegment& seg : segments[t])
            if (seg.end > seg.begin) sorted.push_back(seg);
        std::sort(sorted.begin(), sorted.end(), [](const RowSegment& a, const RowSegment& b) { return a.begin < b.begin; });
        local_index expect = r0;
        for (const RowSegment& seg : sorted) {
            TOPOKPM_REQUIRE(seg.begin == expect, "thread ", t, ": row segments do not partition its rows [", r0, ", ",
                            r1, "): gap or overlap at row ", expect, " (next segment [", seg.begin, ", ", seg.end, "))");
            expect = seg.end;
        }
        TOPOKPM_REQUIRE(expect == r1, "thread ", t, ": row segments end at ", expect, ", its rows at ", r1);

        const auto to_chunk = [&](local_index r) -> local_index {
            if (r == r0) return own.begin;
            if (r == r1) return own.end;
            std::int64_t rr = (static_cast<std::int64_t>(r) + window / 2) / window * window;
            rr = std::clamp<std::int64_t>(rr, r0, r1);
            if (rr == r1) return own.end;
            if (rr == r0) return own.begin;
            return static_cast<local_index>(rr / c);
        };
        for (const RowSegment& seg : segments[t]) {
            if (seg.end <= seg.begin) continue;
            const ChunkRange cr{to_chunk(seg.begin), to_chunk(seg.end)};
            if (cr.end <= cr.begin) continue;
            if (s.ranges.size() > s.thread_begin.back() && s.ranges.back().end == cr.begin)
                s.ranges.back().end = cr.end;
            else
                s.ranges.push_back(cr);
        }
        s.thread_begin.push_back(s.ranges.size());
    }
#ifndef NDEBUG
    const std::string problem = check_chunk_schedule(s);
    TOPOKPM_REQUIRE(problem.empty(), "chunk schedule: ", problem);
#endif
    return s;
}

int lattice_tile_cells(const LatticeRowOrder& lattice, int block_width, const TileOptions& options)
{
    const int ny = std::max(1, lattice.ny);
    const int s = std::max(1, lattice.states_per_cell);
    if (options.tile_cells > 0) return std::min(options.tile_cells, ny);
    if (block_width <= 4) return ny;  // x of a plane triple is <= 3 x 4 x 16 bytes per state: fits
    const double cell_bytes = 16.0 * s * block_width;  // x rows of one cell
    const double triple = 3.0 * cell_bytes;
    if (triple * ny <= static_cast<double>(options.cache_bytes_per_thread)) return ny;
    int ty = std::max(1, static_cast<int>(static_cast<double>(options.cache_bytes_per_thread) / triple));
    // Equal tiles: the fewest tiles of at most ty cells, then their common size.
    const int tiles = (ny + ty - 1) / ty;
    ty = (ny + tiles - 1) / tiles;
    return ty;
}

ChunkSchedule lattice_chunk_schedule(const SellStructure& matrix, const LatticeRowOrder& lattice, int block_width,
                                     int num_threads, const TileOptions& options)
{
    TOPOKPM_REQUIRE(lattice.nx >= 1 && lattice.ny >= 1 && lattice.states_per_cell >= 1 &&
                        static_cast<std::int64_t>(lattice.nx) * lattice.ny * lattice.states_per_cell ==
                            matrix.num_rows(),
                    "lattice ", lattice.nx, " x ", lattice.ny, " cells x ", lattice.states_per_cell,
                    " states does not match the matrix's ", matrix.num_rows(), " rows");
    TOPOKPM_REQUIRE(num_threads >= 1 && block_width >= 1, "lattice_chunk_schedule: ", num_threads, " threads, R = ",
                    block_width);
    const int ty = lattice_tile_cells(lattice, block_width, options);
    const std::int64_t cell = lattice.states_per_cell;
    const std::int64_t plane = cell * lattice.ny;
    const local_index n = matrix.num_rows();
    const local_index c = matrix.chunk_height();

    std::vector<std::vector<RowSegment>> segments(num_threads);
    for (int t = 0; t < num_threads; ++t) {
        const ChunkRange own = static_chunk_range(matrix.num_chunks(), num_threads, t);
        const std::int64_t r0 = std::min<std::int64_t>(n, std::int64_t(own.begin) * c);
        const std::int64_t r1 = std::min<std::int64_t>(n, std::int64_t(own.end) * c);
        if (r1 <= r0) continue;
        if (ty >= lattice.ny) {
            segments[t].push_back({static_cast<local_index>(r0), static_cast<local_index>(r1)});
            continue;
        }
        const std::int64_t x0 = r0 / plane, x1 = (r1 - 1) / plane;  // planes touched, inclusive
        for (int y0 = 0; y0 < lattice.ny; y0 += ty) {                 // y tiles outer
            const int y1 = std::min(lattice.ny, y0 + ty);
            for (std::int64_t x = x0; x <= x1; ++x) {  // x planes inner: x-1, x, x+1 stay in cache
                const std::int64_t b = std::max(r0, x * plane + cell * y0);
                const std::int64_t e = std::min(r1, x * plane + cell * y1);
                if (e > b) segments[t].push_back({static_cast<local_index>(b), static_cast<local_index>(e)});
            }
        }
    }
    ChunkSchedule s = build_from_row_segments(matrix, segments);
    s.tile_cells = ty >= lattice.ny ? 0 : ty;
    std::ostringstream note;
    if (s.tile_cells == 0)
        note << "static (R = " << block_width << ": x planes fit the cache budget)";
    else
        note << "y tiles of " << ty << " cells (" << cell * ty << " rows) x " << lattice.nx << " planes, R = "
             << block_width;
    s.note = note.str();
    return s;
}

std::string check_chunk_schedule(const ChunkSchedule& s)
{
    std::ostringstream out;
    if (s.num_threads < 1) return "no threads";
    if (s.thread_begin.size() != static_cast<std::size_t>(s.num_threads) + 1 || s.thread_begin.front() != 0 ||
        s.thread_begin.back() != s.ranges.size())
        return "inconsistent thread_begin table";
    for (int t = 0; t < s.num_threads; ++t)
        if (s.thread_begin[t] > s.thread_begin[t + 1]) return "thread_begin not monotone";
    std::vector<unsigned char> seen(static_cast<std::size_t>(std::max<local_index>(0, s.num_chunks)), 0);
    for (const ChunkRange& r : s.ranges) {
        if (r.begin < 0 || r.end > s.num_chunks || r.begin >= r.end) {
            out << "bad range [" << r.begin << ", " << r.end << ") of " << s.num_chunks << " chunks";
            return out.str();
        }
        for (local_index ch = r.begin; ch < r.end; ++ch) {
            if (seen[ch]) {
                out << "chunk " << ch << " visited twice";
                return out.str();
            }
            seen[ch] = 1;
        }
    }
    for (local_index ch = 0; ch < s.num_chunks; ++ch)
        if (!seen[ch]) {
            out << "chunk " << ch << " never visited";
            return out.str();
        }
    return {};
}

}  // namespace topokpm::numerics
