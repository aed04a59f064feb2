// The cache-blocked SELL sweep order (numerics/sparse/sell_schedule.hpp,
// numerics/cpu/chunk_schedule.hpp): every schedule covers every chunk exactly once, keeps
// each thread on the static split's chunk range, and the tiled sweep equals the untiled
// one to rounding (y and both dots) for several widths and thread counts.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/cpu/chunk_schedule.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/sparse/sell_schedule.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "numerics/spmmv/sell_kernels.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/random_source.hpp"

using namespace topokpm;
using namespace topokpm::numerics;
using topokpm::testing::RandomSparseSource;

namespace {

/// Restores the OpenMP thread count at the end of a test.
struct ThreadGuard {
    int saved = omp_get_max_threads();
    ~ThreadGuard() { omp_set_num_threads(saved); }
};

std::shared_ptr<SellMatrix> random_matrix(global_index n, int c, int sigma, std::uint64_t seed = 7)
{
    const RandomSparseSource src(n, seed, 0.1, 0.2);
    return std::make_shared<SellMatrix>(SellMatrix::build(src, 0, n, {c, sigma}));
}

std::unique_ptr<hamiltonians::Model> ti_model(int nx, int ny, int nz)
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = nx;
    p.ny = ny;
    p.nz = nz;
    p.disorder = 0.5;
    return hamiltonians::make_model(p);
}

std::unique_ptr<hamiltonians::Model> graphene_model(int nx, int ny)
{
    hamiltonians::ModelParams p;
    p.name = "graphene";
    p.nx = nx;
    p.ny = ny;
    p.disorder = 0.3;
    return hamiltonians::make_model(p);
}

/// The chunk ranges of every thread are inside its static-split range.
void expect_inside_static_split(const ChunkSchedule& s)
{
    for (int t = 0; t < s.num_threads; ++t) {
        const ChunkRange own = static_chunk_range(s.num_chunks, s.num_threads, t);
        for (const ChunkRange* r = s.begin(t); r != s.end(t); ++r) {
            EXPECT_GE(r->begin, own.begin) << "thread " << t;
            EXPECT_LE(r->end, own.end) << "thread " << t;
        }
    }
}

/// Range ends that are not a thread's own ends are multiples of the σ window.
void expect_window_aligned(const ChunkSchedule& s, const SellMatrix& m)
{
    const local_index window_chunks = std::max(m.chunk_height(), m.sigma()) / m.chunk_height();
    for (int t = 0; t < s.num_threads; ++t) {
        const ChunkRange own = static_chunk_range(s.num_chunks, s.num_threads, t);
        for (const ChunkRange* r = s.begin(t); r != s.end(t); ++r)
            for (const local_index b : {r->begin, r->end})
                if (b != own.begin && b != own.end) {
                    EXPECT_EQ(b % window_chunks, 0) << "boundary chunk " << b;
                }
    }
}

}  // namespace

TEST(SellSchedule, StaticChunkRangeIsTheOpenMpStaticSplit)
{
    for (const int threads : {1, 2, 3, 4, 7}) {
        for (const local_index n : {0, 1, 2, 5, 17, 64, 101}) {
            std::vector<int> owner(n, -1);
#pragma omp parallel num_threads(threads)
            {
#pragma omp for schedule(static)
                for (local_index i = 0; i < n; ++i) owner[i] = omp_get_thread_num();
            }
            int team = 1;
#pragma omp parallel num_threads(threads)
            {
#pragma omp single
                team = omp_get_num_threads();
            }
            if (team != threads) GTEST_SKIP() << "the runtime gave " << team << " threads instead of " << threads;
            for (int t = 0; t < threads; ++t) {
                const ChunkRange r = static_chunk_range(n, threads, t);
                for (local_index i = 0; i < n; ++i)
                    EXPECT_EQ(owner[i] == t, i >= r.begin && i < r.end) << "n " << n << " T " << threads << " i " << i;
            }
        }
    }
}

