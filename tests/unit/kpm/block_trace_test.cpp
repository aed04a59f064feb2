// The block-trace engine (numerics/kpm/block_trace.hpp) against the dense oracle: LDOS,
// exact trace and plane-wave traces are the same diagonal moments regrouped, and a trace
// resumed from a saved state is bit-identical to an uninterrupted one.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <memory>
#include <random>
#include <tuple>

#include "numerics/kpm/block_trace.hpp"
#include "numerics/kpm/bloch.hpp"
#include "numerics/kpm/kpm.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/block_stencil_reference.hpp"
#include "tests/support/dense_operator.hpp"
#include "tests/support/dense_oracle.hpp"
#include "tests/support/trace_moments.hpp"

using namespace topokpm;
using topokpm::testing::make_block_stencil_reference_operator;
using namespace topokpm::numerics;
using topokpm::testing::run_block_trace;
using topokpm::testing::DenseOperator;
using topokpm::testing::RandomHermitianSource;

namespace {

using System = topokpm::testing::SmallDenseSystem;

std::vector<global_index> all_rows(global_index n)
{
    std::vector<global_index> rows(n);
    for (global_index j = 0; j < n; ++j) rows[j] = j;
    return rows;
}

}  // namespace

// sum_j <j|T_n|j> = Tr T_n = N mu_n(exact): the LDOS of every row adds up to N times the
// exact-trace moments. Both sides add the same per-column numbers (identical block width,
// so identical sweeps) in the same order; allow 1e-13 N for a different association.
TEST(LdosTrace, SumOverAllRowsIsNTimesTheExactTrace)
{
    const global_index n = 23;
    System sys(n);
    const int m = 40;
    for (const int width : {1, 4, 8}) {
        const auto ldos = run_block_trace(sys.op, *unit_vector_plan(n, all_rows(n)), m, width, sys.scaling);
        const auto exact = run_block_trace(sys.op, *exact_trace_plan(n), m, width, sys.scaling);
        ASSERT_EQ(ldos.size(), size_t(n * m));
        for (int k = 0; k < m; ++k) {
            double sum = 0.0;
            for (global_index j = 0; j < n; ++j) sum += ldos[j * m + k];
            EXPECT_NEAR(sum, n * exact[k], 1e-13 * n) << "width " << width << " n " << k;
        }
        // and the exact trace is the LAPACK trace (same bound as KpmExactTrace tests)
        const auto ref = topokpm::testing::exact_moments(sys.eigenvalues, m, sys.scaling.a, sys.scaling.b);
        for (int k = 0; k < m; ++k) EXPECT_NEAR(exact[k], ref[k], 1e-12);
    }
}

// A unit vector's mu_0 is exactly 1 and its moments are bounded by 1 in magnitude; a row
// selected twice (in different blocks) gives identical moments: columns never mix.
TEST(LdosTrace, UnitVectorsAreNormalisedAndRowsIndependent)
{
    System sys(12);
    const int m = 16;
    const auto ldos = run_block_trace(sys.op, *unit_vector_plan(12, {3, 7, 3}), m, 2, sys.scaling);
    EXPECT_EQ(ldos[0], 1.0);
    for (int k = 0; k < m; ++k) {
        EXPECT_EQ(ldos[k], ldos[2 * m + k]) << k;  // row 3 in column 0 and in column 2 (other block)
        EXPECT_LE(std::abs(ldos[m + k]), 1.0 + 1e-12);
    }
    EXPECT_THROW(unit_vector_plan(12, {12}), InputError);
    EXPECT_THROW(unit_vector_plan(12, {}), InputError);
}

// A trace stopped after any number of sweeps and continued from a copy of its state (as a
// checkpoint does) performs the same floating-point operations: bit-identical moments.
TEST(BlockTrace, ResumedTraceIsBitIdentical)
{
    const global_index n = 30;
    System sys(n, 5);
    const int m = 21;  // odd M: the last sweep yields one moment
    const auto plan = unit_vector_plan(n, {0, 4, 9, 11, 17, 29, 2});
    const auto reference = run_block_trace(sys.op, *plan, m, 3, sys.scaling);
    BlockTrace probe(sys.op, *plan, m, 3, sys.scaling);
    for (std::int64_t stop = 0; stop <= probe.num_sweeps(); stop += 4) {
        BlockTrace first(sys.op, *plan, m, 3, sys.scaling);
        for (std::int64_t s = 0; s < stop; ++s) first.step();
        TraceState saved = first.state();
        BlockTrace second(sys.op, *plan, m, 3, sys.scaling);
        second.restore(std::move(saved));
        EXPECT_EQ(second.sweeps_done(), stop);
        while (!second.done()) second.step();
        EXPECT_EQ(second.slot_moments(), reference) << "stopped after " << stop << " sweeps";
    }
    // A state of another trace is refused.
    BlockTrace other(sys.op, *plan, m + 2, 3, sys.scaling);
    EXPECT_THROW(other.restore(probe.state()), DimensionMismatch);
}

