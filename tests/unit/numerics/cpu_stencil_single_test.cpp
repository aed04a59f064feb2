// --precision single for the CPU matrix-free stencil (make_cpu_stencil_operator(stencil,
// Precision::Single)): every y entry against a long-double loop over the model's own rows
// (RowSource) with the hopping values rounded to float and the potential in double, the
// dots against long-double sums of the stored float values, the single SELL operator of the
// same model, KPM moments at M = 4096 against double, and thread-count independence.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/block_stencil_reference.hpp"
#include "tests/support/trace_moments.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/base/block_stencil.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/sparse/sell_matrix.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/random_stencil.hpp"
#include "tests/support/single_precision.hpp"
#include "tests/support/model_params.hpp"

using namespace topokpm;
using topokpm::testing::make_block_stencil_reference_operator;
using namespace topokpm::numerics;
using topokpm::testing::SingleBlock;
using topokpm::testing::complex_plane_stencil;
using topokpm::testing::random_stencil;
using topokpm::testing::relattice;
using topokpm::testing::single_sell_operator;

namespace {

constexpr double kEpsF = std::numeric_limits<float>::epsilon();   // 2 u_f = 2^-23
constexpr double kEpsD = std::numeric_limits<double>::epsilon();  // 2 u_d = 2^-52

using cld = std::complex<long double>;

cld widen(complex_single v) { return cld(v.real(), v.imag()); }
complex_single round_f(complex_type v)
{
    return complex_single(static_cast<float>(v.real()), static_cast<float>(v.imag()));
}

std::unique_ptr<hamiltonians::Model> model(const std::string& name, int nx, int ny, int nz,
                                           const std::string& boundary = "", double disorder = 0.5)
{
    hamiltonians::ModelParams p = topokpm::testing::lattice_params(name, nx, ny, nz, boundary);
    p.disorder = disorder;
    return hamiltonians::make_model(p);
}

std::string describe(const hamiltonians::Model& m)
{
    const auto& p = m.params();
    return p.name + " " + std::to_string(p.nx) + "x" + std::to_string(p.ny) + "x" + std::to_string(p.nz) + " " +
           p.boundary;
}

/// Stored entries per stencil row, at most: the non-zero entries of the on-site block row
/// plus those of every term's block row, terms counted separately (where neighbours
/// coincide the kernel still sums them one by one).
int stencil_row_entries(const BlockStencil& s)
{
    int m = 0;
    const int b = s.orbitals;
    for (int o = 0; o < b; ++o) {
        int count = 0;
        for (int c = 0; c < b; ++c) {
            count += s.onsite[o * b + c] != complex_type(0.0, 0.0);
            for (const StencilTerm& t : s.terms) count += t.block[o * b + c] != complex_type(0.0, 0.0);
        }
        m = std::max(m, count);
    }
    return m;
}

/// The same stencil with every block value and the potential replaced by its absolute
/// value, potential set to zero when `with_potential` is false: applied to |x| with scale 1,
/// it gives H_i = sum over the kernel's terms |a| |x| per entry of y.
BlockStencil absolute(const BlockStencil& s, bool with_potential)
{
    BlockStencil a = s;
    for (complex_type& v : a.onsite) v = std::abs(v);
    for (StencilTerm& t : a.terms)
        for (complex_type& v : t.block) v = std::abs(v);
    for (double& v : a.potential) v = with_potential ? std::abs(v) : 0.0;
    return a;
}

/// Per entry of y (row-major like BlockVector): sum_k |a_ik| |x_k| over the stencil's
/// hopping terms (the values the kernel rounds to float and sums in float), potential excluded.
std::vector<double> hopping_abs_sums(const BlockStencil& s, const SingleBlock& x)
{
    const global_index n = s.num_rows();
    const int r = x.num_cols();
    BlockVector xabs(n, r), out(n, r);
    for (size_t i = 0; i < x.size(); ++i) xabs.data()[i] = std::abs(x.data()[i]);
    make_block_stencil_reference_operator(absolute(s, false))
        ->apply(xabs, out, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
    std::vector<double> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) h[i] = out.data()[i].real();
    return h;
}

/// The model's matrix by rows (RowSource), the hopping part rounded to float as the
/// stencil kernel stores it: off-diagonal a_ij -> fl(a_ij); diagonal a_ii -> fl(a_ii - V_i),
/// with V_i = model.potential(i) kept in double (the kernel applies it in the epilogue).
struct RoundedRows {
    std::vector<std::vector<global_index>> cols;
    std::vector<std::vector<cld>> vals;
    std::vector<double> potential;
};

RoundedRows rounded_rows(const hamiltonians::Model& m)
{
    const global_index n = m.num_rows();
    RoundedRows out;
    out.cols.resize(n);
    out.vals.resize(n);
    out.potential.resize(n);
    std::vector<global_index> c(m.max_row_length());
    std::vector<complex_type> v(m.max_row_length());
    for (global_index i = 0; i < n; ++i) {
        const int len = m.row(i, c.data(), v.data());
        out.potential[i] = m.potential(i);
        for (int k = 0; k < len; ++k) {
            const complex_type a = c[k] == i ? v[k] - out.potential[i] : v[k];
            out.cols[i].push_back(c[k]);
            out.vals[i].push_back(widen(round_f(a)));
        }
    }
    return out;
}

/// The same from a BlockStencil: the exact double matrix from the reference operator
/// applied to the identity (column j of H = H e_j), so coinciding neighbours are summed in
/// double as a model would; for tiny stencils that make_model refuses (periodic extent 2).
RoundedRows rounded_rows(const BlockStencil& st)
{
    const global_index n = st.num_rows();
    BlockVector id(n, static_cast<int>(n)), h(n, static_cast<int>(n));
    for (global_index i = 0; i < n; ++i) id(i, static_cast<int>(i)) = complex_type(1.0, 0.0);
    make_block_stencil_reference_operator(st)->apply(id, h, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
    RoundedRows out;
    out.cols.resize(n);
    out.vals.resize(n);
    out.potential.resize(n);
    for (global_index i = 0; i < n; ++i) {
        out.potential[i] = st.potential_per_row() ? st.potential[i] : st.potential[i / st.orbitals];
        for (global_index j = 0; j < n; ++j) {
            const complex_type a = j == i ? h(i, static_cast<int>(j)) - out.potential[i] : h(i, static_cast<int>(j));
            if (j != i && a == complex_type(0.0, 0.0)) continue;
            out.cols[i].push_back(j);
            out.vals[i].push_back(widen(round_f(a)));
        }
    }
    return out;
}

/// A stencil of `mdl` cut down to nx x ny x nz sites (any extents, also periodic 1 and 2
/// where the ±d neighbours coincide); the potential keeps its first per-site/per-row values.
BlockStencil shrunk(const hamiltonians::Model& mdl, int nx, int ny, int nz)
{
    BlockStencil s = mdl.block_stencil();
    const bool per_row = s.potential_per_row();
    s.nx = nx;
    s.ny = ny;
    s.nz = nz;
    s.potential.resize(static_cast<size_t>(per_row ? s.num_rows() : s.num_sites()));
    s.validate();
    return s;
}

std::string describe(const BlockStencil& s)
{
    std::string p;
    for (bool b : s.periodic) p += b ? 'p' : 'o';
    return s.name + " " + std::to_string(s.nx) + "x" + std::to_string(s.ny) + "x" + std::to_string(s.nz) + " " + p;
}

// Tolerances, derived (as in sell_single_test.cpp, with the potential kept in double).
// Row i's kernel sum runs over the stencil's m entries (m = stencil_row_entries) in float:
// |ŝ - s| <= (m + 2) eps_f H_i with H_i = sum |a||x| over the hopping terms (γ_m with
// u_f = eps_f / 2, room for the √2 of complex products). The reference rounds each stored
// matrix entry of the model to float; where neighbours coincide (tiny periodic extents) the
// kernel rounds the coinciding terms one by one instead of their sum, which differs by at
// most u_f per term: + eps_f / 2 H_i. The potential term (V - shift) x, the scale and
// beta y are done in double (8 eps_d on their magnitudes), and the result is rounded once
// to float: eps_f |y_i|. The dots are summed in double from the stored float x and ŷ:
// against a long-double sum of those values the error is <= 2 (N + 2) eps_d sum |y||x|,
// which a float accumulation (~1e8 times larger) fails.
// The R = 1 shifted-load form (graphene's line interiors) and the R = 1 site form (ti, B = 4)
// do the epilogue in float instead (stencil_kernels.hpp), as do R >= 2, with scale and a uniform d = V - shift dithered between
// the two floats around them (each within one ulp: 2 u_f |.|): d (2 u_f |d|), t = fl(ŝ +
// d x) (u_f (H_i + |d||x|)), scale (2 u_f |scale t|), o = fl(fl(beta) y0) (2 u_f |beta y0|),
// y = fl(scale t + o) (u_f |y|, within the eps_f |y_i| above). Beyond the terms above that
// is at most eps_f (2.5 |scale| |d| |x_i| + |beta| |y0_i|): the H_i part, 3 u_f |scale| H_i,
// fits in the (m + 2.5) eps_f term, whose float sum needs at most sqrt(2) (m + 1) u_f. Its
// dots sum runs of kSingleDotRun products per lane in float first (SingleDotReference).
void check_step_against_rows(const BlockStencil& st, const RoundedRows& rows, const SingleBlock& x,
                             const SingleBlock& y0, const SingleBlock& y, const DotSums& dots, const AugmentedOps& ops,
                             const std::string& what)
{
    const global_index n = st.num_rows();
    const int r = x.num_cols();
    const int m = stencil_row_entries(st);
    const std::vector<double> h = hopping_abs_sums(st, x);
    for (int c = 0; c < r; ++c) {
        topokpm::testing::SingleDotReference dot_ref;
        for (global_index i = 0; i < n; ++i) {
            cld s = 0;
            for (size_t k = 0; k < rows.cols[i].size(); ++k) s += rows.vals[i][k] * widen(x(rows.cols[i][k], c));
            const long double dshift = static_cast<long double>(rows.potential[i]) - ops.shift;
            cld v = cld(ops.scale) * (s + dshift * widen(x(i, c)));
            if (ops.beta != 0.0) v += cld(ops.beta) * widen(y0(i, c));
            const double hi = h[static_cast<size_t>(i) * r + c];
            const double float_epilogue =
                kEpsF * (2.5 * std::abs(ops.scale) * std::abs(static_cast<double>(dshift)) * std::abs(x(i, c)) +
                         (ops.beta != 0.0 ? std::abs(ops.beta) * std::abs(y0(i, c)) : 0.0));
            const double bound =
                kEpsF * (m + 2.5) * std::abs(ops.scale) * hi + kEpsF * static_cast<double>(std::abs(v)) +
                float_epilogue + 8 * kEpsD *
                    (std::abs(ops.scale) * (hi + std::abs(static_cast<double>(dshift)) * std::abs(x(i, c))) +
                     (ops.beta != 0.0 ? std::abs(ops.beta) * std::abs(y0(i, c)) : 0.0));  // y0 NaN when unread
            ASSERT_LE(static_cast<double>(std::abs(widen(y(i, c)) - v)), bound) << what << " row " << i << " col " << c;
            dot_ref.add(x(i, c), y(i, c));
        }
        dot_ref.expect_matches(dots, c, what, kSingleDotRun);
    }
}

/// One apply_two_steps() of `op` on random-phase blocks of width r with `threads` threads,
/// each step checked against the rows (step B on step A's float output; beta = 0: y starts
/// as NaN, which must never be read).
void check_two_steps_against_rows(const Operator& op, const BlockStencil& st, const RoundedRows& rows, int r,
                                  int threads, double beta, const std::string& what)
{
    const global_index n = st.num_rows();
    const AugmentedOps ops{0.7, -0.3, beta, true};
    BlockVector xd(n, r), yd(n, r);
    fill_random_phase_vectors(xd, 7, 0, n);
    fill_random_phase_vectors(yd, 8, 0, n);
    const SingleBlock x0 = convert_block<complex_single>(xd);
    SingleBlock y0 = convert_block<complex_single>(yd);
    if (beta == 0.0)
        for (size_t i = 0; i < y0.size(); ++i) y0.data()[i] = complex_single(NAN, NAN);
    SingleBlock x = x0, y = y0;
    DotSums first, second;
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    op.apply_two_steps(x, y, ops, &first, &second);
    omp_set_num_threads(saved);
    check_step_against_rows(st, rows, x0, y0, y, first, ops, what + " step A");
    check_step_against_rows(st, rows, y, x0, x, second, ops, what + " step B");
}

void check_against_rows(const BlockStencil& st, const RoundedRows& rows, const Operator& op, int r,
                        const AugmentedOps& ops, const std::string& what)
{
    const global_index n = st.num_rows();
    BlockVector xd(n, r), yd(n, r);
    fill_random_phase_vectors(xd, 5, 0, n);
    fill_random_phase_vectors(yd, 6, 0, n);
    const SingleBlock x = convert_block<complex_single>(xd);
    SingleBlock y0 = convert_block<complex_single>(yd);
    if (ops.beta == 0.0)
        for (size_t i = 0; i < y0.size(); ++i) y0.data()[i] = complex_single(NAN, NAN);  // never read
    SingleBlock y = y0;
    DotSums dots;

    op.apply(x, y, ops, &dots);
    check_step_against_rows(st, rows, x, y0, y, dots, ops, what);
}

}  // namespace

// ti with open z and periodic x, y (the default "ppo", long enough in z for fast groups at
// every G), open x, and graphene (nz = 1: the relabelled axes, potential per row), with
// disorder, against the models' rows (RowSource). Then tiny lattices that make_model
// refuses, where neighbours coincide (periodic extents 1 and 2: ±y, ±z or ±x are one site,
// and the kernel sums both terms): ti 3x2x2 "ppo" and "ppp", ti 2x1x3 "ppp", graphene 2x2,
// against the reference operator's exact double matrix. Widths: the register-blocked 8,
// 16, 32, the plain 1, 2, 4 and the generic 3; beta 0 (NaN garbage in y), -1 (the KPM
// step) and 0.5.
TEST(CpuStencilSingle, EqualsLongDoubleLoopOverTheModelRowsWithFloatHoppings)
{
    std::vector<std::unique_ptr<hamiltonians::Model>> models;
    models.push_back(model("ti", 6, 5, 8));
    models.push_back(model("ti", 4, 3, 5, "opo"));
    models.push_back(model("graphene", 6, 5, 1));
    models.push_back(model("graphene", 3, 4, 1, "po"));
    models.push_back(model("graphene", 4, 26, 1));        // long columns: the R = 1 shifted-load form
    models.push_back(model("graphene", 3, 21, 1, "op"));  // (whole vectors of 8 interior rows)
    models.push_back(model("graphene", 4, 24, 1, "pp", 0.0));  // uniform potential (0)
    models.push_back(model("ti", 4, 3, 7, "ppo", 0.0));  // uniform: the site form's dithered V - shift; a lone site
    std::vector<std::pair<BlockStencil, RoundedRows>> cases;
    for (const auto& mdl : models) cases.emplace_back(mdl->block_stencil(), rounded_rows(*mdl));
    const auto ti = model("ti", 3, 3, 3, "ppp");
    for (const BlockStencil& s : {shrunk(*model("ti", 3, 3, 3), 3, 2, 2), shrunk(*ti, 3, 2, 2), shrunk(*ti, 2, 1, 3),
                                  shrunk(*model("graphene", 3, 3, 1), 2, 2, 1)})
        cases.emplace_back(s, rounded_rows(s));
    for (const auto& [st, rows] : cases) {
        const auto op = make_cpu_stencil_operator(st, Precision::Single);
        ASSERT_EQ(op->precision(), Precision::Single);
        for (const int r : {1, 2, 3, 4, 8, 16, 32})
            for (const double beta : {0.0, -1.0, 0.5})
                check_against_rows(st, rows, *op, r, AugmentedOps{0.7, -0.3, beta, true},
                                   describe(st) + " R=" + std::to_string(r) + " beta=" + std::to_string(beta));
    }
}

// The site form (B = 4) in float at R = 1 and 8 on random dense complex blocks (every XOR diagonal,
// items with both a real and an imaginary part; a diagonal and a range-2 term: boundary
// classes, so lone sites at the z faces and pairs in the interior), every boundary, the
// potential per site, per row and uniform (the dithered V - shift): every y entry within
// the float bound above, the dots within the float-run bound.
TEST(CpuStencilSingle, SiteFormRandomStencilsEveryBoundaryWithinTheFloatBound)
{
    const BlockStencil base = random_stencil(4, 44);
    unsigned seed = 3;
    for (int mask = 0; mask < 8; ++mask) {
        const std::array<bool, 3> per{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
        std::vector<BlockStencil> stencils{relattice(base, 3, 4, 11, per, false, seed),
                                           relattice(base, 2, 3, 10, per, true, seed + 1),
                                           relattice(base, 3, 2, 9, per, false, seed + 2)};
        seed += 3;
        std::fill(stencils[2].potential.begin(), stencils[2].potential.end(), 0.4);  // uniform
        for (const BlockStencil& st : stencils) {
            const RoundedRows rows = rounded_rows(st);
            const auto op = make_cpu_stencil_operator(st, Precision::Single);
            for (const int r : {1, 8})
                for (const double beta : {0.0, -1.0, 0.5})
                    check_against_rows(st, rows, *op, r, AugmentedOps{0.7, -0.3, beta, true},
                                       describe(st) + (st.potential_per_row() ? " V/row" : " V/site") + " R=" +
                                           std::to_string(r) + " beta=" + std::to_string(beta));
            if (::testing::Test::HasFailure()) return;
        }
    }
}

// Two fused steps (Operator::apply_two_steps, temporal blocking) in single precision: each
// step against the long-double loop over the rows with the float bound above, step B on the
// float output of step A (a block skipped by either step keeps its old values and fails).
TEST(CpuStencilSingle, TwoFusedStepsEachWithinTheFloatBound)
{
    std::vector<std::unique_ptr<hamiltonians::Model>> models;
    models.push_back(model("graphene", 6, 5, 1));
    models.push_back(model("graphene", 5, 26, 1));
    models.push_back(model("graphene", 3, 21, 1, "op"));
    models.push_back(model("graphene", 7, 24, 1, "pp", 0.0));  // uniform potential (0)
    for (const auto& mdl : models) {
        const BlockStencil st = mdl->block_stencil();
        const RoundedRows rows = rounded_rows(*mdl);
        for (const int block_lines : {1, 2, -1}) {
            StencilTuning tuning;
            tuning.tblock_lines = block_lines;
            const auto op = make_cpu_stencil_operator(st, Precision::Single, tuning);
            ASSERT_EQ(op->fused_steps(1), 2) << describe(*mdl);
            const std::string lines = block_lines > 0 ? std::to_string(block_lines) : std::string();
            for (const int threads : {1, 2})
                for (const double beta : {0.0, -1.0}) {
                    check_two_steps_against_rows(*op, st, rows, 1, threads, beta,
                                                 describe(*mdl) + " lines=" + lines + " threads=" +
                                                     std::to_string(threads) + " beta=" + std::to_string(beta));
                    if (::testing::Test::HasFailure()) return;
                }
        }
    }
}

// The same for ti at R = 1 and 8, where single runs the x-plane wavefront on the float site
// forms (stencil_sweep.cpp, two_steps_planes; R = 8: the grouped items): every boundary,
// disorder (a potential per site) and a uniform potential, strips of 1 and 2 columns and the
// default, 1 to 3 threads (1-3 planes per thread: every plane deferred somewhere).
TEST(CpuStencilSingle, TiTwoFusedStepsAtWidthsOneAndEightEachWithinTheFloatBound)
{
    std::vector<std::unique_ptr<hamiltonians::Model>> models;
    models.push_back(model("ti", 5, 3, 9, "ppo"));
    models.push_back(model("ti", 4, 4, 6, "ppp"));
    models.push_back(model("ti", 3, 5, 4, "ooo", 0.0));  // uniform: the dithered V - shift
    models.push_back(model("ti", 6, 2, 5, "pop"));
    for (const auto& mdl : models) {
        const BlockStencil st = mdl->block_stencil();
        const RoundedRows rows = rounded_rows(*mdl);
        for (const int strip : {1, 2, 0}) {
            StencilTuning tuning;
            tuning.tblock_strip_sites = strip;
            const auto op = make_cpu_stencil_operator(st, Precision::Single, tuning);
            for (const int r : {1, 8}) {
                ASSERT_EQ(op->fused_steps(r), 2) << describe(*mdl) << " R=" << r;
                for (const int threads : {1, 2, 3})
                    for (const double beta : {0.0, -1.0}) {
                        check_two_steps_against_rows(*op, st, rows, r, threads, beta,
                                                     describe(*mdl) + " R=" + std::to_string(r) + " strip=" +
                                                         std::to_string(strip) + " threads=" + std::to_string(threads) +
                                                         " beta=" + std::to_string(beta));
                        if (::testing::Test::HasFailure()) return;
                    }
            }
        }
    }
}

// Name, cost and the precision seam: the one-argument function (and Precision::Double)
// stays double and refuses complex-float blocks; the single operator's apply() is the single sweep
// on the rounded inputs, widened exactly.
TEST(CpuStencilSingle, NameCostAndDoubleInterface)
{
    const auto mdl = model("ti", 4, 4, 6);
    const BlockStencil st = mdl->block_stencil();
    const auto sgl = make_cpu_stencil_operator(st, Precision::Single);
    const auto dbl = make_cpu_stencil_operator(st);
    const auto dbl2 = make_cpu_stencil_operator(st, Precision::Double);
    EXPECT_EQ(sgl->name(), "ti-stencil-cpu-single");
    EXPECT_EQ(dbl->name(), "ti-stencil-cpu");
    EXPECT_EQ(dbl2->name(), "ti-stencil-cpu");
    EXPECT_EQ(dbl->precision(), Precision::Double);
    EXPECT_EQ(dbl2->precision(), Precision::Double);
    EXPECT_EQ(sgl->cost().matrix_bytes, 8.0 * static_cast<double>(st.num_sites()));
    EXPECT_EQ(sgl->cost().matrix_bytes, dbl->cost().matrix_bytes);
    EXPECT_EQ(sgl->cost().nonzeros, dbl->cost().nonzeros);

    const global_index n = mdl->num_rows();
    for (const int r : {1, 8}) {
        BlockVector x(n, r), y(n, r);
        fill_random_phase_vectors(x, 1, 0, n);
        fill_random_phase_vectors(y, 2, 0, n);
        const SingleBlock xs = convert_block<complex_single>(x);
        SingleBlock ys = convert_block<complex_single>(y);
        DotSums ds, dd;
        const AugmentedOps ops{0.5, 0.25, -1.0, true};
        sgl->apply(xs, ys, ops, &ds);
        sgl->apply(x, y, ops, &dd);
        const BlockVector expected = convert_block<complex_double>(ys);
        for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y.data()[i], expected.data()[i]) << "R=" << r << " " << i;
        EXPECT_EQ(ds.xx, dd.xx);
        EXPECT_EQ(ds.yx, dd.yx);
        SingleBlock yt(n, r);
        EXPECT_THROW(dbl->apply(xs, yt, ops, &ds), InputError);
    }
}

// The single stencil against the single SELL operator of the same model at R = 8: both are
// within their float bound of the exact product (the SELL one rounds the whole diagonal,
// potential included, to float and sums m entries: (m + 2.5) eps_f S_i with S_i the sum
// including |V||x|), so they differ by at most the sum of the two bounds.
TEST(CpuStencilSingle, AgreesWithSingleSellWithinTheFloatBound)
{
    for (const auto& mdl : {model("ti", 6, 5, 8), model("graphene", 6, 5, 1)}) {
        const BlockStencil st = mdl->block_stencil();
        const global_index n = mdl->num_rows();
        const int r = 8;
        const int m = std::max(stencil_row_entries(st), mdl->max_row_length());
        const auto stencil = make_cpu_stencil_operator(st, Precision::Single);
        const auto sell = single_sell_operator(SellMatrix::build(*mdl, 0, n, {8, 32}));
        BlockVector xd(n, r), yd(n, r);
        fill_random_phase_vectors(xd, 3, 0, n);
        fill_random_phase_vectors(yd, 4, 0, n);
        const SingleBlock x = convert_block<complex_single>(xd);
        const SingleBlock y0 = convert_block<complex_single>(yd);
        SingleBlock ya = convert_block<complex_single>(yd), yb = convert_block<complex_single>(yd);
        const AugmentedOps ops{0.6, 0.2, -1.0, true};
        DotSums da, db;
        stencil->apply(x, ya, ops, &da);
        sell->apply(x, yb, ops, &db);
        // S_i including the potential, from the absolute-value stencil.
        BlockVector xabs(n, r), sabs(n, r);
        for (size_t i = 0; i < x.size(); ++i) xabs.data()[i] = std::abs(x.data()[i]);
        make_block_stencil_reference_operator(absolute(st, true))
            ->apply(xabs, sabs, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
        double worst = 0;
        std::vector<double> yx_bound(r, 0.0);  // |sum conj(dy) x| <= sum bound_i |x_i|
        for (size_t i = 0; i < ya.size(); ++i) {
            const global_index row = static_cast<global_index>(i) / r;
            const double s = sabs.data()[i].real();
            const double small = 8 * kEpsD *
                                 (std::abs(ops.scale) * (s + std::abs(ops.shift) * std::abs(x.data()[i])) +
                                  std::abs(ops.beta) * std::abs(y0.data()[i]));
            // Both float epilogues (stencil: d = V - shift, SELL: d = -shift; |d||x| <= S_i + |shift||x|):
            // eps_f (1.5 |scale| S_i + 2.5 |scale| |d||x_i| + |beta||y0_i|) each (sell_single_test.cpp).
            const double float_epilogue =
                2 * kEpsF *
                (4.0 * std::abs(ops.scale) * (s + std::abs(ops.shift) * std::abs(x.data()[i])) +
                 std::abs(ops.beta) * std::abs(y0.data()[i]));
            const double bound = 2 * kEpsF * (m + 2.5) * std::abs(ops.scale) * s +
                                 kEpsF * (std::abs(ya.data()[i]) + std::abs(yb.data()[i])) + float_epilogue + 2 * small;
            const double d = std::abs(widen(ya.data()[i]) - widen(yb.data()[i]));
            ASSERT_LE(d, bound) << describe(*mdl) << " row " << row << " col " << i % r;
            worst = std::max(worst, d / bound);
            // y differs by d; each dot sum by 2 (N + 2) eps_d + (kSingleDotRun + 1) eps_f times
            // sum |y||x| (float runs, then double: single_precision.hpp)
            const double dot_eps = 2 * (n + 2) * kEpsD + (kSingleDotRun + 1) * kEpsF;
            yx_bound[i % r] += bound * std::abs(x.data()[i]) +
                               dot_eps * (std::abs(ya.data()[i]) + std::abs(yb.data()[i])) * std::abs(x.data()[i]);
        }
        for (int c = 0; c < r; ++c) {
            // the same float x: both within (2 (N + 2) eps_d + (kSingleDotRun + 1) eps_f) <x|x> of it
            EXPECT_NEAR(da.xx[c], db.xx[c], 2 * (2 * (n + 2) * kEpsD + (kSingleDotRun + 1) * kEpsF) * da.xx[c]);
            EXPECT_LE(std::abs(da.yx[c] - db.yx[c]), yx_bound[c]);
        }
        std::printf("[ info ] %s R = 8: max |y_stencil - y_sell| = %.3g of the bound\n", describe(*mdl).c_str(),
                    worst);
    }
}

// The moments of a single-precision KPM run on the stencil at M = 4096 against the double
// stencil, with the random-walk rounding model of
// SellFloat.MomentsAtM4096StayWithinTheRoundingModelOfDouble (docs/performance.md):
//     |Δmu_n| <= 4 kappa c eps_f sqrt(n / 2 + 1),  c = (m + 3)(2 ||Ht||_inf + 1),
// kappa = 1 / sqrt(1 - (1 - e/2)^2), and the largest difference below 1 % of the
// stochastic error 1 / sqrt(N R). The single SELL run is held to the same bound.
TEST(CpuStencilSingle, MomentsAtM4096StayWithinTheRoundingModelOfDouble)
{
    const auto mdl = model("ti", 10, 10, 6, "", 0.0);
    const global_index n = mdl->num_rows();
    const BlockStencil st = mdl->block_stencil();
    const auto dbl = make_cpu_stencil_operator(st);
    const auto sgl = make_cpu_stencil_operator(st, Precision::Single);
    const auto sell = single_sell_operator(SellMatrix::build(*mdl, 0, n, {8, 64}));
    const SpectralBounds gb = gershgorin_bounds(*mdl);
    const double epsilon = 0.01;
    const KpmScaling scaling = kpm_scaling(gb, epsilon);
    const int num_moments = 4096, r = 4;

    // One thread: 3 x 2048 sweeps of 2400 rows are ~0.1 ms each, where two threads spend
    // their time in the barriers and a loaded machine turns 0.7 s into 20 s; the thread
    // count is tested below.
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const topokpm::testing::TraceMoments md = topokpm::testing::stochastic_trace(*dbl, num_moments, r, 7, scaling);
    const topokpm::testing::TraceMoments ms = topokpm::testing::stochastic_trace(*sgl, num_moments, r, 7, scaling);
    const topokpm::testing::TraceMoments ml = topokpm::testing::stochastic_trace(*sell, num_moments, r, 7, scaling);
    omp_set_num_threads(saved);

    const int max_row = std::max(mdl->max_row_length(), stencil_row_entries(st));
    double worst_ratio = 0, worst_abs = 0, worst_sell = 0;
    for (int k = 0; k < num_moments; ++k) {
        const double bound = topokpm::testing::single_moment_bound(k, max_row, epsilon);
        const double d = std::abs(ms.moments[k] - md.moments[k]);
        ASSERT_LE(d, bound) << "mu_" << k << ": single " << ms.moments[k] << ", double " << md.moments[k];
        ASSERT_LE(std::abs(ms.moments[k] - ml.moments[k]), 2 * bound) << "mu_" << k << " stencil vs sell single";
        worst_ratio = std::max(worst_ratio, d / bound);
        worst_abs = std::max(worst_abs, d);
        worst_sell = std::max(worst_sell, std::abs(ms.moments[k] - ml.moments[k]));
    }
    const double stochastic = 1.0 / std::sqrt(static_cast<double>(n) * r);
    EXPECT_LT(worst_abs, 0.01 * stochastic) << "single-precision rounding is not negligible against the trace's noise";
    std::printf("[ info ] ti 10x10x6 (N = %lld), M = %d, R = %d: stencil max |mu_single - mu_double| = %.3g (%.3g "
                "of the rounding bound, %.3g of the stochastic error %.3g); max |mu_stencil_single - "
                "mu_sell_single| = %.3g\n",
                static_cast<long long>(n), num_moments, r, worst_abs, worst_ratio, worst_abs / stochastic, stochastic,
                worst_sell);
}

namespace {

/// The moments of single against double on `mdl` at width r (default 1), M = 4096: every
/// moment within the bound of MomentsAtM4096StayWithinTheRoundingModelOfDouble, the largest
/// difference below 1 % of the stochastic error.
void expect_r1_moments_within_the_rounding_model(const hamiltonians::Model& mdl, const Operator& dbl,
                                                 const Operator& sgl, const std::string& what, int r = 1)
{
    const global_index n = mdl.num_rows();
    const double epsilon = 0.01;
    const KpmScaling scaling = kpm_scaling(gershgorin_bounds(mdl), epsilon);
    const int num_moments = 4096;
    const topokpm::testing::TraceMoments md = topokpm::testing::stochastic_trace(dbl, num_moments, r, 9, scaling);
    const topokpm::testing::TraceMoments ms = topokpm::testing::stochastic_trace(sgl, num_moments, r, 9, scaling);
    const int max_row = std::max(mdl.max_row_length(), stencil_row_entries(mdl.block_stencil()));
    double worst_ratio = 0, worst_abs = 0;
    for (int k = 0; k < num_moments; ++k) {
        const double bound = topokpm::testing::single_moment_bound(k, max_row, epsilon);
        const double d = std::abs(ms.moments[k] - md.moments[k]);
        ASSERT_LE(d, bound) << what << " mu_" << k << ": single " << ms.moments[k] << ", double " << md.moments[k];
        worst_ratio = std::max(worst_ratio, d / bound);
        worst_abs = std::max(worst_abs, d);
    }
    const double stochastic = 1.0 / std::sqrt(static_cast<double>(n) * r);
    EXPECT_LT(worst_abs, 0.01 * stochastic) << what;
    std::printf("[ info ] %s (N = %lld), M = %d, R = %d: max |mu_single - mu_double| = %.3g (%.3g of the rounding "
                "bound, %.3g of the stochastic error)\n",
                what.c_str(), static_cast<long long>(n), num_moments, r, worst_abs, worst_ratio, worst_abs / stochastic);
}

}  // namespace

// The same rounding model for graphene at R = 1, where both precisions run two fused steps per
// pass and the single one the float epilogue and float dot runs of the shifted-load form:
// every moment of M = 4096 within the bound of the test above, the largest difference below
// 1 % of the stochastic error, with and without disorder (potential per row / uniform).
TEST(CpuStencilSingle, GrapheneTwoStepMomentsAtM4096StayWithinTheRoundingModelOfDouble)
{
    for (const double disorder : {0.0, 0.5}) {
        const auto mdl = model("graphene", 16, 64, 1, "pp", disorder);
        const BlockStencil st = mdl->block_stencil();
        const auto dbl = make_cpu_stencil_operator(st);
        const auto sgl = make_cpu_stencil_operator(st, Precision::Single);
        ASSERT_EQ(dbl->fused_steps(1), 2);
        ASSERT_EQ(sgl->fused_steps(1), 2);
        expect_r1_moments_within_the_rounding_model(*mdl, *dbl, *sgl,
                                                    "graphene 16x64 disorder " + std::to_string(disorder) +
                                                        ", two steps per pass");
    }
}

// Two steps per pass at R > 1 in float (the strip form, numerics/cpu/stencil_two_step_wide.hpp:
// narrow vectors at R = 2, 4, folded couplings and a uniform V - shift dithered over the
// sites, beta y added last, float dot runs): each step against the long-double loop over the
// rows with the float bound above, step B on the float output of step A. Graphene with every
// boundary, a potential per row and a uniform one (0 and 0.25), the complex plane stencil
// (site reach 2, complex couplings); strips of 1 and 5 sites and the default, 1, 2 and 3
// threads; beta -1 (the KPM step), 0 (NaN in y: never read) and 0.5.
TEST(CpuStencilTwoStepsWideSingle, EachStepWithinTheFloatBoundForEveryStripAndThreadCount)
{
    std::vector<BlockStencil> cases;
    for (const char* bc : {"pp", "po", "op", "oo"}) cases.push_back(model("graphene", 7, 12, 1, bc)->block_stencil());
    cases.push_back(model("graphene", 5, 9, 1, "pp", 0.0)->block_stencil());  // uniform potential (0)
    cases.push_back(relattice(cases[0], 5, 11, 1, {false, true, false}, false, 42));
    for (double& v : cases.back().potential) v = 0.25;  // uniform, not zero: the dithered scale (V - shift)
    cases.push_back(complex_plane_stencil(6, 9, {true, true, false}, 43));
    cases.push_back(complex_plane_stencil(4, 7, {false, false, false}, 44));
    for (const BlockStencil& st : cases) {
        const RoundedRows rows = rounded_rows(st);
        for (const int r : {2, 4, 8, 16, 32})
            for (const int strip : {1, 5, 0}) {  // 0: the default strip
                StencilTuning tuning;
                tuning.tblock_strip_sites = strip;
                const auto op = make_cpu_stencil_operator(st, Precision::Single, tuning);
                ASSERT_EQ(op->fused_steps(r), 2) << describe(st);
                for (const int threads : {1, 2, 3})
                    for (const double beta : {-1.0, 0.0, 0.5}) {
                        check_two_steps_against_rows(*op, st, rows, r, threads, beta,
                                                     describe(st) + " R=" + std::to_string(r) + " strip=" +
                                                         std::to_string(strip) + " threads=" +
                                                         std::to_string(threads) + " beta=" + std::to_string(beta));
                        if (::testing::Test::HasFailure()) return;
                    }
            }
    }
}

// The rounding model of the moments at M = 4096 for the strip form: graphene at R = 2, 4 and
// 16, both precisions two steps per pass (double: the strip kernel in double), with and
// without disorder (a per-row potential; the dithered uniform one).
TEST(CpuStencilTwoStepsWideSingle, KpmMomentsAtM4096StayWithinTheRoundingModelOfDouble)
{
    const int saved = omp_get_max_threads();
    for (const double disorder : {0.0, 0.5}) {
        const auto mdl = model("graphene", 16, 64, 1, "pp", disorder);
        const BlockStencil st = mdl->block_stencil();
        const auto dbl = make_cpu_stencil_operator(st);
        const auto sgl = make_cpu_stencil_operator(st, Precision::Single);
        for (const int r : {2, 4, 16}) {
            ASSERT_EQ(dbl->fused_steps(r), 2);
            ASSERT_EQ(sgl->fused_steps(r), 2);
            omp_set_num_threads(r == 16 ? 2 : 1);
            expect_r1_moments_within_the_rounding_model(*mdl, *dbl, *sgl,
                                                        "graphene 16x64 disorder " + std::to_string(disorder) +
                                                            ", strips of two steps per pass",
                                                        r);
            omp_set_num_threads(saved);
        }
    }
}

// The same for ti at R = 1, where both precisions run the site form (single: two sites per
// float vector, the dithered scale and, without disorder, the dithered uniform V - shift).
TEST(CpuStencilSingle, TiSiteFormMomentsAtM4096StayWithinTheRoundingModelOfDouble)
{
    for (const double disorder : {0.0, 0.5}) {
        const auto mdl = model("ti", 10, 10, 6, "", disorder);
        const BlockStencil st = mdl->block_stencil();
        const auto dbl = make_cpu_stencil_operator(st);
        const auto sgl = make_cpu_stencil_operator(st, Precision::Single);
        expect_r1_moments_within_the_rounding_model(*mdl, *dbl, *sgl, "ti 10x10x6 disorder " + std::to_string(disorder));
    }
}

// Rows are independent: y is bit for bit the same on 1, 2 and 3 threads (and with forced
// small tiles, which cut the site form's pairs elsewhere: a site alone and a site in a pair
// round alike; the dithered scale and uniform V - shift depend on the row only: scale 0.7
// is not a float); the dots differ in the order of the per-thread double sums and in where
// the float runs start. ti with disorder and without (uniform potential), and a random
// B = 4 stencil (products that are not exact in float).
TEST(CpuStencilSingle, ThreadCountChangesOnlyTheDotSummationOrder)
{
    const std::vector<BlockStencil> stencils{model("ti", 6, 5, 8)->block_stencil(),
                                             model("ti", 6, 5, 8, "", 0.0)->block_stencil(),
                                             relattice(random_stencil(4, 45), 6, 5, 8, {true, true, false}, false, 5)};
    for (const BlockStencil& st : stencils) {
        const global_index n = st.num_rows();
        const auto op = make_cpu_stencil_operator(st, Precision::Single);
        StencilTuning small;
        small.tiles = {2, 2, 3};
        const auto tiled = make_cpu_stencil_operator(st, Precision::Single, small);
        const int saved = omp_get_max_threads();
        for (const int r : {1, 3, 8, 16, 32}) {
            BlockVector xd(n, r);
            fill_random_phase_vectors(xd, 4, 0, n);
            const SingleBlock x = convert_block<complex_single>(xd);
            std::vector<complex_single> first;
            DotSums first_dots;
            for (const int threads : {1, 2, 3, 0}) {
                omp_set_num_threads(threads > 0 ? threads : 2);
                SingleBlock y(n, r);
                DotSums dots;
                (threads == 0 ? tiled : op)->apply(x, y, AugmentedOps{0.7, 0.1, 0.0, true}, &dots);  // 0: small tiles, 2 threads
                if (threads == 1) {
                    first.assign(y.data(), y.data() + y.size());
                    first_dots = dots;
                    continue;
                }
                for (size_t i = 0; i < y.size(); ++i)
                    ASSERT_EQ(y.data()[i], first[i]) << describe(st) << ", " << threads << " threads, R = " << r
                                                     << ", entry " << i;
                // Each within (2 (N + 2) eps_d + (kSingleDotRun + 1) eps_f) sum |y||x| of the exact
                // sum of the stored values (float runs of the float epilogue, R >= 2: where the
                // threads split the rows the runs differ), so twice that apart.
                const double eps = 2 * (2 * (n + 2) * kEpsD + (kSingleDotRun + 1) * kEpsF);
                for (int c = 0; c < r; ++c) {
                    double yx_abs = 0;
                    for (global_index i = 0; i < n; ++i)
                        yx_abs += std::abs(first[static_cast<size_t>(i) * r + c]) * std::abs(x(i, c));
                    EXPECT_NEAR(dots.xx[c], first_dots.xx[c], eps * first_dots.xx[c]);
                    EXPECT_NEAR(std::abs(dots.yx[c] - first_dots.yx[c]), 0.0, eps * yx_abs);
                }
            }
        }
        omp_set_num_threads(saved);
    }
}