TEST(SellSchedule, CheckerFindsMissingAndDoubleChunks)
{
    ChunkSchedule s;  // the static split of 10 chunks over 2 threads: [0, 5), [5, 10)
    s.num_threads = 2;
    s.num_chunks = 10;
    s.ranges = {{0, 5}, {5, 10}};
    s.thread_begin = {0, 1, 2};
    EXPECT_EQ(check_chunk_schedule(s), "");
    s.ranges[0].end -= 1;  // chunk 4 lost
    EXPECT_NE(check_chunk_schedule(s), "");
    s.ranges[0].end += 2;  // chunk 5 twice
    EXPECT_NE(check_chunk_schedule(s), "");
}

TEST(SellSchedule, LatticeScheduleCoversEveryChunkOnce)
{
    struct Case {
        int nx, ny, s, c, sigma, tile;
    };
    // Non-divisible sizes on purpose: rows not a multiple of C, tiles not dividing Ny,
    // tile segments not a multiple of the window, σ = 1 and σ = N-ish, C = 1 (CRS).
    const Case cases[] = {
        {5, 12, 12, 8, 32, 3},  {4, 7, 6, 8, 32, 2},   {3, 10, 5, 4, 1, 3},  {6, 9, 2, 32, 256, 2},
        {2, 5, 7, 4, 8, 1},     {1, 13, 3, 4, 16, 4},  {7, 3, 4, 1, 1, 1},   {8, 16, 2, 8, 1024, 5},
        {3, 4, 9, 16, 64, 3},   {10, 10, 2, 4, 8, 10},
    };
    for (const Case& k : cases) {
        const auto m = random_matrix(static_cast<global_index>(k.nx) * k.ny * k.s, k.c, k.sigma);
        const LatticeRowOrder lat{k.nx, k.ny, k.s};
        for (const int threads : {1, 2, 3, 5}) {
            for (const int r : {1, 8, 32}) {
                TileOptions o;
                o.tile_cells = k.tile;
                const ChunkSchedule s = lattice_chunk_schedule(*m, lat, r, threads, o);
                SCOPED_TRACE("lattice " + std::to_string(k.nx) + "x" + std::to_string(k.ny) + "x" +
                             std::to_string(k.s) + " C " + std::to_string(k.c) + " sigma " + std::to_string(k.sigma) +
                             " tile " + std::to_string(k.tile) + " threads " + std::to_string(threads));
                EXPECT_EQ(check_chunk_schedule(s), "");
                EXPECT_EQ(s.num_threads, threads);
                EXPECT_EQ(s.num_chunks, m->num_chunks());
                expect_inside_static_split(s);
                expect_window_aligned(s, *m);
            }
        }
    }
}

TEST(SellSchedule, GenericSegmentsInAnyOrderAreRoundedToWindows)
{
    const auto m = random_matrix(1000, 8, 32);  // 125 chunks, windows of 4 chunks
    std::mt19937 rng(3);
    for (const int threads : {1, 2, 3}) {
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<std::vector<RowSegment>> seg(threads);
            for (int t = 0; t < threads; ++t) {
                const ChunkRange own = static_chunk_range(m->num_chunks(), threads, t);
                const local_index r0 = std::min<local_index>(1000, own.begin * 8);
                const local_index r1 = std::min<local_index>(1000, own.end * 8);
                std::vector<local_index> cuts{r0, r1};
                std::uniform_int_distribution<local_index> any(r0, r1);
                for (int k = 0; k < 6; ++k) cuts.push_back(any(rng));
                std::sort(cuts.begin(), cuts.end());
                for (size_t k = 0; k + 1 < cuts.size(); ++k) seg[t].push_back({cuts[k], cuts[k + 1]});
                std::shuffle(seg[t].begin(), seg[t].end(), rng);
            }
            const ChunkSchedule s = build_from_row_segments(*m, seg);
            EXPECT_EQ(check_chunk_schedule(s), "") << "threads " << threads << " trial " << trial;
            expect_inside_static_split(s);
            expect_window_aligned(s, *m);
        }
    }
}

TEST(SellSchedule, RejectsSegmentsThatDoNotPartitionTheRows)
{
    const auto m = random_matrix(100, 4, 8);
    EXPECT_THROW(build_from_row_segments(*m, {{{0, 40}, {50, 100}}}), DimensionMismatch);  // gap
    EXPECT_THROW(build_from_row_segments(*m, {{{0, 60}, {50, 100}}}), DimensionMismatch);  // overlap
    EXPECT_THROW(build_from_row_segments(*m, {{{0, 100}}, {}}), DimensionMismatch);        // thread 0 owns 0..52
    EXPECT_NO_THROW(build_from_row_segments(*m, {{{0, 52}}, {{52, 100}}}));
    EXPECT_THROW(lattice_chunk_schedule(*m, {3, 3, 11}, 32, 2), DimensionMismatch);  // 99 != 100 rows
}