// prepare() makes a block's start vectors exactly when none is under way (kpm-dos times it
// apart from the sweeps); stepping after it gives the same moments as stepping alone.
TEST(BlockTrace, PrepareStartsEachBlockOnceBetweenBlocks)
{
    const global_index n = 14;
    System sys(n, 3);
    const int m = 9;  // 5 sweeps per block
    const auto plan = unit_vector_plan(n, {1, 5, 8, 13, 2});
    const auto reference = run_block_trace(sys.op, *plan, m, 2, sys.scaling);
    BlockTrace trace(sys.op, *plan, m, 2, sys.scaling);
    ASSERT_EQ(trace.num_blocks(), 3);
    std::int64_t started = 0;
    while (!trace.done()) {
        const bool between = trace.block_moments_done() == 0 && trace.sweeps_done() % kpm_num_sweeps(m) == 0;
        const bool did = trace.prepare();
        EXPECT_EQ(did, between) << "after " << trace.sweeps_done() << " sweeps";
        EXPECT_FALSE(trace.prepare()) << "a second prepare() before the step";
        started += did;
        trace.step();
    }
    EXPECT_EQ(started, 3);
    EXPECT_FALSE(trace.prepare());
    EXPECT_EQ(trace.slot_moments(), reference);
}

// The stochastic trace through the engine equals the definition mu_n^(r) = <r|T_n|r>/N of
// models.md §4 evaluated on the dense matrix with the same random vectors.
TEST(RandomPhasePlan, PerVectorMomentsAreTheSpecDefinition)
{
    const global_index n = 17;
    System sys(n, 3);
    const int m = 12, r = 3;
    const auto per_vector = run_block_trace(sys.op, *random_phase_plan(n, r, 4), m, r, sys.scaling);
    BlockVector v(n, r);
    const auto plan = random_phase_plan(n, r, 4);
    plan->fill(v, 0);
    // T_n(Ht) v by the plain recurrence, one column at a time, on the dense matrix.
    const auto a = topokpm::testing::dense_matrix(sys.source);
    for (int c = 0; c < r; ++c) {
        std::vector<complex_type> t0(n), t1(n), t2(n);
        for (global_index i = 0; i < n; ++i) t0[i] = v(i, c);
        auto ht = [&](const std::vector<complex_type>& x) {
            std::vector<complex_type> y(n);
            for (global_index i = 0; i < n; ++i) {
                complex_type acc = 0.0;
                for (global_index j = 0; j < n; ++j) acc += a[i + j * n] * x[j];
                y[i] = (acc - sys.scaling.b * x[i]) / sys.scaling.a;
            }
            return y;
        };
        t1 = ht(t0);
        auto dot = [&](const std::vector<complex_type>& t) {
            complex_type s = 0.0;
            for (global_index i = 0; i < n; ++i) s += std::conj(v(i, c)) * t[i];
            return s.real() / n;
        };
        EXPECT_NEAR(per_vector[c * m + 0], dot(t0), 1e-14);
        EXPECT_NEAR(per_vector[c * m + 1], dot(t1), 1e-14);
        for (int k = 2; k < m; ++k) {
            const auto h = ht(t1);
            for (global_index i = 0; i < n; ++i) t2[i] = 2.0 * h[i] - t0[i];
            t0 = t1;
            t1 = t2;
            // the doubling formulas of §4 and the plain recurrence differ by rounding only
            EXPECT_NEAR(per_vector[c * m + k], dot(t1), 1e-12) << "column " << c << " n " << k;
        }
    }
}

