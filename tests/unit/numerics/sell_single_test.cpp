// --precision single: the complex-float SELL kernel against a long-double loop over the
// same float-rounded matrix and vectors, and the KPM moments of a single run against double.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/trace_moments.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/lanczos/lanczos.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "tests/support/dense_operator.hpp"
#include "tests/support/random_source.hpp"
#include "tests/support/single_precision.hpp"

using namespace topokpm;
using namespace topokpm::numerics;
using topokpm::testing::SingleBlock;
using topokpm::testing::single_sell_operator;
using topokpm::testing::RandomSparseSource;

namespace {

constexpr double kEpsF = std::numeric_limits<float>::epsilon();   // 2 u_f = 2^-23
constexpr double kEpsD = std::numeric_limits<double>::epsilon();  // 2 u_d = 2^-52

using cld = std::complex<long double>;

cld widen(complex_single v) { return cld(v.real(), v.imag()); }

// The float-rounded matrix as dense long double (what the kernel multiplies with).
std::vector<cld> dense_single(const RowSource& src, std::vector<int>& length)
{
    const global_index n = src.num_rows();
    std::vector<cld> a(static_cast<size_t>(n * n));
    std::vector<global_index> cols(src.max_row_length());
    std::vector<complex_type> vals(src.max_row_length());
    length.assign(n, 0);
    for (global_index i = 0; i < n; ++i) {
        length[i] = src.row(i, cols.data(), vals.data());
        for (int k = 0; k < length[i]; ++k)
            a[i * n + cols[k]] = widen(complex_single(static_cast<float>(vals[k].real()), static_cast<float>(vals[k].imag())));
    }
    return a;
}

// Tolerances, derived. The kernel sums row i's m_i products in float: with the complex
// product's own rounding, |ŝ - s| <= (m_i + 2) eps_f Σ_k |a_ik||x_k| (γ_m with u_f = eps_f / 2,
// room for the √2 of complex products). The epilogue runs in double (its error is ~1e-16
// relative, counted with 8 eps_d) and rounds once to float (eps_f |y_i|). The dots are
// summed in double from the stored float x and ŷ, so against a long-double sum of the same
// stored values their error is <= 2 (N + 2) eps_d Σ |y_i||x_i|: a float accumulation would
// be ~1e8 times larger and fail.
// At R = 2, 4, 8, 16, 32 (register-blocked groups) the epilogue is float instead
// (FloatRowEpilogue, row_epilogue.hpp): d = -shift and scale dithered between the floats
// around them (2 u_f each), t = fl(ŝ + d x) (u_f (|ŝ| + |d||x|)), o = fl(fl(beta) y0)
// (2 u_f |beta y0|), y = fl(scale t + o) (the eps_f |y_i| above): on top of the bound above
// eps_f (1.5 |scale| S_i + 2.5 |scale| |shift| |x_i| + |beta| |y0_i|), S_i = Σ_k |a_ik||x_k|;
// its dots are float sums of at most kSingleDotRun products per lane before the double sum
// (SingleDotReference's float-run allowance). Both terms apply to every width here (the
// double-epilogue widths are within them).
/// The exact row sums s = A x (long double) over the float-rounded matrix and their
/// magnitudes sum_k |a_ik||x_k|, per entry (i, c): computed once per (matrix, x) and shared
/// by every storage format and beta.
struct RowSums {
    std::vector<int> length;
    std::vector<cld> s;
    std::vector<double> abs_s;
};

RowSums row_sums(const RowSource& src, const SingleBlock& x)
{
    const global_index n = src.num_rows();
    const int r = x.num_cols();
    RowSums out;
    const std::vector<cld> a = dense_single(src, out.length);
    out.s.assign(static_cast<size_t>(n) * r, 0);
    out.abs_s.assign(out.s.size(), 0.0);
    for (global_index i = 0; i < n; ++i)
        for (global_index j = 0; j < n; ++j) {
            if (a[i * n + j] == cld(0)) continue;
            for (int c = 0; c < r; ++c) {
                out.s[i * r + c] += a[i * n + j] * widen(x(j, c));
                out.abs_s[i * r + c] += static_cast<double>(std::abs(a[i * n + j]) * std::abs(widen(x(j, c))));
            }
        }
    return out;
}

void check_single_sweep(const RowSums& sums, const Operator& op, const SingleBlock& x,
                        const SingleBlock& y0, const AugmentedOps& ops, const std::string& what)
{
    const global_index n = x.num_rows();
    const int r = x.num_cols();
    SingleBlock y(n, r);
    for (size_t i = 0; i < y.size(); ++i)  // beta == 0: NaN garbage that must never be read
        y.data()[i] = ops.beta == 0.0 ? complex_single(NAN, NAN) : y0.data()[i];
    DotSums dots;

    op.apply(x, y, ops, &dots);

    for (int c = 0; c < r; ++c) {
        topokpm::testing::SingleDotReference dot_ref;
        for (global_index i = 0; i < n; ++i) {
            const cld s = sums.s[i * r + c];
            const double abs_s = sums.abs_s[i * r + c];
            cld v = cld(ops.scale) * (s - cld(ops.shift) * widen(x(i, c)));
            if (ops.beta != 0.0) v += cld(ops.beta) * widen(y0(i, c));
            const double float_epilogue =
                kEpsF * (1.5 * std::abs(ops.scale) * abs_s + 2.5 * std::abs(ops.scale) * std::abs(ops.shift) * std::abs(x(i, c)) +
                         (ops.beta != 0.0 ? std::abs(ops.beta) * std::abs(y0(i, c)) : 0.0));
            const double bound = kEpsF * (sums.length[i] + 2) * std::abs(ops.scale) * abs_s +
                                 kEpsF * static_cast<double>(std::abs(v)) + float_epilogue +
                                 8 * kEpsD * (std::abs(ops.scale) * (abs_s + std::abs(ops.shift) * std::abs(x(i, c))) +
                                              std::abs(ops.beta) * std::abs(y0(i, c)));
            ASSERT_LE(static_cast<double>(std::abs(widen(y(i, c)) - v)), bound) << what << " row " << i << " col " << c;
            dot_ref.add(x(i, c), y(i, c));
        }
        dot_ref.expect_matches(dots, c, what, kSingleDotRun);
    }
}

}  // namespace