TEST(SellSchedule, TiledOrderIsYTilesOuterXPlanesInner)
{
    // ti-like lattice 4 x 8 cells x 32 states, C = 8, σ = 32: a cell is one window, so the
    // tiles are exact. 2 threads: planes 0-1 and 2-3.
    const auto m = random_matrix(4 * 8 * 32, 8, 32);
    TileOptions o;
    o.tile_cells = 2;
    const ChunkSchedule s = lattice_chunk_schedule(*m, {4, 8, 32}, 32, 2, o);
    EXPECT_EQ(s.tile_cells, 2);
    ASSERT_EQ(s.thread_begin[1], 8u);  // 4 tiles x 2 planes
    // Thread 0: (tile 0, x 0), (tile 0, x 1), (tile 1, x 0), ... in chunks of 4 rows per cell.
    const local_index cell = 32 / 8, plane = 8 * cell;
    for (int j = 0; j < 4; ++j)
        for (int x = 0; x < 2; ++x) {
            const ChunkRange r = s.ranges[2 * j + x];
            EXPECT_EQ(r.begin, x * plane + 2 * j * cell);
            EXPECT_EQ(r.end, x * plane + 2 * (j + 1) * cell);
        }
    EXPECT_EQ(s.ranges[8].begin, 2 * plane);  // thread 1 starts at its own first plane
}

TEST(SellSchedule, SmallWidthsAndSmallPlanesAreNotTiled)
{
    const LatticeRowOrder ti{64, 64, 160};  // ti 64x64x40
    EXPECT_EQ(lattice_tile_cells(ti, 1), 64);
    EXPECT_EQ(lattice_tile_cells(ti, 4), 64);
    const int t32 = lattice_tile_cells(ti, 32);
    EXPECT_LT(t32, 64);
    EXPECT_GE(t32, 1);
    EXPECT_LE(3.0 * t32 * 160 * 32 * 16, static_cast<double>(TileOptions{}.cache_bytes_per_thread));
    EXPECT_EQ(lattice_tile_cells({120, 120, 2}, 32), 120);  // graphene plane: 3 x 120 KiB
    TileOptions o;
    o.tile_cells = 5;
    EXPECT_EQ(lattice_tile_cells(ti, 1, o), 5);
    o.tile_cells = 500;
    EXPECT_EQ(lattice_tile_cells(ti, 32, o), 64);
    // Untiled: one range per thread, the static split.
    const auto m = random_matrix(6 * 5 * 4, 4, 8);
    const ChunkSchedule s = lattice_chunk_schedule(*m, {6, 5, 4}, 1, 3);
    EXPECT_EQ(s.tile_cells, 0);
    ASSERT_EQ(s.ranges.size(), 3u);
    for (int t = 0; t < 3; ++t) {
        EXPECT_EQ(s.ranges[t].begin, static_chunk_range(m->num_chunks(), 3, t).begin);
        EXPECT_EQ(s.ranges[t].end, static_chunk_range(m->num_chunks(), 3, t).end);
    }
}