namespace {

/// The S plane waves |k, s> of `lat` on all rows (plane_wave_plan's columns of one k).
BlockVector plane_waves(const PlaneWaveLattice& lat, const Momentum& k)
{
    BlockVector v(static_cast<global_index>(lat.nx) * lat.ny * lat.states_per_cell, lat.states_per_cell);
    plane_wave_plan(lat, {k})->fill(v, 0);
    return v;
}

/// The reference H_k: <k,s'| H |k,s> by applying `op` to the plane waves and projecting.
std::vector<complex_type> projected_bloch(const Operator& op, const PlaneWaveLattice& lat, const Momentum& k)
{
    const int s_count = lat.states_per_cell;
    const BlockVector w = plane_waves(lat, k);
    BlockVector y(w.num_rows(), s_count);
    op.apply(w, y, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
    std::vector<complex_type> h(static_cast<size_t>(s_count) * s_count, 0.0);
    for (int sp = 0; sp < s_count; ++sp)
        for (int s = 0; s < s_count; ++s)
            for (global_index i = 0; i < w.num_rows(); ++i) h[sp + s_count * s] += std::conj(w(i, sp)) * y(i, s);
    return h;
}

}  // namespace

// Plane waves of models.md §4 are orthonormal, and a rank's share (any row range, cut
// inside a cell) is exactly those rows of the whole vectors: the values are the same
// expression of each row's (x, y), so equal bit for bit.
TEST(PlaneWaves, OrthonormalAndEqualOnAnyRowRange)
{
    const PlaneWaveLattice lat{3, 4, 2};
    const global_index n = 3 * 4 * 2;
    const BlockVector a = plane_waves(lat, {1, 2}), b = plane_waves(lat, {2, 2});
    for (int c = 0; c < 2; ++c)
        for (int d = 0; d < 2; ++d) {
            complex_type same = 0.0, other = 0.0;
            for (global_index i = 0; i < n; ++i) {
                same += std::conj(a(i, c)) * a(i, d);
                other += std::conj(a(i, c)) * b(i, d);
            }
            // sums of 12 terms of size 1/12: a few eps
            EXPECT_NEAR(std::abs(same - complex_type(c == d ? 1.0 : 0.0)), 0.0, 1e-15);
            EXPECT_NEAR(std::abs(other), 0.0, 1e-15);
        }
    // Columns 1..3 of the plan (k = (1,2) s = 1, then k = (2,2) s = 0, 1) on rows [5, 18).
    const auto plan = plane_wave_plan(lat, {{1, 2}, {2, 2}});
    BlockVector all(n, 3), part(13, 3);
    plan->fill(all, 1, 0);
    plan->fill(part, 1, 5);
    for (global_index i = 0; i < 13; ++i)
        for (int c = 0; c < 3; ++c) EXPECT_EQ(part(i, c), all(i + 5, c)) << "row " << i + 5 << " column " << c;
    EXPECT_THROW(plan->fill(part, 0, n - 12), DimensionMismatch);
}

// The Bloch Hamiltonian from a stencil (numerics/kpm/bloch.hpp) against the projection of
// the naive stencil operator (make_block_stencil_reference_operator) on the plane waves: a
// random stencil with partner terms (Hermitian), a z-dependent potential per site and per
// row, open and periodic z, and the 2-site extents where the +x and -x neighbours coincide.
// Each projected entry is a sum of nx ny S products of size <= 1/(nx ny) times an entry of H
// (|H| <= 8 here), so it is exact to about nx ny S eps 8 / (nx ny) ~ 16 S eps < 1e-13.
TEST(BlochHamiltonian, FromTheStencilEqualsTheProjectionOfTheOperator)
{
    std::uint64_t state = 12345;
    auto uniform = [&] {  // a small LCG: any numbers will do
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return double(state >> 11) * 0x1.0p-53 - 0.5;
    };
    for (const auto& [nx, ny, nz, periodic_z, per_row] :
         std::vector<std::tuple<int, int, int, bool, bool>>{{4, 3, 3, false, false}, {3, 5, 2, true, true}, {2, 2, 3, false, true}}) {
        BlockStencil st;
        st.name = "random";
        st.nx = nx;
        st.ny = ny;
        st.nz = nz;
        st.orbitals = 2;
        st.periodic = {true, true, periodic_z};
        const int b = 2;
        st.onsite.assign(4, 0.0);
        for (int o = 0; o < b; ++o)
            for (int c = 0; c <= o; ++c) {
                const complex_type v(uniform(), o == c ? 0.0 : uniform());
                st.onsite[o * b + c] = v;
                st.onsite[c * b + o] = std::conj(v);
            }
        for (const auto& d : std::vector<std::array<int, 3>>{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, -1, 0}, {1, 1, 1}}) {
            StencilTerm t{d[0], d[1], d[2], std::vector<complex_type>(4)}, u{-d[0], -d[1], -d[2], std::vector<complex_type>(4)};
            for (int i = 0; i < 4; ++i) t.block[i] = complex_type(uniform(), uniform());
            for (int o = 0; o < b; ++o)
                for (int c = 0; c < b; ++c) u.block[c * b + o] = std::conj(t.block[o * b + c]);
            st.terms.push_back(t);
            st.terms.push_back(u);
        }
        // V depends on z (and the orbital, per row) only: the stencil stays translation invariant in x, y.
        st.potential.resize(static_cast<size_t>(per_row ? st.num_rows() : st.num_sites()));
        std::vector<double> vz(static_cast<size_t>(nz * b));
        for (double& v : vz) v = uniform();
        for (global_index i = 0; i < global_index(st.potential.size()); ++i) {
            const global_index site = per_row ? i / b : i;
            st.potential[static_cast<size_t>(i)] = vz[static_cast<size_t>((site % nz) * b + (per_row ? i % b : 0))];
        }
        const PlaneWaveLattice lat{nx, ny, b * nz};  // s = o + B z, as in the models (models.md §2-3)
        const auto op = make_block_stencil_reference_operator(st);
        for (const Momentum& k : std::vector<Momentum>{{0, 0}, {1, 2}, {nx - 1, 1}, {-3, 7}}) {
            const auto got = bloch_hamiltonian(st, k);
            const auto want = projected_bloch(*op, lat, k);
            ASSERT_EQ(got.size(), want.size());
            for (size_t i = 0; i < got.size(); ++i)
                EXPECT_NEAR(std::abs(got[i] - want[i]), 0.0, 1e-13)
                    << nx << "x" << ny << "x" << nz << " k = (" << k.mx << ", " << k.my << ") entry " << i;
        }
    }
    BlockStencil open_x;
    open_x.nx = open_x.ny = 3;
    open_x.onsite = {0.0};
    open_x.potential.assign(9, 0.0);
    open_x.periodic = {false, true, false};
    EXPECT_THROW(bloch_hamiltonian(open_x, {0, 0}), InputError);
}