// Partial last chunks, empty rows, C in {1, 4, 8, 32}, σ in {1, 64}; the register-blocked
// widths (8, 16, 32), the chunk-wide ones (1, 2, 4) and the generic ones (3, 12); beta 0
// (NaN garbage in y), -1 (the KPM step) and 0.5.
TEST(SellFloat, KernelEqualsLongDoubleLoopOverTheRoundedMatrixForManyShapes)
{
    for (const global_index n : {7, 33, 130}) {
        const RandomSparseSource src(n, 11);
        std::vector<std::pair<std::string, std::unique_ptr<Operator>>> ops;
        for (const int c : {1, 4, 8, 16, 32})
            for (const int sigma : {1, 64}) {
                ops.emplace_back("C=" + std::to_string(c) + " sigma=" + std::to_string(sigma),
                                 single_sell_operator(SellMatrix::build(src, 0, n, {c, sigma})));
                ASSERT_EQ(ops.back().second->precision(), Precision::Single);
            }
        for (const int r : {1, 2, 3, 4, 8, 12, 16, 32}) {
            BlockVector xd(n, r), yd(n, r);
            fill_random_phase_vectors(xd, 5, 0, n);
            fill_random_phase_vectors(yd, 6, 0, n);
            const SingleBlock x = convert_block<complex_single>(xd), y0 = convert_block<complex_single>(yd);
            const RowSums sums = row_sums(src, x);
            for (const auto& [label, op] : ops)
                for (const double beta : {0.0, -1.0, 0.5})
                    check_single_sweep(sums, *op, x, y0, AugmentedOps{0.7, -0.3, beta, true},
                                       "N=" + std::to_string(n) + " " + label + " R=" + std::to_string(r) +
                                           " beta=" + std::to_string(beta));
        }
    }
}

