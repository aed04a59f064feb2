// The block-trace engine (numerics/kpm/block_trace.hpp) against the dense oracle: LDOS,
// exact trace and plane-wave traces are the same diagonal moments regrouped, and a trace
// resumed from a saved state is bit-identical to an uninterrupted one.
#include <gtest/gtest.h>

#include <cmath>

#include "numerics/kpm/block_trace.hpp"
#include "numerics/kpm/bloch.hpp"
#include "numerics/kpm/kpm.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/dense_operator.hpp"
#include "tests/support/dense_oracle.hpp"

using namespace topokpm;
using namespace topokpm::numerics;
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

// Plane waves of models.md §4 are orthonormal, and on a lattice the operator couples only
// equal momenta: for a "lattice" of independent cells (block-diagonal dense H with the same
// S x S block everywhere) the Bloch Hamiltonian is that block at every k.
TEST(PlaneWaves, OrthonormalAndBlochHamiltonianOfIdenticalCells)
{
    const PlaneWaveLattice lat{3, 4, 2};
    const global_index n = 3 * 4 * 2;
    BlockVector a(n, 2), b(n, 2);
    fill_plane_waves(a, lat, {1, 2}, 0);
    fill_plane_waves(b, lat, {2, 2}, 0);
    for (int c = 0; c < 2; ++c)
        for (int d = 0; d < 2; ++d) {
            complex_type same = 0.0, other = 0.0;
            for (global_index i = 0; i < n; ++i) {
                same += std::conj(a(i, c)) * a(i, d);
                other += std::conj(a(i, c)) * b(i, d);
            }
            EXPECT_NEAR(std::abs(same - complex_type(c == d ? 1.0 : 0.0)), 0.0, 1e-15);
            EXPECT_NEAR(std::abs(other), 0.0, 1e-15);
        }
    const complex_type block[2][2] = {{0.5, {0.25, -1.0}}, {{0.25, 1.0}, -0.75}};
    std::vector<complex_type> h(static_cast<size_t>(n * n), 0.0);
    for (global_index cell = 0; cell < 12; ++cell)
        for (int s = 0; s < 2; ++s)
            for (int t = 0; t < 2; ++t) h[(2 * cell + s) + (2 * cell + t) * n] = block[s][t];
    const DenseOperator op(h, n);
    const auto hk = bloch_hamiltonian(op, lat, {2, 3});
    for (int s = 0; s < 2; ++s)
        for (int t = 0; t < 2; ++t) EXPECT_NEAR(std::abs(hk[s + 2 * t] - block[s][t]), 0.0, 1e-15);
}