namespace {

/// A Hermitian stencil on an nx x ny x nz box with B = 2: random blocks for +x, +y, the
/// diagonal (1, -1, 0) and the long-range (0, 0, 2), each with its partner (-d, T^dagger),
/// a Hermitian on-site block and a random potential per site. Reach (1, 1, 2).
BlockStencil hermitian_lattice(int nx, int ny, int nz, std::array<bool, 3> periodic, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    const int b = 2;
    auto block = [&] {
        std::vector<complex_type> m(b * b);
        for (complex_type& v : m) v = complex_type(u(gen), u(gen));
        return m;
    };
    auto dagger = [&](const std::vector<complex_type>& m) {
        std::vector<complex_type> d(b * b);
        for (int r = 0; r < b; ++r)
            for (int c = 0; c < b; ++c) d[r * b + c] = std::conj(m[c * b + r]);
        return d;
    };
    BlockStencil s;
    s.name = "hermitian-test";
    s.nx = nx, s.ny = ny, s.nz = nz;
    s.orbitals = b;
    s.periodic = periodic;
    const auto h = block();
    s.onsite = h;
    for (int r = 0; r < b; ++r)
        for (int c = 0; c < b; ++c) s.onsite[r * b + c] = 0.5 * (h[r * b + c] + std::conj(h[c * b + r]));
    for (const auto& d : std::vector<std::array<int, 3>>{{1, 0, 0}, {0, 1, 0}, {1, -1, 0}, {0, 0, 2}}) {
        const auto t = block();
        s.terms.push_back({d[0], d[1], d[2], t});
        s.terms.push_back({-d[0], -d[1], -d[2], dagger(t)});
    }
    s.potential.resize(static_cast<size_t>(s.num_sites()));
    for (double& v : s.potential) v = u(gen);
    return s;
}

struct LatticeSystem {
    BlockStencil stencil;
    std::unique_ptr<Operator> op;
    KpmScaling scaling;
    explicit LatticeSystem(BlockStencil s)
        : stencil(s), op(make_block_stencil_reference_operator(s)), scaling(kpm_scaling(gershgorin_bounds(stencil), 0.01))
    {}
};

/// Every row of the layer z = `z` (canonical order, B = 2).
std::vector<global_index> layer_rows(const BlockStencil& s, int z)
{
    std::vector<global_index> rows;
    for (int x = 0; x < s.nx; ++x)
        for (int y = 0; y < s.ny; ++y)
            for (int o = 0; o < s.orbitals; ++o) rows.push_back(o + s.orbitals * (z + s.nz * (y + global_index(s.ny) * x)));
    return rows;
}

}  // namespace