// The double interface of the single operator (used by Lanczos) is the single sweep on
// the rounded inputs, widened exactly.
TEST(SellFloat, DoubleInterfaceRoundsThroughSinglePrecision)
{
    const global_index n = 300;
    const RandomSparseSource src(n, 3);
    const auto op = single_sell_operator(SellMatrix::build(src, 0, n, {8, 32}));
    for (const int r : {1, 8}) {
        BlockVector x(n, r), y(n, r);
        fill_random_phase_vectors(x, 1, 0, n);
        fill_random_phase_vectors(y, 2, 0, n);
        const SingleBlock xs = convert_block<complex_single>(x);
        SingleBlock ys = convert_block<complex_single>(y);
        DotSums ds, dd;
        const AugmentedOps ops{0.5, 0.25, -1.0, true};
        op->apply(xs, ys, ops, &ds);
        op->apply(x, y, ops, &dd);
        const BlockVector expected = convert_block<complex_double>(ys);
        for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y.data()[i], expected.data()[i]) << "R=" << r << " " << i;
        EXPECT_EQ(ds.xx, dd.xx);
        EXPECT_EQ(ds.yx, dd.yx);
    }
}

// Rows are independent: y is bit for bit the same on 1, 2 and 3 threads; the dots differ
// only in the order of the per-thread double sums.
TEST(SellFloat, ThreadCountChangesOnlyTheDotSummationOrder)
{
    const global_index n = 300;
    const RandomSparseSource src(n, 9);
    const auto op = single_sell_operator(SellMatrix::build(src, 0, n, {8, 32}));
    const int saved = omp_get_max_threads();
    for (const int r : {1, 8, 32}) {
        BlockVector xd(n, r);
        fill_random_phase_vectors(xd, 4, 0, n);
        const SingleBlock x = convert_block<complex_single>(xd);
        std::vector<complex_single> first;
        DotSums first_dots;
        for (const int threads : {1, 2, 3}) {
            omp_set_num_threads(threads);
            SingleBlock y(n, r);
            DotSums dots;
            op->apply(x, y, AugmentedOps{0.5, 0.1, 0.0, true}, &dots);
            if (threads == 1) {
                first.assign(y.data(), y.data() + y.size());
                first_dots = dots;
                continue;
            }
            for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y.data()[i], first[i]) << threads << " threads";
            for (int c = 0; c < r; ++c) EXPECT_NEAR(dots.xx[c], first_dots.xx[c], 1e-12 * first_dots.xx[c]);
        }
    }
    omp_set_num_threads(saved);
}