namespace {

struct SweepResult {
    BlockVector y;
    DotSums dots;
};

SweepResult sweep(const SellMatrix& m, const ChunkSchedule* schedule, int r)
{
    const global_index n = m.num_rows();
    BlockVector x(n, r);
    SweepResult out{BlockVector(n, r), {}};
    fill_random_phase_vectors(x, 11, 0, n);
    fill_random_phase_vectors(out.y, 12, 0, n);
    const AugmentedOps ops{0.3, 0.1, -1.0, true};
    kernels::cpu::sell_spmmv(m, x.data(), out.y.data(), r, ops, &out.dots, schedule);
    return out;
}

/// max |a - b| / max |b| over y, and the dots relative to their scales.
void expect_same_sweep(const SweepResult& a, const SweepResult& b, const std::string& what)
{
    ASSERT_EQ(a.y.num_rows(), b.y.num_rows());
    const int r = a.y.num_cols();
    double diff = 0, scale = 0;
    for (global_index i = 0; i < a.y.num_rows(); ++i)
        for (int c = 0; c < r; ++c) {
            diff = std::max(diff, std::abs(a.y(i, c) - b.y(i, c)));
            scale = std::max(scale, std::abs(b.y(i, c)));
        }
    EXPECT_LE(diff, 1e-13 * scale) << what << ": y";
    for (int c = 0; c < r; ++c) {
        EXPECT_LE(std::abs(a.dots.xx[c] - b.dots.xx[c]), 1e-13 * std::abs(b.dots.xx[c])) << what << ": xx " << c;
        // yx can cancel: relative to sqrt(xx yy) >= |yx|, estimated by xx max|y| / max|x| (|x| = 1).
        const double yx_scale = std::abs(b.dots.xx[c]) * scale;
        EXPECT_LE(std::abs(a.dots.yx[c] - b.dots.yx[c]), 1e-13 * yx_scale) << what << ": yx " << c;
    }
}

void check_tiled_equals_untiled(const SellMatrix& m, const LatticeRowOrder& lat, int tile, const std::string& label)
{
    ThreadGuard guard;
    for (const int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        for (const int r : {1, 2, 8, 32}) {
            TileOptions o;
            o.tile_cells = tile;
            const ChunkSchedule s = lattice_chunk_schedule(m, lat, r, threads, o);
            ASSERT_EQ(check_chunk_schedule(s), "");
            ASSERT_GT(s.tile_cells, 0) << "the test must really tile";
            const std::string what = label + " R=" + std::to_string(r) + " threads=" + std::to_string(threads);
            const SweepResult tiled = sweep(m, &s, r);
            const SweepResult untiled = sweep(m, nullptr, r);
            expect_same_sweep(tiled, untiled, what);
            // Deterministic for a fixed schedule and thread count: bit for bit.
            const SweepResult again = sweep(m, &s, r);
            for (global_index i = 0; i < m.num_rows(); ++i)
                for (int c = 0; c < r; ++c) ASSERT_EQ(again.y(i, c), tiled.y(i, c)) << what;
            for (int c = 0; c < r; ++c) {
                EXPECT_EQ(again.dots.xx[c], tiled.dots.xx[c]) << what;
                EXPECT_EQ(again.dots.yx[c], tiled.dots.yx[c]) << what;
            }
        }
    }
}

}  // namespace

TEST(SellSchedule, TiledSweepEqualsUntiledTi)
{
    // ti 5x12x3: S = 12 states per cell, tiles of 5 cells = 60 rows (not a multiple of the
    // window of 32 rows: exercises the rounding), 5 planes over 1-3 threads.
    const auto model = ti_model(5, 12, 3);
    const global_index n = model->num_rows();
    const SellMatrix m = SellMatrix::build(*model, 0, n, {8, 32});
    check_tiled_equals_untiled(m, {5, 12, 12}, 5, "ti 5x12x3 sell-8-32");
    const SellMatrix m32 = SellMatrix::build(*model, 0, n, {32, 256});
    check_tiled_equals_untiled(m32, {5, 12, 12}, 2, "ti 5x12x3 sell-32-256");
}

TEST(SellSchedule, TiledSweepEqualsUntiledGraphene)
{
    const auto model = graphene_model(6, 10);  // S = 2 (sublattices), x = m, y = n
    const SellMatrix m = SellMatrix::build(*model, 0, model->num_rows(), {4, 8});
    check_tiled_equals_untiled(m, {6, 10, 2}, 3, "graphene 6x10 sell-4-8");
}

TEST(SellSchedule, TiledSweepEqualsUntiledFewerPlanesThanThreads)
{
    // 2 planes of 5 x 7 states for up to 3 threads: a thread's rows start and end inside planes.
    const auto m = random_matrix(2 * 5 * 7, 4, 8);
    check_tiled_equals_untiled(*m, {2, 5, 7}, 2, "random 2x5x7 sell-4-8");
    // The generic (runtime-R) kernel: C = 3 has no register-blocked group for R = 8.
    const auto m3 = random_matrix(2 * 5 * 7, 3, 1);
    check_tiled_equals_untiled(*m3, {2, 5, 7}, 2, "random 2x5x7 sell-3-1");
}

