// The CPU matrix-free stencil operator (make_cpu_stencil_operator) against the naive
// BlockStencil reference (make_block_stencil_reference_operator): the ti and graphene
// stencils of the models and hand-made stencils (generic B, merged and long-range terms),
// every boundary combination, odd and tiny extents (1 and 2 in periodic directions, where
// neighbours coincide), block widths R with and without a specialised kernel, beta = 0
// (y pre-filled with NaN) and beta != 0, dots on and off, potential per site and per row.
// At R = 1 with B = 4 every site runs on the site form (a table per class of boundary
// coordinates, up to eight sites of one class per step): the ti cases (odd nz: a last site
// alone; forced z-tiles: steps cut at tile ends; tiny extents: coinciding neighbours) and the
// random B = 4 stencils (dense complex blocks: every XOR diagonal, Re and Im items; a
// diagonal and a range-2 term: more boundary classes) test it.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/base/block_stencil.hpp"
#include "numerics/kpm/block_trace.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/lanczos/lanczos.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/block_stencil_reference.hpp"
#include "tests/support/dense_oracle.hpp"
#include "tests/support/random_stencil.hpp"
#include "tests/support/trace_moments.hpp"

using namespace topokpm;
using topokpm::testing::make_block_stencil_reference_operator;
using topokpm::testing::complex_plane_stencil;
using topokpm::testing::random_stencil;
using topokpm::testing::relattice;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

std::string describe(const BlockStencil& s)
{
    std::string p;
    for (bool b : s.periodic) p += b ? 'p' : 'o';
    return s.name + " " + std::to_string(s.nx) + "x" + std::to_string(s.ny) + "x" + std::to_string(s.nz) + " " + p +
           " B=" + std::to_string(s.orbitals) + (s.potential_per_row() ? " V/row" : " V/site");
}

BlockVector random_block(global_index n, int r, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    BlockVector v(n, r);
    for (size_t i = 0; i < v.size(); ++i) v.data()[i] = complex_type(u(gen), u(gen));
    return v;
}

/// The same stencil with every block entry, the potential and (by the caller) x replaced
/// by absolute values: applying it with scale 1, shift 0, beta 0 gives, per entry of y,
/// S_i = sum_j |H_ij| |x_j| (the potential counted as its own term), the sum of the
/// absolute values of the terms that both operators add up.
BlockStencil absolute(const BlockStencil& s)
{
    BlockStencil a = s;
    for (complex_type& v : a.onsite) v = std::abs(v);
    for (StencilTerm& t : a.terms)
        for (complex_type& v : t.block) v = std::abs(v);
    for (double& v : a.potential) v = std::abs(v);
    a.field = {};  // |v f| = |v|: a field's phases change no modulus
    return a;
}

/// bound_i = 2 (m + 4) eps [|scale| S_i + |scale shift| |x_i| + |beta| |y0_i|] per entry of y,
/// m = (T + 1) B + 1 (derivation below, at expect_matches_reference).
std::vector<double> entry_bounds(const BlockStencil& s, const BlockVector& x, const BlockVector& y0,
                                 const AugmentedOps& ops)
{
    const global_index n = s.num_rows();
    const int r = x.num_cols();
    // S_i = sum_j |H_ij||x_j| from the absolute-value stencil.
    BlockVector xabs(n, r);
    for (size_t i = 0; i < x.size(); ++i) xabs.data()[i] = std::abs(x.data()[i]);
    BlockVector sabs(n, r);
    make_block_stencil_reference_operator(absolute(s))->apply(xabs, sabs, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
    const double m = static_cast<double>((s.terms.size() + 1) * s.orbitals + 1);
    std::vector<double> bound(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const double yabs = ops.beta == 0.0 ? 0.0 : std::abs(y0.data()[i]);
        bound[i] = 2.0 * (m + 4.0) * kEps *
                   (std::abs(ops.scale) * sabs.data()[i].real() + std::abs(ops.scale * ops.shift) * std::abs(x.data()[i]) +
                    std::abs(ops.beta) * yabs);
    }
    return bound;
}

/// Compares make_cpu_stencil_operator(s) with the reference for one (R, ops) case.
///
/// Tolerance, derived. Entry (i, c) of y is  scale (sum_j H_ij x_j - shift x_i) + beta y_i,
/// a sum of at most m = (T + 1) B + 1 products (T terms and the on-site block with B columns
/// each, plus the potential) of O(1) numbers. Whatever the summation order, recursive
/// summation of m terms has error <= gamma_m sum |terms| with gamma_m = m u / (1 - m u),
/// u = eps / 2, and each complex product adds <= sqrt(2) gamma_2 |H_ij||x_j|; the epilogue
/// (shift, scale, axpby) adds at most 4 more roundings on each of its terms. So each
/// operator is within  (m + 4) eps [|scale| S_i + |scale shift| |x_i| + |beta| |y_i|]  of
/// the exact value (first order, sqrt(2) gamma_2 <= 2 eps absorbed in the + 4), and the two
/// differ by at most twice that:  bound_i = 2 (m + 4) eps [...].
/// Dots: xx_c = sum_i |x_ic|^2 and yx_c = sum_i conj(y_ic) x_ic over N rows, summed in any
/// order (per thread, then thread order): each within 2 (N + 2) eps sum_i |.| (the complex
/// products' sqrt(2) gamma_2 included), so the two differ by twice that; yx also carries
/// the difference of the y's: sum_i bound_i |x_ic|.
void expect_matches_reference(const BlockStencil& s, int r, const AugmentedOps& ops, unsigned seed,
                              const numerics::StencilTuning& tuning = {})
{
    SCOPED_TRACE(describe(s) + " R=" + std::to_string(r) + " beta=" + std::to_string(ops.beta) +
                 (ops.want_dots ? " dots" : " no dots"));
    const auto ref_op = make_block_stencil_reference_operator(s);
    const auto op = numerics::make_cpu_stencil_operator(s, Precision::Double, tuning);
    ASSERT_EQ(op->num_rows(), s.num_rows());
    const global_index n = s.num_rows();
    const BlockVector x = random_block(n, r, seed);
    BlockVector y0 = random_block(n, r, seed + 1);
    if (ops.beta == 0.0)  // beta == 0: y must never be read
        for (size_t i = 0; i < y0.size(); ++i)
            y0.data()[i] = complex_type(std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN());

    BlockVector y_ref(n, r);
    for (size_t i = 0; i < y_ref.size(); ++i) y_ref.data()[i] = ops.beta == 0.0 ? 0.0 : y0.data()[i];
    DotSums dots_ref;
    ref_op->apply(x, y_ref, ops, &dots_ref);

    BlockVector y = y0;
    DotSums dots;
    dots.xx.assign(r, -7.0);  // must be reset by apply
    dots.yx.assign(r, complex_type(-7.0, 3.0));
    op->apply(x, y, ops, ops.want_dots ? &dots : nullptr);

    const std::vector<double> bound = entry_bounds(s, x, y0, ops);
    int bad = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        const double err = std::abs(y.data()[i] - y_ref.data()[i]);
        if (!(err <= bound[i]) && bad++ < 5)
            ADD_FAILURE() << "row " << i / r << " col " << i % r << ": " << y.data()[i] << " vs reference "
                          << y_ref.data()[i] << ", |diff| " << err << " > bound " << bound[i];
    }
    EXPECT_EQ(bad, 0);

    if (!ops.want_dots) {
        EXPECT_EQ(dots.xx, std::vector<double>(r, -7.0)) << "dots touched without want_dots";
        return;
    }
    ASSERT_EQ(dots.xx.size(), static_cast<size_t>(r));
    ASSERT_EQ(dots.yx.size(), static_cast<size_t>(r));
    for (int c = 0; c < r; ++c) {
        double sum_xx = 0, sum_yx = 0, carried = 0;
        for (global_index i = 0; i < n; ++i) {
            const size_t k = static_cast<size_t>(i) * r + c;
            sum_xx += std::norm(x.data()[k]);
            sum_yx += std::abs(y_ref.data()[k]) * std::abs(x.data()[k]);
            carried += bound[k] * std::abs(x.data()[k]);
        }
        const double dn = static_cast<double>(n);
        EXPECT_NEAR(dots.xx[c], dots_ref.xx[c], 4.0 * (dn + 2.0) * kEps * sum_xx) << "column " << c;
        EXPECT_LE(std::abs(dots.yx[c] - dots_ref.yx[c]), 4.0 * (dn + 2.0) * kEps * sum_yx + carried)
            << "column " << c << ": " << dots.yx[c] << " vs " << dots_ref.yx[c];
    }
}