// The moments of a whole single-precision KPM run against double, M = 4096 (issue 4).
//
// Error model (docs/performance.md, "Single precision"). The recurrence carries rounding
// errors δ_k per sweep with ||δ_k|| <= c_k eps_f ||v||, c_k ~ (m + 3)(2 ||Ht|| + 1) for m
// entries per row; an error made at sweep k reaches v_n multiplied by U_{n-k-1}(Ht), the
// Chebyshev polynomial of the second kind, whose norm on the scaled spectrum
// [-1 + e/2, 1 - e/2] is at most kappa = 1 / sqrt(1 - (1 - e/2)^2) (about 10 for e = 0.01).
// Independent roundings add like a random walk: ||v_n - v̂_n|| ~ kappa sqrt(n) c eps_f ||v||.
// The moment mu_2n = 2 <v_n|v_n> - mu_0 (and mu_2n+1 alike) then changes by
// <= 4 ||v_n - v̂_n|| ||v_n|| / ||v||^2, plus the matrix rounding (|ΔHt| <= eps_f |Ht|,
// a backward error of the same size as one sweep's). So
//     |Δmu_n| <= 4 kappa c eps_f sqrt(n / 2 + 1),   c = (m + 3)(2 ||Ht||_inf + 1).
// The worst case (all roundings aligned) grows like n instead of sqrt(n) and would allow
// O(1) errors at n = 4096, which says nothing; the random-walk bound is the one used, and
// a broken kernel (wrong entry, float dot sums, stale vector) misses it by orders of
// magnitude. The second check is the physics one: the rounding must stay far below the
// stochastic error of the trace, ~ 1/sqrt(N R) per moment.
TEST(SellFloat, MomentsAtM4096StayWithinTheRoundingModelOfDouble)
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = 10;
    p.ny = 10;
    p.nz = 6;
    const auto model = hamiltonians::make_model(p);
    const global_index n = model->num_rows();
    const SellMatrix m = SellMatrix::build(*model, 0, n, {8, 64});
    const auto dbl = make_sell_operator(std::make_shared<SellMatrix>(m));
    const auto sgl = single_sell_operator(m);
    const SpectralBounds gb = gershgorin_bounds(*model);
    const double epsilon = 0.01;
    const KpmScaling scaling = kpm_scaling(gb, epsilon);
    const int num_moments = 4096, r = 4;

    // One thread: 2 x 2048 sweeps of 2400 rows are ~0.1 ms each, which two threads on a
    // loaded machine spend in barriers (0.2 s -> 8 s); the thread count is tested above.
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const topokpm::testing::TraceMoments md = topokpm::testing::stochastic_trace(*dbl, num_moments, r, 7, scaling);
    const topokpm::testing::TraceMoments ms = topokpm::testing::stochastic_trace(*sgl, num_moments, r, 7, scaling);
    omp_set_num_threads(saved);

    // ||Ht||_inf <= 1 - e/2 with Gershgorin bounds (the discs are what gave the interval).
    const int max_row = model->max_row_length();
    double worst_ratio = 0, worst_abs = 0;
    for (int k = 0; k < num_moments; ++k) {
        const double bound = topokpm::testing::single_moment_bound(k, max_row, epsilon);
        const double d = std::abs(ms.moments[k] - md.moments[k]);
        ASSERT_LE(d, bound) << "mu_" << k << ": single " << ms.moments[k] << ", double " << md.moments[k];
        worst_ratio = std::max(worst_ratio, d / bound);
        worst_abs = std::max(worst_abs, d);
    }
    const double stochastic = 1.0 / std::sqrt(static_cast<double>(n) * r);
    EXPECT_LT(worst_abs, 0.01 * stochastic) << "single-precision rounding is not negligible against the trace's noise";
    std::printf("[ info ] ti 10x10x6 (N = %lld), M = %d, R = %d: max |mu_single - mu_double| = %.3g (%.3g of the "
                "rounding bound, %.3g of the stochastic error %.3g)\n",
                static_cast<long long>(n), num_moments, r, worst_abs, worst_ratio, worst_abs / stochastic, stochastic);
}

// The y-tiled sweep order changes only the order of the rows, not their arithmetic: y is
// bit for bit the untiled one, the dots differ by the per-thread summation order only.
TEST(SellFloat, TiledOrderEqualsTheStaticOrder)
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = 6;
    p.ny = 12;
    p.nz = 3;
    const auto model = hamiltonians::make_model(p);
    const global_index n = model->num_rows();
    const SellMatrix m = SellMatrix::build(*model, 0, n, {8, 32});
    TileOptions tiles;
    tiles.tile_cells = 2;  // force small tiles on this small lattice
    const int saved = omp_get_max_threads();
    for (const int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        const auto plain = single_sell_operator(m);
        const auto tiled = single_sell_operator(m, LatticeRowOrder{p.nx, p.ny, 4 * p.nz}, tiles);
        EXPECT_EQ(tiled->name(), "sell-8-32-tiled-single");
        for (const int r : {1, 8, 32}) {
            BlockVector xd(n, r), yd(n, r);
            fill_random_phase_vectors(xd, 1, 0, n);
            fill_random_phase_vectors(yd, 2, 0, n);
            const SingleBlock x = convert_block<complex_single>(xd);
            SingleBlock ya = convert_block<complex_single>(yd), yb = convert_block<complex_single>(yd);
            DotSums da, db;
            const AugmentedOps ops{0.4, 0.1, -1.0, true};
            plain->apply(x, ya, ops, &da);
            tiled->apply(x, yb, ops, &db);
            for (size_t i = 0; i < ya.size(); ++i)
                ASSERT_EQ(ya.data()[i], yb.data()[i]) << threads << " threads, R = " << r << ", entry " << i;
            for (int c = 0; c < r; ++c) {
                EXPECT_NEAR(da.xx[c], db.xx[c], 1e-12 * da.xx[c]);
                EXPECT_NEAR(std::abs(da.yx[c] - db.yx[c]), 0.0, 1e-12 * da.xx[c]);
            }
        }
    }
    omp_set_num_threads(saved);
}