TEST(SellSchedule, OperatorTiledEqualsUntiledAndFallsBackOnOtherThreadCounts)
{
    ThreadGuard guard;
    const auto model = ti_model(4, 8, 2);
    const global_index n = model->num_rows();
    const auto m = std::make_shared<const SellMatrix>(SellMatrix::build(*model, 0, n, {8, 16}));
    TileOptions o;
    o.tile_cells = 3;
    const auto tiled = make_sell_operator(m, LatticeRowOrder{4, 8, 8}, o);
    const auto plain = make_sell_operator(m);
    EXPECT_EQ(tiled->name(), plain->name() + "-tiled");
    EXPECT_THROW(make_sell_operator(m, LatticeRowOrder{4, 8, 7}), DimensionMismatch);
    // A fixed schedule for 2 threads, used with 1, 2 and 3: right results every time.
    const auto fixed = make_sell_operator(
        m, std::make_shared<const ChunkSchedule>(lattice_chunk_schedule(*m, {4, 8, 8}, 8, 2, o)));
    for (const int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        for (const int r : {1, 8}) {
            BlockVector x(n, r), y0(n, r);
            fill_random_phase_vectors(x, 5, 0, n);
            fill_random_phase_vectors(y0, 6, 0, n);
            const AugmentedOps ops{0.25, -0.2, 0.5, true};
            BlockVector ya = y0, yb = y0, yc = y0;
            DotSums da, db, dc;
            plain->apply(x, ya, ops, &da);
            tiled->apply(x, yb, ops, &db);
            fixed->apply(x, yc, ops, &dc);
            double diff = 0, scale = 0;
            for (global_index i = 0; i < n; ++i)
                for (int c = 0; c < r; ++c) {
                    diff = std::max({diff, std::abs(yb(i, c) - ya(i, c)), std::abs(yc(i, c) - ya(i, c))});
                    scale = std::max(scale, std::abs(ya(i, c)));
                }
            EXPECT_LE(diff, 1e-13 * scale) << "threads " << threads << " R " << r;
            for (int c = 0; c < r; ++c) {
                EXPECT_NEAR(db.xx[c], da.xx[c], 1e-13 * da.xx[c]);
                EXPECT_NEAR(dc.xx[c], da.xx[c], 1e-13 * da.xx[c]);
                EXPECT_LE(std::abs(db.yx[c] - da.yx[c]), 1e-13 * da.xx[c] * scale);
                EXPECT_LE(std::abs(dc.yx[c] - da.yx[c]), 1e-13 * da.xx[c] * scale);
            }
        }
    }
}

TEST(SellSchedule, ForEachScheduledChunkVisitsEveryChunkOnceInScheduleOrder)
{
    ThreadGuard guard;
    const auto m = random_matrix(3 * 7 * 5, 4, 8);
    TileOptions o;
    o.tile_cells = 2;
    for (const int threads : {1, 2, 3}) {
        const ChunkSchedule s = lattice_chunk_schedule(*m, {3, 7, 5}, 32, threads, o);
        for (const int team : {threads, threads + 1}) {  // team != schedule: the static split
            std::vector<std::vector<local_index>> visited(team);
#pragma omp parallel num_threads(team)
            {
                std::vector<local_index> mine;
                kernels::cpu::for_each_scheduled_chunk(&s, m->num_chunks(), [&](local_index ch) { mine.push_back(ch); });
                visited[omp_get_thread_num()] = mine;
            }
            std::vector<int> count(m->num_chunks(), 0);
            for (int t = 0; t < team; ++t) {
                for (const local_index ch : visited[t]) ++count[ch];
                std::vector<local_index> expect;
                if (team == threads) {
                    for (const ChunkRange* r = s.begin(t); r != s.end(t); ++r)
                        for (local_index ch = r->begin; ch < r->end; ++ch) expect.push_back(ch);
                } else {
                    const ChunkRange r = static_chunk_range(m->num_chunks(), team, t);
                    for (local_index ch = r.begin; ch < r.end; ++ch) expect.push_back(ch);
                }
                EXPECT_EQ(visited[t], expect) << "thread " << t << " of " << team;
            }
            for (local_index ch = 0; ch < m->num_chunks(); ++ch) EXPECT_EQ(count[ch], 1) << "chunk " << ch;
        }
    }
}