const std::vector<int> kWidths{1, 2, 3, 4, 5, 8, 32};

/// The KPM step (beta = -1, dots), the first step (beta = 0, NaN in y) without dots, and
/// a generic case (beta = 0.5, dots).
void check_all_cases(const BlockStencil& s, const std::vector<int>& widths = kWidths,
                     const numerics::StencilTuning& tuning = {})
{
    unsigned seed = 100;
    for (const int r : widths) {
        expect_matches_reference(s, r, AugmentedOps{0.37, -0.2, -1.0, true}, seed++, tuning);
        expect_matches_reference(s, r, AugmentedOps{0.8, 0.3, 0.0, false}, seed++, tuning);
        expect_matches_reference(s, r, AugmentedOps{-1.3, 0.0, 0.5, true}, seed++, tuning);
        if (::testing::Test::HasFailure()) return;  // one failing configuration is enough output
    }
}

hamiltonians::ModelParams ti_params(int nx, int ny, int nz, const std::string& boundary)
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = nx;
    p.ny = ny;
    p.nz = nz;
    p.boundary = boundary;
    p.dot_potential = 0.4;
    p.dot_radius = 1.0;
    p.dot_period = nx % 2 == 0 && ny % 2 == 0 ? 2 : 0;  // dots need a period dividing the extents
    p.dot_depth = 2;
    p.disorder = 0.8;
    p.disorder_seed = 3;
    return p;
}

hamiltonians::ModelParams graphene_params(int nx, int ny, const std::string& boundary)
{
    hamiltonians::ModelParams p;
    p.name = "graphene";
    p.nx = nx;
    p.ny = ny;
    p.nz = 1;
    p.boundary = boundary;
    p.dot_potential = -0.3;
    p.dot_radius = 1.5;
    p.dot_period = nx % 2 == 0 && ny % 2 == 0 ? 2 : 0;
    p.disorder = 0.5;
    p.disorder_seed = 9;
    return p;
}

}  // namespace

TEST(CpuStencil, TiModelMatchesReference)
{
    for (const std::string bc : {"ppo", "ppp", "ooo", "opo", "pop"}) {
        const auto model = hamiltonians::make_model(ti_params(5, 3, 9, bc));
        check_all_cases(model->block_stencil());
    }
    // Long z-columns: whole interior groups (the unchecked fast path) at every R.
    check_all_cases(hamiltonians::make_model(ti_params(4, 3, 37, "ppo"))->block_stencil());
    check_all_cases(hamiltonians::make_model(ti_params(3, 4, 40, "ppp"))->block_stencil());
}

TEST(CpuStencil, GrapheneModelMatchesReference)
{
    for (const std::string bc : {"pp", "po", "op", "oo"}) {
        const auto model = hamiltonians::make_model(graphene_params(7, 5, bc));
        ASSERT_TRUE(model->block_stencil().potential_per_row());
        check_all_cases(model->block_stencil());
    }
    check_all_cases(hamiltonians::make_model(graphene_params(3, 40, "pp"))->block_stencil());
}

// A magnetic field (models.md §9, BlockStencil::field): every entry carries its Peierls
// phase on the checked path. ti (x bonds by y, the y wrap's bonds by x) and graphene (the
// in-cell bond and the wrapped ones, on the relabelled axes), on tori and open lattices,
// against the reference with the same tables, whose entries are the rows'
// (BlockStencil.DescribesTheModelMatrixExactly), at every width's kernel.
TEST(CpuStencil, MagneticFieldPhasesMatchReference)
{
    hamiltonians::ModelParams ti = ti_params(4, 6, 5, "ppo"), ti_open = ti_params(3, 4, 3, "ooo");
    hamiltonians::ModelParams gr = graphene_params(6, 4, "pp"), gr_open = graphene_params(5, 3, "po");
    ti.flux = {1, 24};  // Nx Ny PHI = 1 flux quantum through the torus
    ti_open.flux = {3, 10};
    gr.flux = {1, 12};
    gr_open.flux = {1, 7};  // y open: any PHI
    for (const auto& p : {ti, ti_open, gr, gr_open}) {
        const BlockStencil s = hamiltonians::make_model(p)->block_stencil();
        ASSERT_TRUE(s.field.active()) << describe(s);
        check_all_cases(s);
        if (::testing::Test::HasFailure()) return;
    }
}