// Probing (Tang & Saad) reads <i|T_n|v_c> with v_c the phased sum of the rows of i's colour:
// the cross terms <i|T_n|j> vanish while n is below the hop distance of i and j. So:
//  - a distance past half of every periodic extent and the whole open one gives every row
//    its own colour, and the probed moments are the exact LDOS for every n;
//  - at distance d the moments n < d are exact (rows of one colour are >= d hops apart,
//    measured with the reach of the longest coupling, here 2 sites in z);
//  - the higher ones differ (else the test could not fail) but stay within sqrt(k),
//    k = the rows of a colour (ProbingColours::max_rows_per_colour).
// The exact moments come from the doubling formulas of the dots and the probed ones from
// the plain recurrence's entries: they agree to rounding, 1e-13 (as the tests above).
TEST(ProbingPlan, ExactWhenEveryColourHoldsOneRowAndBelowTheDistance)
{
    LatticeSystem sys(hermitian_lattice(6, 5, 5, {true, true, false}, 11));
    const global_index n = sys.stencil.num_rows();
    const int m = 24;
    const int probe_m = probing_trace_moments(m);
    std::vector<global_index> rows = layer_rows(sys.stencil, 0);
    const std::vector<global_index> layer2 = layer_rows(sys.stencil, 2);
    rows.insert(rows.end(), layer2.begin(), layer2.end());  // two layers 2 sites apart in z (reach 2)
    const auto exact = run_block_trace(*sys.op, *unit_vector_plan(n, rows), m, 8, sys.scaling);

    // distance 4: the periodic extents 6 and 5 are below 2 x 4, the open z extent 5 below 4 x 2
    const ProbingColours all = colour_rows(sys.stencil, rows, 4);
    EXPECT_TRUE(all.one_row_per_colour);
    EXPECT_EQ(all.num_colours, static_cast<int>(rows.size()));
    const auto whole = run_block_trace(*sys.op, *probing_plan(all, n, 1, m, 5), probe_m, 8, sys.scaling);
    for (size_t j = 0; j < rows.size(); ++j)
        for (int k = 0; k < m; ++k) ASSERT_NEAR(whole[j * probe_m + k], exact[j * m + k], 1e-13) << "row " << j << " n " << k;

    for (const int d : {1, 2}) {
        const ProbingColours c = colour_rows(sys.stencil, rows, d);
        EXPECT_FALSE(c.one_row_per_colour) << d;
        EXPECT_LT(c.num_colours, static_cast<int>(rows.size())) << d;
        for (const int draws : {1, 3}) {
            const auto probed = run_block_trace(*sys.op, *probing_plan(c, n, draws, m, 5), probe_m, 8, sys.scaling);
            double worst_above = 0.0;
            for (size_t j = 0; j < rows.size(); ++j) {
                for (int k = 0; k < d; ++k)
                    ASSERT_NEAR(probed[j * probe_m + k], exact[j * m + k], 1e-13) << "d " << d << " row " << j << " n " << k;
                for (int k = d; k < m; ++k) {
                    worst_above = std::max(worst_above, std::abs(probed[j * probe_m + k] - exact[j * m + k]));
                    EXPECT_LE(std::abs(probed[j * probe_m + k]), std::sqrt(double(c.max_rows_per_colour)) + 1e-12);
                }
                for (int k = m; k < probe_m; ++k) ASSERT_EQ(probed[j * probe_m + k], 0.0);  // not read
            }
            EXPECT_GT(worst_above, 1e-6) << "d " << d << ": cross terms past the distance";
        }
    }
}