// Building the float matrix from the row source stores the same bits as rounding the double
// matrix afterwards (run_dos builds it directly; the tests and the bench round a double one).
TEST(SellFloat, BuildRoundsLikeConvertValues)
{
    const global_index n = 257;
    const RandomSparseSource src(n, 5);
    for (const SellParams p : {SellParams{8, 32}, SellParams{1, 1}, SellParams{32, 256}}) {
        const SellMatrix d = SellMatrix::build(src, 0, n, p);
        const auto direct = BasicSellMatrix<complex_single>::build(src, 0, n, p);
        const auto rounded = convert_values<complex_single>(d);
        EXPECT_EQ(direct.columns(), d.columns());
        EXPECT_EQ(direct.row_of_slot(), d.row_of_slot());
        EXPECT_EQ(direct.chunk_start(), d.chunk_start());
        ASSERT_EQ(direct.values().size(), d.values().size());
        for (size_t i = 0; i < d.values().size(); ++i) {
            ASSERT_EQ(direct.values()[i], rounded.values()[i]) << i;
            ASSERT_EQ(direct.values()[i].real(), static_cast<float>(d.values()[i].real())) << i;
        }
        EXPECT_EQ(direct.storage_bytes(), d.storage_bytes() - 8.0 * static_cast<double>(d.num_stored()));
    }
}

// Lanczos on a single-precision operator runs in complex float (no conversion of double
// blocks per step). Its bounds must contain the spectrum of the double matrix: the float
// matrix A_f differs from A by ||A_f - A||_2 <= ||A_f - A||_F <= (eps_f / 2) ||A||_F, and
// float sweeps perturb each Lanczos step by O(m eps_f ||A||) (m entries per row), both below
// 1e-4 of the width here against the 0.5 % margin. The Ritz values converged to tolerance
// 1e-10 relative must therefore lie within 1e-4 w of the exact extremal eigenvalues
// (bound: residual + float perturbation; a double-rounding defect, e.g. a norm summed in
// float over N = 200, stays far below, but a wrong recurrence coefficient does not).
TEST(SellFloat, LanczosInSinglePrecisionBoundsTheDoubleSpectrum)
{
    const global_index n = 200;
    const topokpm::testing::RandomHermitianSource src(n, 0.1, 11);
    const std::vector<double> eig = topokpm::testing::dense_eigenvalues(src);
    const double width = eig.back() - eig.front();
    const auto op = single_sell_operator(SellMatrix::build(src, 0, n, {8, 32}));
    ASSERT_EQ(op->precision(), Precision::Single);
    const LanczosBounds quick = lanczos_bounds(*op, 150, 1, 0.005, 0.005);
    EXPECT_LE(quick.bounds.lower, eig.front());
    EXPECT_GE(quick.bounds.upper, eig.back());
    const LanczosBounds sharp = lanczos_bounds(*op, 150, 1, 0.005, 1e-10);
    EXPECT_NEAR(sharp.lowest_ritz, eig.front(), 1e-4 * width);
    EXPECT_NEAR(sharp.highest_ritz, eig.back(), 1e-4 * width);
    EXPECT_LT(quick.iterations, sharp.iterations);
}