TEST(CpuStencil, TinyAndOddExtentsEveryBoundary)
{
    // Extents 1 and 2 in periodic directions: the +-d neighbours coincide (or are the site
    // itself) and their terms add up; in open directions every neighbour is dropped.
    const BlockStencil ti = hamiltonians::make_model(ti_params(3, 3, 3, "ppp"))->block_stencil();
    const BlockStencil gr = hamiltonians::make_model(graphene_params(3, 3, "pp"))->block_stencil();
    const int extents[][3] = {{1, 1, 1}, {2, 1, 3}, {1, 2, 5}, {3, 5, 2}, {2, 2, 2}, {5, 1, 1}, {1, 7, 1}};
    unsigned seed = 1;
    for (const auto& e : extents)
        for (int mask = 0; mask < 8; ++mask) {
            const std::array<bool, 3> per{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
            check_all_cases(relattice(ti, e[0], e[1], e[2], per, false, seed++), {1, 3, 4, 32});
            check_all_cases(relattice(ti, e[0], e[1], e[2], per, true, seed++), {1, 2, 5, 8});
            if (e[2] == 1) check_all_cases(relattice(gr, e[0], e[1], 1, per, mask % 2 == 0, seed++), {1, 2, 3, 16});
            if (::testing::Test::HasFailure()) return;
        }
}

TEST(CpuStencil, RandomStencilsGenericAndSpecialisedOrbitals)
{
    // B = 1, 3, 5 run the generic-B path, 2 and 4 the specialised ones; dense random blocks,
    // merged terms, a diagonal and a range-2 term.
    unsigned seed = 7;
    for (const int nb : {1, 2, 3, 4, 5}) {
        const BlockStencil base = random_stencil(nb, 40 + nb);
        for (int mask = 0; mask < 8; ++mask) {
            const std::array<bool, 3> per{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
            check_all_cases(relattice(base, 3, 4, 11, per, mask % 2 == 1, seed++), {1, 2, 3, 4, 8, 32});
            check_all_cases(relattice(base, 2, 1, 3, per, mask % 2 == 0, seed++), {1, 5});
            if (::testing::Test::HasFailure()) return;
        }
    }
}

/// A stencil with B = 2 or 4 orbitals and at most 6 distinct row offsets d = B dl + b - o
/// (the R = 1 shifted-load form of stencil_kernels.cpp applies up to 6): complex values,
/// B = 2: full on-site block (d = -1, 0, 1), diagonal +-z blocks (+-2) and a diagonal +x
/// block; B = 4: diagonal on-site, +-z and +-y blocks and one entry (o, b) = (3, 1) of +x.
BlockStencil few_offsets_stencil(int nb, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto diag = [&] {
        std::vector<complex_type> b(static_cast<size_t>(nb) * nb);
        for (int o = 0; o < nb; ++o) b[static_cast<size_t>(o) * nb + o] = complex_type(u(gen), u(gen));
        return b;
    };
    BlockStencil s;
    s.name = "few" + std::to_string(nb);
    s.orbitals = nb;
    s.onsite = diag();
    if (nb == 2)
        for (complex_type& v : s.onsite) v = complex_type(u(gen), u(gen));
    s.terms.push_back({0, 0, 1, diag()});
    s.terms.push_back({0, 0, -1, diag()});
    if (nb == 4) {
        s.terms.push_back({0, 1, 0, diag()});
        s.terms.push_back({0, -1, 0, diag()});
        std::vector<complex_type> one(16);
        one[3 * 4 + 1] = complex_type(u(gen), u(gen));
        s.terms.push_back({1, 0, 0, one});
    } else {
        s.terms.push_back({1, 0, 0, diag()});
    }
    return s;
}

TEST(CpuStencil, ShiftedLoadFormWithEveryPotentialKind)
{
    // R = 1 runs the whole vectors of interior sites of long z-columns in the shifted-load
    // form when a stencil has at most 6 distinct row offsets (graphene: 4, with real
    // couplings; the stencils above: complex values, B = 2 and 4), with the potential per
    // row, per site or uniform (not read per row); the column ends, wrapped columns and
    // forced z-tiles take the checked path around them.
    const BlockStencil gr = hamiltonians::make_model(graphene_params(4, 40, "pp"))->block_stencil();
    std::vector<BlockStencil> cases;
    unsigned seed = 300;
    for (int mask = 0; mask < 4; ++mask) {
        const std::array<bool, 3> per{(mask & 1) != 0, (mask & 2) != 0, false};
        cases.push_back(relattice(gr, 5, 41, 1, per, true, seed++));
        cases.push_back(relattice(gr, 4, 38, 1, per, false, seed++));
        const std::array<bool, 3> per3{(mask & 1) != 0, true, (mask & 2) != 0};
        cases.push_back(relattice(few_offsets_stencil(2, seed), 3, 4, 37, per3, mask % 2 == 0, seed + 1));
        cases.push_back(relattice(few_offsets_stencil(4, seed + 2), 4, 3, 29, per3, mask % 2 == 1, seed + 3));
        seed += 4;
    }
    const size_t varied = cases.size();
    for (size_t i = 0; i < varied; ++i) {
        BlockStencil u = cases[i];
        for (double& v : u.potential) v = 0.25;  // uniform
        cases.push_back(u);
    }
    for (const BlockStencil& s : cases) {
        check_all_cases(s, {1, 2});
        if (::testing::Test::HasFailure()) return;
    }
    numerics::StencilTuning tiles;
    tiles.tiles = {1, 2, 7};
    check_all_cases(cases[2], {1}, tiles);
    check_all_cases(cases[3], {1}, tiles);
}

TEST(CpuStencil, ForcedTilingsIncludingPartialTiles)
{
    // The default tiling of these small lattices is one x-slab per thread; the override
    // (the tuning knob of stencil_kernels.cpp) forces y- and z-tiles with ragged ends.
    const BlockStencil ti = hamiltonians::make_model(ti_params(5, 7, 23, "ppo"))->block_stencil();
    const BlockStencil gr = hamiltonians::make_model(graphene_params(4, 9, "pp"))->block_stencil();
    for (const std::array<int, 3> tiles : {std::array<int, 3>{5, 2, 23}, {2, 3, 5}, {1, 1, 7}, {3, 7, 1}}) {
        SCOPED_TRACE(std::to_string(tiles[0]) + "," + std::to_string(tiles[1]) + "," + std::to_string(tiles[2]));
        numerics::StencilTuning tuning;
        tuning.tiles = tiles;
        check_all_cases(ti, {1, 3, 4, 32}, tuning);
        check_all_cases(gr, {1, 2, 16}, tuning);
        if (::testing::Test::HasFailure()) return;
    }
}

TEST(CpuStencil, SiteFormAtWidthsTwoFourEightSumsEachColumnAsWidthOne)
{
    // B = 4 in double at R = 2, 4, 8: the site form of R = 1 with a site's rows as R vectors
    // (stencil_sweep.cpp, site_sums_r2 / site_sums_grouped): per column the same products and
    // sums in the same order, and the same epilogue, so column c of an R-wide sweep equals
    // the R = 1 sweep of that column bit for bit (== on the complex values: +0 and -0 alike).
    // The row-group kernels these widths ran before sum each row's entries in table order
    // and differ in the last bits. The dots are summed in another order (per row instead of
    // per site pair): within 4 (N + 2) eps sum_i |terms| of each other (the bound of
    // ResultDoesNotDependOnThreadCount; the y's are equal, nothing carried). Also against the
    // reference (expect_matches_reference) with R = 3 (the generic loop) alongside.
    std::vector<BlockStencil> cases;
    for (const std::string bc : {"ppp", "ooo", "ppo", "opo"})
        cases.push_back(hamiltonians::make_model(ti_params(4, 6, 13, bc))->block_stencil());  // disorder, dots
    unsigned seed = 900;
    const BlockStencil dense = random_stencil(4, 77);  // complex blocks: Re, Im and both items, every diagonal
    cases.push_back(relattice(dense, 3, 4, 11, {true, false, true}, true, seed++));
    cases.push_back(relattice(dense, 5, 3, 9, {false, true, false}, false, seed++));
    const AugmentedOps kinds[] = {{0.37, -0.2, -1.0, true}, {0.8, 0.3, 0.0, false}, {-1.3, 0.0, 0.5, true}};
    for (const BlockStencil& s : cases) {
        check_all_cases(s, {1, 2, 3, 4, 8});
        const auto op = numerics::make_cpu_stencil_operator(s);
        const global_index n = s.num_rows();
        for (const int r : {2, 4, 8})
            for (const AugmentedOps& ops : kinds) {
                SCOPED_TRACE(describe(s) + " R=" + std::to_string(r) + " beta=" + std::to_string(ops.beta));
                const BlockVector x = random_block(n, r, seed++);
                const BlockVector y0 = random_block(n, r, seed++);
                BlockVector y = y0;
                DotSums dots;
                op->apply(x, y, ops, ops.want_dots ? &dots : nullptr);
                for (int c = 0; c < r; ++c) {
                    BlockVector xc(n, 1), yc(n, 1);
                    for (global_index i = 0; i < n; ++i) {
                        xc.data()[i] = x.data()[static_cast<size_t>(i) * r + c];
                        yc.data()[i] = y0.data()[static_cast<size_t>(i) * r + c];
                    }
                    DotSums dc;
                    op->apply(xc, yc, ops, ops.want_dots ? &dc : nullptr);
                    int bad = 0;
                    double sum_xx = 0, sum_yx = 0;
                    for (global_index i = 0; i < n; ++i) {
                        const complex_type got = y.data()[static_cast<size_t>(i) * r + c];
                        if (!(got == yc.data()[i]) && bad++ < 3)
                            ADD_FAILURE() << "row " << i << " col " << c << ": " << got << " vs R = 1 " << yc.data()[i];
                        sum_xx += std::norm(xc.data()[i]);
                        sum_yx += std::abs(yc.data()[i]) * std::abs(xc.data()[i]);
                    }
                    EXPECT_EQ(bad, 0) << "column " << c;
                    if (!ops.want_dots) continue;
                    EXPECT_NEAR(dots.xx[c], dc.xx[0], 4.0 * (n + 2.0) * kEps * sum_xx) << "column " << c;
                    EXPECT_LE(std::abs(dots.yx[c] - dc.yx[0]), 4.0 * (n + 2.0) * kEps * sum_yx) << "column " << c;
                }
            }
        if (::testing::Test::HasFailure()) return;
    }
    // The A/B settings of StencilTuning: the row groups these widths ran before
    // (wide_site_form = false) within the reference bound; the prefetch distance (none, one
    // line, the default) changes no bit of y.
    numerics::StencilTuning rows;
    rows.wide_site_form = false;
    rows.site_prefetch_bytes = 0;
    check_all_cases(cases[0], {2, 4, 8}, rows);
    const BlockStencil& s = cases[2];
    const global_index n = s.num_rows();
    for (const int r : {1, 2, 4, 8}) {
        const BlockVector x = random_block(n, r, seed++);
        const BlockVector y0 = random_block(n, r, seed++);
        std::vector<BlockVector> ys;
        for (const int pf : {0, 64, -1}) {
            numerics::StencilTuning t;
            t.site_prefetch_bytes = pf;
            BlockVector y = y0;
            DotSums d;
            numerics::make_cpu_stencil_operator(s, Precision::Double, t)->apply(x, y, kinds[0], &d);
            ys.push_back(y);
        }
        for (size_t k = 1; k < ys.size(); ++k)
            for (size_t i = 0; i < y0.size(); ++i)
                ASSERT_EQ(ys[k].data()[i], ys[0].data()[i]) << "R=" << r << " prefetch case " << k << " entry " << i;
    }
}

TEST(CpuStencil, ResultDoesNotDependOnThreadCount)
{
    // The rows are computed the same way whatever the split (y within the bound of
    // entry_bounds either way); the dots are summed per thread and then in thread order, so
    // 1 and 2 threads differ by rounding at most: within 2 (N + 2) eps sum_i |terms| each,
    // 4 (N + 2) eps sum apart, plus for yx the y difference carried: sum_i bound_i |x_i|.
    const BlockStencil s = hamiltonians::make_model(ti_params(8, 6, 21, "ppo"))->block_stencil();
    const auto op = numerics::make_cpu_stencil_operator(s);
    const global_index n = s.num_rows();
    const int saved = omp_get_max_threads();
    for (const int r : {1, 3, 4, 32}) {
        const BlockVector x = random_block(n, r, 5);
        const BlockVector y0 = random_block(n, r, 6);
        const AugmentedOps step{0.4, 0.1, -1.0, true};
        BlockVector y1 = y0, y2 = y0;
        DotSums d1, d2;
        omp_set_num_threads(1);
        op->apply(x, y1, step, &d1);
        omp_set_num_threads(2);
        op->apply(x, y2, step, &d2);
        omp_set_num_threads(saved);
        const std::vector<double> bound = entry_bounds(s, x, y0, step);
        int bad = 0;
        for (size_t i = 0; i < y1.size(); ++i) bad += !(std::abs(y1.data()[i] - y2.data()[i]) <= bound[i]);
        EXPECT_EQ(bad, 0) << "R=" << r;
        for (int c = 0; c < r; ++c) {
            double sum_xx = 0, sum_yx = 0, carried = 0;
            for (global_index i = 0; i < n; ++i) {
                const size_t k = static_cast<size_t>(i) * r + c;
                sum_xx += std::norm(x.data()[k]);
                sum_yx += std::abs(y1.data()[k]) * std::abs(x.data()[k]);
                carried += bound[k] * std::abs(x.data()[k]);
            }
            EXPECT_NEAR(d1.xx[c], d2.xx[c], 4.0 * (n + 2.0) * kEps * sum_xx) << "R=" << r;
            EXPECT_LE(std::abs(d1.yx[c] - d2.yx[c]), 4.0 * (n + 2.0) * kEps * sum_yx + carried) << "R=" << r;
        }
        // The same thread count twice: bitwise the same.
        BlockVector y3 = y0;
        DotSums d3;
        omp_set_num_threads(2);
        op->apply(x, y3, step, &d3);
        omp_set_num_threads(saved);
        EXPECT_EQ(d3.xx, d2.xx) << "R=" << r;
        EXPECT_EQ(d3.yx, d2.yx) << "R=" << r;
    }
}

/// One step of a fused pass checked on its own: y_new and dots (from the fused
/// apply_two_steps) against the reference applied to the very inputs (x, y0) that step read,
/// within entry_bounds and the dot bounds of expect_matches_reference. Checking step B against
/// the reference applied to step A's *fused* output keeps the bound free of propagated
/// errors; a block that a step skipped keeps y0 there (NaN when beta = 0) and fails.
void expect_step_matches(const BlockStencil& s, const BlockVector& x, const BlockVector& y0, const BlockVector& y_new,
                         const DotSums& dots, const AugmentedOps& ops, const char* which)
{
    SCOPED_TRACE(which);
    const global_index n = s.num_rows();
    const int r = x.num_cols();
    BlockVector y_ref(n, r);
    for (size_t i = 0; i < y_ref.size(); ++i) y_ref.data()[i] = ops.beta == 0.0 ? 0.0 : y0.data()[i];
    DotSums dots_ref;
    make_block_stencil_reference_operator(s)->apply(x, y_ref, ops, &dots_ref);
    const std::vector<double> bound = entry_bounds(s, x, y0, ops);
    int bad = 0;
    for (size_t i = 0; i < y_new.size(); ++i) {
        const double err = std::abs(y_new.data()[i] - y_ref.data()[i]);
        if (!(err <= bound[i]) && bad++ < 5)
            ADD_FAILURE() << "row " << i / r << " col " << i % r << ": " << y_new.data()[i] << " vs reference "
                          << y_ref.data()[i];
    }
    EXPECT_EQ(bad, 0);
    if (!ops.want_dots) return;
    for (int c = 0; c < r; ++c) {
        double sum_xx = 0, sum_yx = 0, carried = 0;
        for (global_index i = 0; i < n; ++i) {
            const size_t k = static_cast<size_t>(i) * r + c;
            sum_xx += std::norm(x.data()[k]);
            sum_yx += std::abs(y_ref.data()[k]) * std::abs(x.data()[k]);
            carried += bound[k] * std::abs(x.data()[k]);
        }
        EXPECT_NEAR(dots.xx[c], dots_ref.xx[c], 4.0 * (n + 2.0) * kEps * sum_xx) << "col " << c;
        EXPECT_LE(std::abs(dots.yx[c] - dots_ref.yx[c]), 4.0 * (n + 2.0) * kEps * sum_yx + carried)
            << "col " << c << ": " << dots.yx[c] << " vs " << dots_ref.yx[c];
    }
}

TEST(CpuStencilTwoSteps, OfferedForTwoDimensionalShiftedFormsAtWidthOne)
{
    const auto gr = numerics::make_cpu_stencil_operator(hamiltonians::make_model(graphene_params(7, 40, "pp"))->block_stencil());
    EXPECT_EQ(gr->fused_steps(1), 2);
    EXPECT_EQ(numerics::make_cpu_stencil_operator(hamiltonians::make_model(graphene_params(7, 40, "oo"))->block_stencil(),
                                                  Precision::Single)
                  ->fused_steps(1),
              2);
    // ti: dozens of row offsets (no shifted-load form) on a 3-D lattice: the x-plane
    // wavefront instead, in both precisions (CpuStencilTwoStepsPlanes; single:
    // CpuStencilSingle.TiTwoFusedStepsAtWidthsOneAndEightEachWithinTheFloatBound).
    numerics::StencilTuning off;
    off.tblock_lines = 0;  // one step per pass
    EXPECT_EQ(numerics::make_cpu_stencil_operator(hamiltonians::make_model(graphene_params(7, 40, "pp"))->block_stencil(),
                                                  Precision::Double, off)
                  ->fused_steps(1),
              1);
    // Tuning outside its range is refused, naming the parameter.
    numerics::StencilTuning bad;
    bad.tblock_lines = -2;
    EXPECT_THROW(numerics::make_cpu_stencil_operator(hamiltonians::make_model(graphene_params(7, 40, "pp"))->block_stencil(),
                                                     Precision::Double, bad),
                 InputError);
    bad = {};
    bad.tiles = {1, 0, 3};
    EXPECT_THROW(numerics::make_cpu_stencil_operator(hamiltonians::make_model(graphene_params(7, 40, "pp"))->block_stencil(),
                                                     Precision::Double, bad),
                 InputError);
    bad = {};
    bad.tblock_strip_sites = -1;
    EXPECT_THROW(numerics::make_cpu_stencil_operator(hamiltonians::make_model(graphene_params(7, 40, "pp"))->block_stencil(),
                                                     Precision::Double, bad),
                 InputError);
    bad = {};
    bad.site_prefetch_bytes = -2;
    EXPECT_THROW(numerics::make_cpu_stencil_operator(hamiltonians::make_model(ti_params(4, 4, 8, "ppp"))->block_stencil(),
                                                     Precision::Double, bad),
                 InputError);
}

TEST(CpuStencilTwoSteps, EachStepMatchesTheReferenceForEveryBlockingAndThreadCount)
{
    // Graphene lattices with every boundary, line counts 3 .. 9 cut into 1 .. 9 blocks (odd
    // and even counts, blocks of uneven size, fewer blocks than threads), 1, 2 and 3 threads
    // (ranges of 0 .. 9 blocks per thread, the deferred first and last blocks, the periodic
    // wrap between block n - 1 and 0). The KPM step (beta = -1, dots), beta = 0 with NaN in
    // y and no dots (every row of y must be written), and beta = 0.5 with dots.
    std::vector<BlockStencil> cases;
    for (const char* bc : {"pp", "po", "op", "oo"})
        cases.push_back(hamiltonians::make_model(graphene_params(7, 40, bc))->block_stencil());
    cases.push_back(hamiltonians::make_model(graphene_params(9, 16, "pp"))->block_stencil());
    cases.push_back(hamiltonians::make_model(graphene_params(3, 40, "pp"))->block_stencil());
    cases.push_back(relattice(cases[0], 1, 44, 1, {false, true, false}, true, 41));  // the lines along x
    cases.push_back(relattice(cases[0], 8, 38, 1, {true, true, false}, false, 42));
    for (double& v : cases.back().potential) v = 0.25;  // uniform potential: not read per row
    const int saved = omp_get_max_threads();
    unsigned seed = 500;
    for (const BlockStencil& s : cases) {
        const global_index n = s.num_rows();
        for (const int block_lines : {1, 2, 3, -1}) {
            numerics::StencilTuning tuning;
            tuning.tblock_lines = block_lines;
            const auto op = numerics::make_cpu_stencil_operator(s, Precision::Double, tuning);
            ASSERT_EQ(op->fused_steps(1), 2) << describe(s);
            const std::string lines = block_lines > 0 ? std::to_string(block_lines) : std::string();
            for (const int threads : {1, 2, 3}) {
                for (const AugmentedOps& ops : {AugmentedOps{0.37, -0.2, -1.0, true}, AugmentedOps{0.8, 0.3, 0.0, false},
                                                AugmentedOps{-1.3, 0.0, 0.5, true}}) {
                    SCOPED_TRACE(describe(s) + " lines=" + lines + " threads=" + std::to_string(threads) +
                                 " beta=" + std::to_string(ops.beta));
                    const BlockVector x0 = random_block(n, 1, seed++);
                    BlockVector y0 = random_block(n, 1, seed++);
                    if (ops.beta == 0.0)
                        for (size_t i = 0; i < y0.size(); ++i)
                            y0.data()[i] = complex_type(std::numeric_limits<double>::quiet_NaN(), 0.0);
                    BlockVector x = x0, y = y0;
                    DotSums first, second;
                    omp_set_num_threads(threads);
                    op->apply_two_steps(x, y, ops, &first, &second);
                    omp_set_num_threads(saved);
                    expect_step_matches(s, x0, y0, y, first, ops, "step A: y := s (H - shift) x + beta y");
                    expect_step_matches(s, y, x0, x, second, ops, "step B: x := s (H - shift) y + beta x");
                    if (::testing::Test::HasFailure()) return;
                }
            }
        }
    }
}

namespace {

/// The raw moments of a KPM recurrence on `o` from `start` and the number of its step() calls.
std::pair<std::vector<double>, int> recurrence_moments(const Operator& o, const BlockVector& start, int num_moments,
                                                       const numerics::KpmScaling& scaling)
{
    numerics::ChebyshevRecurrence rec(o, start, num_moments, scaling);
    int steps = 0;
    while (!rec.done()) {
        rec.step();
        ++steps;
    }
    return {rec.raw(), steps};
}

/// The bound derived in CpuStencilTwoSteps.KpmMomentsEqualTheOneStepPathAndTheReference for
/// two runs of M moments on `s` scaled by `scaling`, per unit ||v_0||^2 of the start column.
double moment_tolerance_unit(const BlockStencil& s, const numerics::KpmScaling& scaling, int num_moments)
{
    const global_index n = s.num_rows();
    BlockVector ones(n, 1), rows(n, 1);
    for (size_t i = 0; i < ones.size(); ++i) ones.data()[i] = 1.0;
    make_block_stencil_reference_operator(absolute(s))->apply(ones, rows, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
    double g = 0.0;  // >= the largest row sum of |Ht| incl. the potential
    for (size_t i = 0; i < rows.size(); ++i) g = std::max(g, (rows.data()[i].real() + std::abs(scaling.b)) / scaling.a);
    const double m = static_cast<double>((s.terms.size() + 1) * s.orbitals + 1);
    const int nv = num_moments / 2 + 1;
    return (4.0 * (m + 4.0) * (2.0 * g + 1.0) * nv * (nv + 1.0) + 12.0 * (n + 2.0)) * kEps;
}

}  // namespace

TEST(CpuStencilTwoSteps, KpmMomentsEqualTheOneStepPathAndTheReference)
{
    // The recurrence takes sweeps 1-2, 3-4, ... in fused pairs (M = 16: the last sweep alone;
    // M = 17: all paired). Bound, derived: each run computes v_k+1 = 2 Ht v_k - v_k-1 + f_k
    // with ||f_k|| <= (m + 4) eps (2 g ||v_k|| + ||v_k-1||) (entry_bounds in norm; g >= the
    // largest row sum of |Ht| incl. the potential, so || |Ht| ||_2 <= g) and the first step's
    // ||f_0|| <= (m + 4) eps g ||v_0||. The errors propagate by the Chebyshev polynomials of
    // the second kind, ||U_j(Ht)|| <= j + 1 on a spectrum in [-1, 1], and ||v_k|| <= ||v_0||:
    // a run's v_n is within (m + 4) eps (2 g + 1) n (n + 1) / 2 ||v_0|| of the exact one, two
    // runs within E_n = (m + 4) eps (2 g + 1) n (n + 1) ||v_0||. A moment is 2 <v_n|v_n'> - mu_0|1
    // with n' = n or n + 1, each dot within 2 (N + 2) eps ||v_0||^2 (summation): moments of two
    // runs differ by <= 4 E_(n+1) ||v_0|| + 12 (N + 2) eps ||v_0||^2, n = M / 2.
    const int saved = omp_get_max_threads();
    for (const char* bc : {"pp", "oo"}) {
        const BlockStencil s = hamiltonians::make_model(graphene_params(7, 40, bc))->block_stencil();
        const auto op = numerics::make_cpu_stencil_operator(s);
        numerics::StencilTuning one_step_tuning;
        one_step_tuning.tblock_lines = 0;  // one step per pass
        const auto one_step_op = numerics::make_cpu_stencil_operator(s, Precision::Double, one_step_tuning);
        const auto ref = make_block_stencil_reference_operator(s);
        const numerics::KpmScaling scaling = numerics::kpm_scaling(gershgorin_bounds(s), 0.01);
        const global_index n = s.num_rows();
        const BlockVector start = random_block(n, 1, 77);
        double v0 = 0.0;
        for (size_t i = 0; i < start.size(); ++i) v0 += std::norm(start.data()[i]);
        auto moments = [&](const Operator& o, int num_moments) { return recurrence_moments(o, start, num_moments, scaling); };
        for (const int num_moments : {16, 17}) {
            const double tol = moment_tolerance_unit(s, scaling, num_moments) * v0;
            const auto [reference, ref_steps] = moments(*ref, num_moments);
            EXPECT_EQ(ref_steps, numerics::kpm_num_sweeps(num_moments));  // one sweep per step
            const auto [one_step, one_steps] = moments(*one_step_op, num_moments);
            EXPECT_EQ(one_steps, numerics::kpm_num_sweeps(num_moments));
            for (const int block_lines : {1, 2, -1}) {
                numerics::StencilTuning tuning;
                tuning.tblock_lines = block_lines;
                const auto fused_op = numerics::make_cpu_stencil_operator(s, Precision::Double, tuning);
                const std::string lines = block_lines > 0 ? std::to_string(block_lines) : std::string();
                for (const int threads : {1, 2}) {
                    SCOPED_TRACE(std::string(bc) + " M=" + std::to_string(num_moments) + " lines=" + lines +
                                 " threads=" + std::to_string(threads) + " tol=" + std::to_string(tol / v0));
                    omp_set_num_threads(threads);
                    const auto [fused, fused_steps] = moments(*fused_op, num_moments);
                    omp_set_num_threads(saved);
                    // The first sweep alone, then pairs (and a last single sweep for M = 16).
                    EXPECT_EQ(fused_steps, 1 + (numerics::kpm_num_sweeps(num_moments) - 1 + 1) / 2);
                    for (int k = 0; k < num_moments; ++k) {
                        EXPECT_NEAR(fused[k], one_step[k], tol) << "k=" << k;
                        EXPECT_NEAR(fused[k], reference[k], tol) << "k=" << k;
                    }
                }
            }
        }
    }
}

// The Lanczos bounds take this operator's sweeps in fused pairs (lanczos.hpp). Clean graphene:
// the Gershgorin enclosure (exactly +-3 t) is taken, after the same number of sweeps as with one
// step per pass (tblock_lines = 0). With dots and disorder the two runs' moments differ by
// rounding only; both answers must contain the dense LAPACK spectrum and lie in the enclosure.
TEST(CpuStencilTwoSteps, LanczosBoundsAsWithOneStepPerPass)
{
    numerics::StencilTuning off;
    off.tblock_lines = 0;
    hamiltonians::ModelParams clean = graphene_params(64, 96, "pp");
    clean.dot_potential = 0.0;
    clean.disorder = 0.0;
    const BlockStencil c = hamiltonians::make_model(clean)->block_stencil();
    const auto fused = numerics::make_cpu_stencil_operator(c);
    const auto one = numerics::make_cpu_stencil_operator(c, Precision::Double, off);
    ASSERT_EQ(fused->fused_steps(1), 2);
    ASSERT_EQ(one->fused_steps(1), 1);
    const SpectralBounds enc = gershgorin_bounds(c);
    EXPECT_EQ(enc.lower, -3.0);
    EXPECT_EQ(enc.upper, 3.0);
    const numerics::LanczosBounds a = numerics::lanczos_bounds(*one, 200, 7, 0.005, 0.005, &enc);
    const numerics::LanczosBounds b = numerics::lanczos_bounds(*fused, 200, 7, 0.005, 0.005, &enc);
    EXPECT_TRUE(a.enclosure_taken);
    EXPECT_TRUE(b.enclosure_taken);
    EXPECT_EQ(b.iterations, a.iterations);
    EXPECT_EQ(b.bounds.lower, -3.0);
    EXPECT_EQ(b.bounds.upper, 3.0);

    const auto model = hamiltonians::make_model(graphene_params(12, 16, "pp"));  // dots and disorder
    const std::vector<double> eig = topokpm::testing::dense_eigenvalues(*model);
    const BlockStencil d = model->block_stencil();
    const SpectralBounds denc = gershgorin_bounds(d);
    for (const auto& op : {numerics::make_cpu_stencil_operator(d), numerics::make_cpu_stencil_operator(d, Precision::Double, off)}) {
        const numerics::LanczosBounds lb = numerics::lanczos_bounds(*op, 200, 7, 0.005, 0.005, &denc);
        SCOPED_TRACE("fused_steps " + std::to_string(op->fused_steps(1)));
        EXPECT_LE(lb.bounds.lower, eig.front());
        EXPECT_GE(lb.bounds.upper, eig.back());
        EXPECT_GE(lb.bounds.lower, denc.lower);
        EXPECT_LE(lb.bounds.upper, denc.upper);
    }
}

// The model's plane-wave Rayleigh quotients (plane_wave_rayleigh_bounds of its stencil) let the
// bounds of any operator of its matrix take the enclosure (gershgorin_bounds of the stencil)
// before any sweep where it is within the margin of them: clean periodic graphene, stencil and
// SELL (real values), double and single (their interval is [-3 t, 3 t], the enclosure's). The
// guarantee stays: a KPM run of that operator scaled by those bounds keeps |mu_n| <= 1, and
// where the interval is not close enough (open graphene, ti: Gershgorin 1.6x its spectrum)
// Lanczos runs and its bounds contain the dense LAPACK spectrum.
TEST(StencilBounds, PlaneWaveRayleighQuotientsTakeTheEnclosureWithoutASweepForEveryOperator)
{
    auto operators = [](const hamiltonians::Model& model) {
        std::vector<std::unique_ptr<Operator>> ops;
        const numerics::OperatorSource source = hamiltonians::operator_source(model);
        for (const numerics::OperatorKind kind : {numerics::OperatorKind::Free, numerics::OperatorKind::Sell})
            for (const Precision pr : {Precision::Double, Precision::Single}) {
                numerics::OperatorSpec spec;
                spec.kind = kind;
                spec.precision = pr;
                ops.push_back(numerics::make_operator(spec, source).op);
            }
        return ops;
    };
    hamiltonians::ModelParams clean = graphene_params(64, 96, "pp");
    clean.dot_potential = 0.0;
    clean.disorder = 0.0;
    const auto clean_model = hamiltonians::make_model(clean);
    const BlockStencil c = clean_model->block_stencil();
    const SpectralBounds enc = gershgorin_bounds(c);
    const std::optional<SpectralBounds> inside = plane_wave_rayleigh_bounds(c);
    ASSERT_TRUE(inside.has_value());
    EXPECT_NEAR(inside->lower, -3.0, 1e-12);
    EXPECT_NEAR(inside->upper, 3.0, 1e-12);
    for (const auto& op : operators(*clean_model)) {
        SCOPED_TRACE(op->name());
        const numerics::LanczosBounds lb = numerics::lanczos_bounds(*op, 200, 7, 0.005, 0.005, &enc, &*inside);
        EXPECT_TRUE(lb.enclosure_taken);
        EXPECT_EQ(lb.iterations, 0);
        EXPECT_EQ(lb.bounds.lower, enc.lower);
        EXPECT_EQ(lb.bounds.upper, enc.upper);
        const global_index n = c.num_rows();
        BlockVector start(n, 2);
        numerics::fill_random_phase_vectors(start, 3, 0, n);
        const auto [raw, steps] = recurrence_moments(*op, start, 512, numerics::kpm_scaling(lb.bounds, 0.01));
        (void)steps;
        std::vector<double> mu(raw.size());
        for (size_t k = 0; k < raw.size(); ++k) mu[k] = raw[k] / raw[k < 512 ? 0 : 512];
        EXPECT_NO_THROW(numerics::check_moments_bounded(mu, 1e-6));
    }

    hamiltonians::ModelParams open = clean;
    open.nx = 12;
    open.ny = 16;
    open.boundary = "oo";
    hamiltonians::ModelParams ti = ti_params(4, 4, 6, "ppo");
    ti.disorder = 0.0;
    ti.dot_potential = 0.0;
    for (const hamiltonians::ModelParams& p : {open, ti}) {
        const auto model = hamiltonians::make_model(p);
        const BlockStencil s = model->block_stencil();
        const SpectralBounds discs = gershgorin_bounds(s);
        const std::optional<SpectralBounds> rq = plane_wave_rayleigh_bounds(s);
        ASSERT_TRUE(rq.has_value()) << p.name;
        const std::vector<double> eig = topokpm::testing::dense_eigenvalues(*model);
        EXPECT_GE(rq->lower, eig.front() - 1e-12) << p.name;
        EXPECT_LE(rq->upper, eig.back() + 1e-12) << p.name;
        for (const auto& op : operators(*model)) {
            SCOPED_TRACE(op->name());
            const numerics::LanczosBounds lb = numerics::lanczos_bounds(*op, 200, 7, 0.005, 0.005, &discs, &*rq);
            EXPECT_GT(lb.iterations, 0);
            EXPECT_LE(lb.bounds.lower, eig.front());
            EXPECT_GE(lb.bounds.upper, eig.back());
        }
    }
}

// A trace on the fused operator stopped after any number of steps (each past the first makes
// two sweeps, so states are saved after 1, 3, 5, ... sweeps and at block ends) and continued
// from a copy of its state pairs the same sweeps: bit-identical moments, as a checkpoint needs.
TEST(CpuStencilTwoSteps, ResumedTraceIsBitIdentical)
{
    // Width 1 (the line form) and width 4 (the strip form: 8 vectors in two blocks of 4).
    for (const int width : {1, 4}) {
        SCOPED_TRACE("width " + std::to_string(width));
        const BlockStencil s = hamiltonians::make_model(graphene_params(7, 40, "pp"))->block_stencil();
        const auto op = numerics::make_cpu_stencil_operator(s);
        ASSERT_EQ(op->fused_steps(width), 2);
        const numerics::KpmScaling scaling = numerics::kpm_scaling(gershgorin_bounds(s), 0.01);
        const auto plan = numerics::random_phase_plan(s.num_rows(), width == 1 ? 3 : 8, 11);
        const int m = 21;  // 11 sweeps per block: the first, then 5 pairs
        const auto reference = topokpm::testing::run_block_trace(*op, *plan, m, width, scaling);
        for (int stop = 0;; ++stop) {
            numerics::BlockTrace first(*op, *plan, m, width, scaling);
            for (int k = 0; k < stop && !first.done(); ++k) first.step();
            if (first.done()) break;
            const std::int64_t in_block = first.sweeps_done() % 11;
            EXPECT_TRUE(in_block == 0 || in_block % 2 == 1) << "stop " << stop << ": " << in_block << " sweeps into a block";
            numerics::TraceState saved = first.state();
            numerics::BlockTrace second(*op, *plan, m, width, scaling);
            second.restore(std::move(saved));
            while (!second.done()) second.step();
            EXPECT_EQ(second.slot_moments(), reference) << "stopped after " << stop << " steps";
        }
    }
}

// Two steps per pass at R > 1 (numerics/cpu/stencil_two_step_wide.cpp: strips of lattice lines,
// a wavefront over the lines per strip, B's sites lagging A's by the site reach).

namespace {

/// Runs apply_two_steps(x, y) with `threads` threads and checks both steps (expect_step_matches).
void check_two_steps(const Operator& op, const BlockStencil& s, int r, int threads, const AugmentedOps& ops,
                     unsigned seed)
{
    const global_index n = s.num_rows();
    const BlockVector x0 = random_block(n, r, seed);
    BlockVector y0 = random_block(n, r, seed + 1);
    if (ops.beta == 0.0)
        for (size_t i = 0; i < y0.size(); ++i) y0.data()[i] = complex_type(std::numeric_limits<double>::quiet_NaN(), 0.0);
    BlockVector x = x0, y = y0;
    DotSums first, second;
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    op.apply_two_steps(x, y, ops, &first, &second);
    omp_set_num_threads(saved);
    expect_step_matches(s, x0, y0, y, first, ops, "step A: y := s (H - shift) x + beta y");
    expect_step_matches(s, y, x0, x, second, ops, "step B: x := s (H - shift) y + beta x");
}

}  // namespace

TEST(CpuStencilTwoStepsWide, OfferedAtTheCompiledWidthsOnTwoDimensionalLattices)
{
    const auto gr = numerics::make_cpu_stencil_operator(hamiltonians::make_model(graphene_params(7, 40, "pp"))->block_stencil());
    const auto grs = numerics::make_cpu_stencil_operator(hamiltonians::make_model(graphene_params(7, 40, "oo"))->block_stencil(),
                                                         Precision::Single);
    for (const int r : {2, 4, 8, 16, 32}) {
        EXPECT_EQ(gr->fused_steps(r), 2) << "R=" << r;
        EXPECT_EQ(grs->fused_steps(r), 2) << "single R=" << r;
        EXPECT_TRUE(numerics::cpu_stencil_two_steps_at(r, Precision::Double)) << "R=" << r;
        EXPECT_TRUE(numerics::cpu_stencil_two_steps_at(r, Precision::Single)) << "R=" << r;
    }
    for (const int r : {3, 12}) {  // no kernel: one step per pass
        EXPECT_EQ(gr->fused_steps(r), 1) << "R=" << r;
        EXPECT_EQ(grs->fused_steps(r), 1) << "single R=" << r;
    }
    // ti: a 3-D lattice.
    EXPECT_EQ(numerics::make_cpu_stencil_operator(hamiltonians::make_model(ti_params(4, 3, 5, "ppo"))->block_stencil())
                  ->fused_steps(16),
              1);
    numerics::StencilTuning off;
    off.tblock_lines = 0;  // one step per pass, both forms
    EXPECT_EQ(numerics::make_cpu_stencil_operator(hamiltonians::make_model(graphene_params(7, 40, "pp"))->block_stencil(),
                                                  Precision::Double, off)
                  ->fused_steps(16),
              1);
}

TEST(CpuStencilTwoStepsWide, EachStepMatchesTheReferenceForEveryStripAndThreadCount)
{
    // Graphene with every boundary (7, 9 and 3 lines of 40, 16 and 40 sites), a potential per
    // row, a uniform potential, and the complex plane stencil (site reach 2, periodic and open,
    // and 3 sites per line where the wrapped neighbours coincide); strips of 1 and 5 sites and
    // the default (one strip per line here), 1, 2 and 3 threads (line ranges of 1 .. 9 lines,
    // the deferred first and last lines, the periodic wraps of lines and sites); beta = -1 with
    // dots (the KPM step), beta = 0 with NaN in y and no dots (every row written), beta = 0.5
    // with dots. Widths 2, 4 and 16 on all cases, 8 and 32 on the first.
    std::vector<BlockStencil> cases;
    for (const char* bc : {"pp", "po", "op", "oo"})
        cases.push_back(hamiltonians::make_model(graphene_params(7, 40, bc))->block_stencil());
    cases.push_back(hamiltonians::make_model(graphene_params(9, 16, "pp"))->block_stencil());
    cases.push_back(hamiltonians::make_model(graphene_params(3, 40, "pp"))->block_stencil());
    cases.push_back(relattice(cases[0], 8, 38, 1, {true, true, false}, true, 41));
    cases.push_back(relattice(cases[0], 5, 21, 1, {false, true, false}, false, 42));
    for (double& v : cases.back().potential) v = 0.25;
    cases.push_back(complex_plane_stencil(6, 17, {true, true, false}, 43));
    cases.push_back(complex_plane_stencil(5, 13, {false, false, false}, 44));
    cases.push_back(complex_plane_stencil(4, 3, {true, true, false}, 45));
    unsigned seed = 900;
    for (size_t ci = 0; ci < cases.size(); ++ci) {
        const BlockStencil& s = cases[ci];
        for (const int r : ci == 0 ? std::vector<int>{2, 4, 8, 16, 32} : std::vector<int>{2, 4, 16}) {
            // All three ops at R = 16; the KPM step at the other widths.
            std::vector<AugmentedOps> all_ops{AugmentedOps{0.37, -0.2, -1.0, true}, AugmentedOps{0.8, 0.3, 0.0, false},
                                              AugmentedOps{-1.3, 0.0, 0.5, true}};
            if (r != 16) all_ops.resize(1);
            for (const int strip : {1, 5, 0}) {  // 0: the default strip
                numerics::StencilTuning tuning;
                tuning.tblock_strip_sites = strip;
                const auto op = numerics::make_cpu_stencil_operator(s, Precision::Double, tuning);
                ASSERT_EQ(op->fused_steps(r), 2) << describe(s);
                for (const int threads : {1, 2, 3})
                    for (const AugmentedOps& ops : all_ops) {
                        SCOPED_TRACE(describe(s) + " R=" + std::to_string(r) + " strip=" + std::to_string(strip) +
                                     " threads=" + std::to_string(threads) + " beta=" + std::to_string(ops.beta));
                        check_two_steps(*op, s, r, threads, ops, seed += 2);
                        if (::testing::Test::HasFailure()) return;
                    }
            }
        }
    }
}

TEST(CpuStencilTwoStepsWide, BlocksBeyondTheCacheMatchTheReference)
{
    // x + y of 32 MiB (graphene 128x128, R = 32) and 36 MiB (192x192, R = 16): step A
    // prefetches its streams above 24 MiB (stencil_two_step_wide.cpp); both steps against the
    // reference, with 1 and 2 threads.
    for (const auto& [n, r] : std::vector<std::pair<int, int>>{{128, 32}, {192, 16}}) {
        const BlockStencil s = hamiltonians::make_model(graphene_params(n, n, "pp"))->block_stencil();
        ASSERT_GT(2.0 * 16 * r * static_cast<double>(s.num_rows()), 24.0 * 1024 * 1024);
        const auto op = numerics::make_cpu_stencil_operator(s);
        ASSERT_EQ(op->fused_steps(r), 2);
        for (const int threads : {1, 2}) {
            SCOPED_TRACE(describe(s) + " R=" + std::to_string(r) + " threads=" + std::to_string(threads));
            check_two_steps(*op, s, r, threads, AugmentedOps{0.37, -0.2, -1.0, true}, 950u + static_cast<unsigned>(threads));
        }
    }
}

TEST(CpuStencilTwoStepsWide, KpmMomentsEqualTheOneStepPathAndTheReference)
{
    // R = 16 (and R = 2, 4): the recurrence pairs sweeps 2-3, 4-5, ... in the strip form. The
    // bound of CpuStencilTwoSteps.KpmMomentsEqualTheOneStepPathAndTheReference per column (the
    // columns are independent recurrences; ||v_0|| of each column).
    const int saved = omp_get_max_threads();
    for (const char* bc : {"pp", "oo"}) {
        const BlockStencil s = hamiltonians::make_model(graphene_params(7, 40, bc))->block_stencil();
        const auto op = numerics::make_cpu_stencil_operator(s);
        numerics::StencilTuning one_step_tuning;
        one_step_tuning.tblock_lines = 0;  // one step per pass
        const auto one_step_op = numerics::make_cpu_stencil_operator(s, Precision::Double, one_step_tuning);
        const auto ref = make_block_stencil_reference_operator(s);
        const numerics::KpmScaling scaling = numerics::kpm_scaling(gershgorin_bounds(s), 0.01);
        const global_index n = s.num_rows();
        for (const int r : {2, 4, 16}) {
            ASSERT_EQ(op->fused_steps(r), 2);
            const BlockVector start = random_block(n, r, 78);
            std::vector<double> v0(static_cast<size_t>(r), 0.0);
            for (global_index i = 0; i < n; ++i)
                for (int c = 0; c < r; ++c) v0[static_cast<size_t>(c)] += std::norm(start.data()[static_cast<size_t>(i) * r + c]);
            auto moments = [&](const Operator& o, int num_moments) {
                return recurrence_moments(o, start, num_moments, scaling);
            };
            for (const int num_moments : {16, 17}) {
                const double unit = moment_tolerance_unit(s, scaling, num_moments);
                const auto [reference, ref_steps] = moments(*ref, num_moments);
                const auto [one_step, one_steps] = moments(*one_step_op, num_moments);
                EXPECT_EQ(one_steps, numerics::kpm_num_sweeps(num_moments));
                for (const int strip : {2, 0}) {  // 0: the default strip
                    numerics::StencilTuning tuning;
                    tuning.tblock_strip_sites = strip;
                    const auto strip_op = numerics::make_cpu_stencil_operator(s, Precision::Double, tuning);
                    for (const int threads : {1, 2}) {
                        SCOPED_TRACE(std::string(bc) + " R=" + std::to_string(r) + " M=" + std::to_string(num_moments) +
                                     " strip=" + std::to_string(strip) + " threads=" + std::to_string(threads));
                        omp_set_num_threads(threads);
                        const auto [fused, fused_steps] = moments(*strip_op, num_moments);
                        omp_set_num_threads(saved);
                        EXPECT_EQ(fused_steps, 1 + (numerics::kpm_num_sweeps(num_moments) - 1 + 1) / 2);
                        for (int c = 0; c < r; ++c)
                            for (int k = 0; k < num_moments; ++k) {
                                const size_t i = static_cast<size_t>(c) * num_moments + k;
                                const double tol = unit * v0[static_cast<size_t>(c)];
                                EXPECT_NEAR(fused[i], one_step[i], tol) << "c=" << c << " k=" << k;
                                EXPECT_NEAR(fused[i], reference[i], tol) << "c=" << c << " k=" << k;
                            }
                    }
                }
            }
        }
    }
}

TEST(CpuStencil, NameCostAndArgumentChecks)
{
    const BlockStencil s = hamiltonians::make_model(ti_params(4, 3, 5, "ppo"))->block_stencil();
    const auto op = numerics::make_cpu_stencil_operator(s);
    EXPECT_EQ(op->name(), "ti-stencil-cpu");
    const OperatorCost c = op->cost();
    EXPECT_EQ(c.nonzeros, static_cast<double>(s.num_nonzeros()));
    EXPECT_EQ(c.matrix_bytes, 8.0 * static_cast<double>(s.num_sites()));  // the potential only
    EXPECT_GE(c.storage_bytes, c.matrix_bytes);

    const global_index n = s.num_rows();
    BlockVector x(n, 2), y(n, 2), short_y(n - 1, 2), wide_y(n, 3);
    DotSums dots;
    EXPECT_THROW(op->apply(x, short_y, AugmentedOps{}, nullptr), Error);
    EXPECT_THROW(op->apply(x, wide_y, AugmentedOps{}, nullptr), Error);
    EXPECT_THROW(op->apply(x, x, AugmentedOps{}, nullptr), Error);
    EXPECT_THROW(op->apply(x, y, AugmentedOps{1.0, 0.0, 0.0, true}, nullptr), Error);
    EXPECT_NO_THROW(op->apply(x, y, AugmentedOps{1.0, 0.0, 0.0, true}, &dots));

    BlockStencil broken = s;
    broken.potential.pop_back();
    EXPECT_THROW(numerics::make_cpu_stencil_operator(broken), InputError);
}

// Two steps per pass on a 3-D lattice (ti): the wavefront over x-planes of
// CpuStencilOperator::two_steps_planes (numerics/cpu/stencil_sweep.cpp), strips of y-columns,
// B one plane and one column behind A, the threads' first and last planes and the y-wrap's
// columns after a barrier. Each row is the one-step sweep's column() on the same inputs, so
// both blocks equal two apply() calls bit for bit; the dots are summed in another order.

TEST(CpuStencilTwoStepsPlanes, OfferedForTiAtTheSiteFormWidths)
{
    const auto ti = numerics::make_cpu_stencil_operator(hamiltonians::make_model(ti_params(4, 3, 5, "ppo"))->block_stencil());
    for (const int r : {1, 2, 4, 8}) EXPECT_EQ(ti->fused_steps(r), 2) << "R=" << r;
    for (const int r : {3, 16, 32}) EXPECT_EQ(ti->fused_steps(r), 1) << "R=" << r;
    numerics::StencilTuning off;
    off.tblock_lines = 0;
    EXPECT_EQ(numerics::make_cpu_stencil_operator(hamiltonians::make_model(ti_params(4, 3, 5, "ppo"))->block_stencil(),
                                                  Precision::Double, off)
                  ->fused_steps(8),
              1);
    off = {};
    off.wide_site_form = false;  // the row groups at R > 1: no planes there
    const auto rows = numerics::make_cpu_stencil_operator(hamiltonians::make_model(ti_params(4, 3, 5, "ppo"))->block_stencil(),
                                                          Precision::Double, off);
    EXPECT_EQ(rows->fused_steps(1), 2);
    EXPECT_EQ(rows->fused_steps(8), 1);
    // Single: R = 1 and R = 8 (the grouped float site form), not R = 8 with the row groups.
    const auto single = numerics::make_cpu_stencil_operator(
        hamiltonians::make_model(ti_params(4, 3, 5, "ppo"))->block_stencil(), Precision::Single);
    for (const int r : {1, 8}) EXPECT_EQ(single->fused_steps(r), 2) << "single R=" << r;
    for (const int r : {2, 4, 16}) EXPECT_EQ(single->fused_steps(r), 1) << "single R=" << r;
    EXPECT_EQ(numerics::make_cpu_stencil_operator(hamiltonians::make_model(ti_params(4, 3, 5, "ppo"))->block_stencil(),
                                                  Precision::Single, off)
                  ->fused_steps(8),
              1);
}

TEST(CpuStencilTwoStepsPlanes, BothStepsEqualTwoSweepsBitwiseForEveryStripAndThreadCount)
{
    // ti with disorder and dots (a potential per site), every boundary; 5 planes (1-2 per
    // thread at 3 threads: every plane deferred), 7 planes with 1, 2, 3 threads; strips of 1,
    // 2 columns and the default; 2 columns (the y-wrap's columns coincide); R = 1, 2, 4, 8.
    std::vector<hamiltonians::ModelParams> cases{ti_params(5, 3, 9, "ppo"), ti_params(7, 4, 6, "ppp"),
                                                 ti_params(7, 5, 4, "ooo"), ti_params(6, 2, 5, "pop"),
                                                 ti_params(3, 6, 8, "opo")};
    unsigned seed = 2100;
    for (const auto& params : cases) {
        const BlockStencil s = hamiltonians::make_model(params)->block_stencil();
        numerics::StencilTuning one_tuning;
        one_tuning.tblock_lines = 0;
        const auto one = numerics::make_cpu_stencil_operator(s, Precision::Double, one_tuning);
        for (const int r : {1, 2, 4, 8})
            for (const int strip : {1, 2, 0}) {
                numerics::StencilTuning tuning;
                tuning.tblock_strip_sites = strip;
                const auto op = numerics::make_cpu_stencil_operator(s, Precision::Double, tuning);
                ASSERT_EQ(op->fused_steps(r), 2) << describe(s);
                for (const int threads : {1, 2, 3}) {
                    SCOPED_TRACE(describe(s) + " boundary " + params.boundary + " R=" + std::to_string(r) +
                                 " strip=" + std::to_string(strip) + " threads=" + std::to_string(threads));
                    const global_index n = s.num_rows();
                    const BlockVector x0 = random_block(n, r, seed), y0 = random_block(n, r, seed + 1);
                    seed += 2;
                    const AugmentedOps ops{0.37, -0.2, -1.0, true};
                    BlockVector x = x0, y = y0, xs = x0, ys = y0;
                    DotSums first, second, first_one, second_one;
                    const int saved = omp_get_max_threads();
                    omp_set_num_threads(threads);
                    op->apply_two_steps(x, y, ops, &first, &second);
                    one->apply(xs, ys, ops, &first_one);
                    one->apply(ys, xs, ops, &second_one);
                    omp_set_num_threads(saved);
                    int bad = 0;
                    for (size_t i = 0; i < y.size(); ++i)
                        if ((y.data()[i] != ys.data()[i] || x.data()[i] != xs.data()[i]) && bad++ < 3)
                            ADD_FAILURE() << "row " << i / r << " col " << i % r << ": y " << y.data()[i] << " vs "
                                          << ys.data()[i] << ", x " << x.data()[i] << " vs " << xs.data()[i];
                    EXPECT_EQ(bad, 0);
                    // Dots: the same products in another order, sums of n terms of size <= max|.|^2.
                    for (int c = 0; c < r; ++c) {
                        double sx = 0, sy = 0;
                        for (global_index i = 0; i < n; ++i) {
                            sx += std::norm(x0(i, c)) + std::abs(ys(i, c)) * std::abs(x0(i, c));
                            sy += std::norm(ys(i, c)) + std::abs(xs(i, c)) * std::abs(ys(i, c));
                        }
                        const double tol_a = 4.0 * (n + 2.0) * kEps * sx, tol_b = 4.0 * (n + 2.0) * kEps * sy;
                        EXPECT_NEAR(first.xx[c], first_one.xx[c], tol_a) << "col " << c;
                        EXPECT_LE(std::abs(first.yx[c] - first_one.yx[c]), tol_a) << "col " << c;
                        EXPECT_NEAR(second.xx[c], second_one.xx[c], tol_b) << "col " << c;
                        EXPECT_LE(std::abs(second.yx[c] - second_one.yx[c]), tol_b) << "col " << c;
                    }
                    if (::testing::Test::HasFailure()) return;
                }
            }
    }
}