// The colouring itself: rows of one colour are >= d x reach apart in some direction (around
// the ring when periodic), and rows of one site never share a colour.
TEST(ProbingPlan, RowsOfOneColourAreTheDistanceApart)
{
    const BlockStencil s = hermitian_lattice(11, 7, 9, {true, true, false}, 3);
    std::vector<global_index> rows(static_cast<size_t>(s.num_rows()));
    for (global_index j = 0; j < s.num_rows(); ++j) rows[j] = j;
    const int reach[3] = {1, 1, 2};
    for (const int d : {1, 2, 3, 5}) {
        const ProbingColours c = colour_rows(s, rows, d);
        auto coords = [&](global_index j) {
            const global_index site = j / 2;
            return std::array<int, 4>{int(site / (s.nz * s.ny)), int((site / s.nz) % s.ny), int(site % s.nz), int(j % 2)};
        };
        for (global_index i = 0; i < s.num_rows(); ++i)
            for (global_index j = i + 1; j < s.num_rows(); ++j) {
                if (c.colour[i] != c.colour[j]) continue;
                const auto a = coords(i), b = coords(j);
                ASSERT_EQ(a[3], b[3]);
                int hops = 0;
                const int ext[3] = {s.nx, s.ny, s.nz};
                for (int k = 0; k < 3; ++k) {
                    int delta = std::abs(a[k] - b[k]);
                    if (s.periodic[k]) delta = std::min(delta, ext[k] - delta);
                    hops = std::max(hops, (delta + reach[k] - 1) / reach[k]);
                }
                ASSERT_GE(hops, d) << "rows " << i << ", " << j << " at distance " << d;
            }
    }
    EXPECT_THROW(colour_rows(s, rows, 0), InputError);
    EXPECT_THROW(colour_rows(s, rows, kMaxProbingDistance + 1), InputError);
    EXPECT_THROW(colour_rows(s, {s.num_rows()}, 2), InputError);
    EXPECT_THROW(probing_plan(colour_rows(s, rows, 2), s.num_rows(), 0, 8, 1), InputError);
}

// A probing trace stopped after any number of sweeps and resumed from its state (a
// checkpoint) reads the same entries: bit-identical moments.
TEST(ProbingPlan, ResumedTraceIsBitIdentical)
{
    LatticeSystem sys(hermitian_lattice(5, 4, 3, {true, true, false}, 2));
    const global_index n = sys.stencil.num_rows();
    const int m = 13;
    const int probe_m = probing_trace_moments(m);
    const ProbingColours colours = colour_rows(sys.stencil, layer_rows(sys.stencil, 1), 2);
    // Unfiltered, and filtered (the filtered block is part of the state as well).
    for (const std::vector<double>& filter : {std::vector<double>{}, std::vector<double>(m, 0.3)}) {
        const auto plan = probing_plan(colours, n, 2, m, 9, filter);
        const auto reference = run_block_trace(*sys.op, *plan, probe_m, 3, sys.scaling);
        BlockTrace probe(*sys.op, *plan, probe_m, 3, sys.scaling);
        for (std::int64_t stop = 0; stop <= probe.num_sweeps(); stop += 5) {
            BlockTrace first(*sys.op, *plan, probe_m, 3, sys.scaling);
            for (std::int64_t s = 0; s < stop; ++s) first.step();
            BlockTrace second(*sys.op, *plan, probe_m, 3, sys.scaling);
            second.restore(first.state());
            while (!second.done()) second.step();
            EXPECT_EQ(second.slot_moments(), reference) << "stopped after " << stop << " sweeps, filter " << filter.size();
        }
    }
}

// The filtered probing block F = f(Ht) V at the rows, f = sum_n h_n T_n with Jackson weights
// at an energy (a positive kernel: f >= 0), and its Nystrom diagonal (probing_nystrom):
//  - the moments are those of the unfiltered plan, bit for bit (the filter only adds);
//  - F's own-colour entries give the probing value: Re(conj(s_i) F(i, colour i)) =
//    sum_n h_n mu_n(i) of the probed moments (1e-12: one sum in two orders);
//  - one row per colour (V spans the rows): the Nystrom diagonal is the exact one,
//    sum_n h_n mu_n(i) of the unit vectors' moments, to 1e-8 of the largest (the
//    pseudo-inverse drops eigenvalues of V^H F below 1e-10 of the largest);
//  - several rows per colour: never above the exact diagonal (Nystrom of a positive
//    semidefinite matrix is a lower bound), to 1e-10 of the largest.
TEST(ProbingPlan, FilteredBlockAndItsNystromDiagonal)
{
    LatticeSystem sys(hermitian_lattice(6, 5, 3, {true, true, false}, 4));
    const global_index n = sys.stencil.num_rows();
    const int m = 24;
    const int probe_m = probing_trace_moments(m);
    const std::vector<global_index> rows = layer_rows(sys.stencil, 0);
    const double x0 = 0.3;
    std::vector<double> h(m);
    for (int k = 0; k < m; ++k) {
        const double q = M_PI / (m + 1);  // Jackson (models.md §4)
        const double g = ((m - k + 1) * std::cos(q * k) + std::sin(q * k) / std::tan(q)) / (m + 1);
        h[static_cast<size_t>(k)] = g * std::cos(k * std::acos(x0)) * (k == 0 ? 1.0 : 2.0);
    }
    const auto exact = run_block_trace(*sys.op, *unit_vector_plan(n, rows), m, 8, sys.scaling);
    std::vector<double> exact_f(rows.size(), 0.0);
    double largest = 0.0;
    for (size_t i = 0; i < rows.size(); ++i) {
        for (int k = 0; k < m; ++k) exact_f[i] += h[static_cast<size_t>(k)] * exact[i * m + k];
        ASSERT_GE(exact_f[i], -1e-12) << "a positive kernel";
        largest = std::max(largest, exact_f[i]);
    }
    for (const int d : {4, 2}) {
        const ProbingColours c = colour_rows(sys.stencil, rows, d);
        EXPECT_EQ(c.one_row_per_colour, d == 4);
        const auto plain_plan = probing_plan(c, n, 1, m, 5);
        const auto plan = probing_plan(c, n, 1, m, 5, h);
        ASSERT_EQ(plan->num_slots(), std::int64_t(rows.size()) + probing_filter_slots(std::int64_t(rows.size()), c.num_colours, m));
        const auto plain = run_block_trace(*sys.op, *plain_plan, probe_m, 8, sys.scaling);
        const auto filtered = run_block_trace(*sys.op, *plan, probe_m, 8, sys.scaling);
        ASSERT_TRUE(std::equal(plain.begin(), plain.end(), filtered.begin())) << "d " << d;
        const StartVectorPlan::Filter* f = plan->filter();
        ASSERT_NE(f, nullptr);
        for (global_index col = 0; col < plan->num_columns(); ++col)
            for (const StartVectorPlan::Read& r : plan->reads(col)) {
                const double* z = filtered.data() + f->offset + 2 * (size_t(r.slot) * size_t(plan->num_columns()) + size_t(col));
                double probed = 0.0;
                for (int k = 0; k < m; ++k) probed += h[size_t(k)] * plain[size_t(r.slot) * probe_m + k];
                EXPECT_NEAR((std::conj(r.phase) * complex_type(z[0], z[1])).real(), probed, 1e-12) << "d " << d;
            }
        const ProbingNystrom ny = probing_nystrom(*plan, filtered);
        ASSERT_EQ(ny.diagonal.size(), rows.size());
        EXPECT_EQ(ny.columns, c.num_colours);
        double sum_ny = 0.0, sum_exact = 0.0;
        for (size_t i = 0; i < rows.size(); ++i) {
            if (d == 4)
                EXPECT_NEAR(ny.diagonal[i], exact_f[i], 1e-8 * largest) << "row " << i;
            else
                EXPECT_LE(ny.diagonal[i], exact_f[i] + 1e-10 * largest) << "row " << i;
            sum_ny += ny.diagonal[i];
            sum_exact += exact_f[i];
        }
        // The trace defect: 1 - sum of the Nystrom diagonal / the probing trace Tr(V^H F) (one
        // draw). One row per colour: Tr(V^H F) is the exact trace, the defect 0 (1e-8, as the
        // diagonal); else the probing trace is the probed diagonal's sum (1e-12, one sum in
        // two orders).
        double probing_trace = 0.0;
        for (global_index col = 0; col < plan->num_columns(); ++col)
            for (const StartVectorPlan::Read& r : plan->reads(col))
                for (int k = 0; k < m; ++k) probing_trace += h[size_t(k)] * plain[size_t(r.slot) * probe_m + k];
        EXPECT_NEAR(ny.trace_defect, 1.0 - sum_ny / probing_trace, 1e-12) << "d " << d;
        if (d == 4) {
            EXPECT_NEAR(ny.trace_defect, 1.0 - sum_ny / sum_exact, 1e-12);
            EXPECT_NEAR(ny.trace_defect, 0.0, 1e-8);
        }
    }
    EXPECT_THROW(probing_plan(colour_rows(sys.stencil, rows, 2), n, 1, m, 5, std::vector<double>(m - 1, 1.0)), InputError);
}

// --probing-distance auto's two parts.
// probing_filter_rank_estimate: rows x the share of [-1, 1] where the filter at the centre,
// f(x) = sum_n c_n g_n T_n(0) T_n(x), is above 1e-3 of its peak. Checked against f summed
// directly (T_n(x) = cos(n acos x)) on a grid of x 1/(64 M) apart over the whole of
// [-1, 1] (Jackson's tail has ripples about the threshold: the set is not one interval):
// the function takes cells of pi / (16 M) in angle, so the two agree to a cell at each of
// the set's ~6 edges over a window of ~13 / M: 3 %. The window narrows as 1 / M (x 4 moments: a quarter, to the same 3 %),
// and Lorentz's (lambda = 4) is wider than Jackson's (its tails fall as 1 / phi^2).
TEST(ProbingAuto, RankEstimateIsTheFiltersWindowAtAnAverageDos)
{
    auto jackson = [](int m) {
        std::vector<double> g(static_cast<size_t>(m));
        const double q = M_PI / (m + 1);
        for (int k = 0; k < m; ++k) g[size_t(k)] = ((m - k + 1) * std::cos(q * k) + std::sin(q * k) / std::tan(q)) / (m + 1);
        return g;
    };
    auto lorentz = [](int m) {
        std::vector<double> g(static_cast<size_t>(m));
        for (int k = 0; k < m; ++k) g[size_t(k)] = std::sinh(4.0 * (1.0 - double(k) / m)) / std::sinh(4.0);
        return g;
    };
    auto direct_share = [](const std::vector<double>& g) {
        const int m = static_cast<int>(g.size());
        auto f = [&](double x) {
            double s = 0.0;
            for (int n = 0; n < m; ++n) s += (n ? 2.0 : 1.0) * g[size_t(n)] * std::cos(n * M_PI / 2) * std::cos(n * std::acos(x));
            return s;
        };
        const double peak = f(0.0), dx = 1.0 / (64.0 * m);
        int inside = 0, points = 0;
        for (double x = -1.0 + dx / 2; x < 1.0; x += dx, ++points) inside += f(x) > 1e-3 * peak;
        return double(inside) / points;
    };
    const global_index rows = 4096;
    for (const int m : {64, 256}) {
        const double est = probing_filter_rank_estimate(jackson(m), rows);
        EXPECT_NEAR(est, rows * direct_share(jackson(m)), 0.03 * est) << "M " << m;
        EXPECT_NEAR(probing_filter_rank_estimate(jackson(4 * m), rows), est / 4, 0.03 * est / 4) << "M " << m;
        const double wide = probing_filter_rank_estimate(lorentz(m), rows);
        EXPECT_NEAR(wide, rows * direct_share(lorentz(m)), 0.03 * wide) << "M " << m;
        EXPECT_GT(wide, 2 * est) << "M " << m;
    }
    EXPECT_EQ(probing_filter_rank_estimate(jackson(64), 0), 0.0);
}

// smallest_probing_distance: the distance it returns colours the rows with at least the
// colours asked for, and one less does not (checked against colour_rows at every distance);
// past what the rows allow it returns the distance that gives every row its own colour.
TEST(ProbingAuto, SmallestDistanceReachesTheColours)
{
    const BlockStencil s = hermitian_lattice(12, 10, 5, {true, true, false}, 6);
    const std::vector<global_index> rows = layer_rows(s, 0);
    for (const global_index want : {global_index(1), global_index(2), global_index(9), global_index(40), global_index(100), global_index(240)}) {
        const int d = smallest_probing_distance(s, rows, want);
        EXPECT_GE(colour_rows(s, rows, d).num_colours, want) << want;
        if (d > 1) {
            EXPECT_LT(colour_rows(s, rows, d - 1).num_colours, want) << want;
        }
    }
    const int all = smallest_probing_distance(s, rows, global_index(rows.size()) + 1);
    EXPECT_TRUE(colour_rows(s, rows, all).one_row_per_colour);
}
