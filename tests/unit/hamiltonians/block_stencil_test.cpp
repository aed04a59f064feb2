// Model::block_stencil() describes exactly the model's matrix: the BlockStencil applied by
// the reference loop (numerics/reference) equals the dense matrix of the model's rows
// (tests/support/dense_oracle) for both models, open and periodic boundaries, dots and
// disorder, with the augmented update and its dots. CPU only: runs in CI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/base/block_stencil.hpp"
#include "numerics/base/dense_eigen.hpp"
#include "numerics/kpm/bloch.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/block_stencil_reference.hpp"
#include "tests/support/dense_operator.hpp"
#include "tests/support/dense_oracle.hpp"
#include "tests/support/model_params.hpp"

using namespace topokpm;
using topokpm::testing::make_block_stencil_reference_operator;

namespace {

hamiltonians::ModelParams params(const char* name, int nx, int ny, int nz, const char* boundary)
{
    return topokpm::testing::lattice_params(name, nx, ny, nz, boundary);
}

std::vector<hamiltonians::ModelParams> all_cases()
{
    std::vector<hamiltonians::ModelParams> out;
    for (const char* b : {"ppo", "ppp", "ooo", "opo"}) {
        hamiltonians::ModelParams p = params("ti", 6, 3, 4, b);
        p.m = 1.7;
        p.t = 0.9;
        p.dot_potential = 0.4;
        p.dot_radius = 1.0;
        p.dot_period = 3;
        p.dot_depth = 2;
        p.disorder = 0.8;
        p.disorder_seed = 5;
        out.push_back(p);
    }
    out.push_back(params("ti", 1, 1, 1, "ooo"));
    for (const char* b : {"ppo", "ooo"}) {  // an exchange mass: one potential value per row
        hamiltonians::ModelParams p = params("ti", 3, 4, 3, b);
        p.exchange_mass = 0.35;
        p.disorder = 0.6;
        out.push_back(p);
    }
    out.push_back([] {  // Nz = 1: both faces are the one layer, the term added once
        hamiltonians::ModelParams p = params("ti", 3, 3, 1, "ppo");
        p.exchange_mass = -0.5;
        return p;
    }());
    for (const char* b : {"pp", "oo", "po", "op"}) {
        hamiltonians::ModelParams p = params("graphene", 6, 4, 1, b);
        p.dot_potential = -0.3;
        p.dot_radius = 1.2;
        p.dot_period = 2;
        p.disorder = 0.5;
        p.disorder_seed = 9;
        out.push_back(p);
    }
    out.push_back(params("graphene", 2, 2, 1, "pp"));  // neighbours that coincide
    // A magnetic field: the entries' Peierls phases (StencilField), on tori (the y wrap's
    // phases by x) and open lattices.
    for (const auto& [name, nx, ny, nz, b, q] : {std::tuple{"ti", 4, 6, 3, "ppo", 24}, {"ti", 3, 4, 3, "ooo", 7},
                                                 {"graphene", 6, 4, 1, "pp", 12}, {"graphene", 5, 3, 1, "op", 5}}) {
        hamiltonians::ModelParams p = params(name, nx, ny, nz, b);
        p.flux = {1, q};
        p.disorder = 0.4;
        out.push_back(p);
    }
    return out;
}

}  // namespace

TEST(BlockStencil, DescribesTheModelMatrixExactly)
{
    for (const hamiltonians::ModelParams& p : all_cases()) {
        const auto model = hamiltonians::make_model(p);
        const std::string label = p.name + " " + std::to_string(p.nx) + "x" + std::to_string(p.ny) + "x" +
                                  std::to_string(p.nz) + " " + model->params().boundary;
        const BlockStencil s = model->block_stencil();
        ASSERT_NO_THROW(s.validate()) << label;
        EXPECT_EQ(s.num_rows(), model->num_rows()) << label;
        EXPECT_EQ(s.orbitals, model->orbitals_per_site()) << label;
        EXPECT_EQ(s.num_nonzeros(), model->estimated_nonzeros()) << label;

        const global_index n = model->num_rows();
        const topokpm::testing::DenseOperator dense(topokpm::testing::dense_matrix(*model), n);
        const auto stencil = make_block_stencil_reference_operator(s);
        for (const int r : {1, 3}) {
            BlockVector x(n, r), y0(n, r);
            numerics::fill_random_phase_vectors(x, 21, 0, n);
            numerics::fill_random_phase_vectors(y0, 22, 0, n);
            for (const double beta : {0.0, -1.0}) {
                const AugmentedOps ops{0.6, 0.3, beta, true};
                BlockVector y_ref = y0, y = y0;
                DotSums d_ref, d;
                dense.apply(x, y_ref, ops, &d_ref);
                stencil->apply(x, y, ops, &d);
                // At most 13 products of O(1) entries with |x| = 1, summed in another order
                // (the dense loop also adds exact zeros): a few u times sum |a_ij| < 1e-13.
                for (std::size_t k = 0; k < y.size(); ++k)
                    ASSERT_LT(std::abs(y.data()[k] - y_ref.data()[k]), 1e-13) << label << " element " << k;
                for (int c = 0; c < r; ++c) {
                    EXPECT_NEAR(d.xx[c], d_ref.xx[c], 1e-13 * n) << label;
                    EXPECT_LT(std::abs(d.yx[c] - d_ref.yx[c]), 1e-13 * n) << label;
                }
            }
        }
    }
}

// gershgorin_bounds(BlockStencil) (from the blocks and the potential, no pass over the rows)
// against the discs of the model's rows and the dense spectrum: it contains both, and it is
// the rows' bound itself where every row has all its neighbours, distinct (periodic, extents
// >= 3). Tolerance: both sum at most 13 moduli of O(1) entries in another order, a few u
// apart: 1e-13.
TEST(BlockStencil, GershgorinFromTheBlocksContainsTheRowDiscsAndTheSpectrum)
{
    for (const hamiltonians::ModelParams& p : all_cases()) {
        const auto model = hamiltonians::make_model(p);
        const std::string label = p.name + " " + std::to_string(p.nx) + "x" + std::to_string(p.ny) + "x" +
                                  std::to_string(p.nz) + " " + model->params().boundary;
        const SpectralBounds blocks = gershgorin_bounds(model->block_stencil());
        const SpectralBounds rows = gershgorin_bounds(*model);
        EXPECT_LE(blocks.lower, rows.lower + 1e-13) << label;
        EXPECT_GE(blocks.upper, rows.upper - 1e-13) << label;
        const std::string bc = model->params().boundary;
        const bool all_periodic = bc.find('o') == std::string::npos && p.nx >= 3 && p.ny >= 3 && (p.nz == 1 || p.nz >= 3);
        if (all_periodic) {
            EXPECT_NEAR(blocks.lower, rows.lower, 1e-13) << label;
            EXPECT_NEAR(blocks.upper, rows.upper, 1e-13) << label;
        }
        const global_index n = model->num_rows();
        const std::vector<double> ev =
            numerics::hermitian_eigenvalues(topokpm::testing::dense_matrix(*model), static_cast<int>(n));
        EXPECT_LE(blocks.lower, ev.front() + 1e-12) << label;
        EXPECT_GE(blocks.upper, ev.back() - 1e-12) << label;
    }
}

// plane_wave_rayleigh_bounds: its ends are Rayleigh quotients of actual vectors (shifted by
// the potential's range), so the dense spectrum must contain the interval, for every boundary,
// with dots and disorder, odd extents (k = pi not a lattice momentum) and coinciding
// neighbours. Tolerance 1e-12: eigenvalues of O(1) matrices of size <= 96 from LAPACK, a few
// hundred u. Clean periodic graphene: the k = 0 plane waves (A +- B) are eigenvectors with
// +-3 t, the band edges, equal to the Gershgorin bounds (the shortcut the KPM bounds take).
TEST(BlockStencil, PlaneWaveRayleighBoundsLieInsideTheSpectrum)
{
    std::vector<hamiltonians::ModelParams> cases = all_cases();
    for (const char* b : {"ppp", "ppo", "ooo"}) cases.push_back(params("ti", 4, 5, 3, b));
    for (const char* b : {"pp", "oo", "po"}) cases.push_back(params("graphene", 6, 4, 1, b));
    cases.push_back(params("graphene", 5, 3, 1, "pp"));  // odd extents
    int nonempty = 0;
    for (const hamiltonians::ModelParams& p : cases) {
        const auto model = hamiltonians::make_model(p);
        const std::string label = p.name + " " + std::to_string(p.nx) + "x" + std::to_string(p.ny) + "x" +
                                  std::to_string(p.nz) + " " + model->params().boundary +
                                  (p.disorder != 0.0 ? " disordered" : "");
        const std::optional<SpectralBounds> rq = plane_wave_rayleigh_bounds(model->block_stencil());
        const std::vector<double> ev = numerics::hermitian_eigenvalues(topokpm::testing::dense_matrix(*model),
                                                                       static_cast<int>(model->num_rows()));
        if (!rq) continue;
        ++nonempty;
        EXPECT_LT(rq->lower, rq->upper) << label;
        EXPECT_GE(rq->lower, ev.front() - 1e-12) << label;
        EXPECT_LE(rq->upper, ev.back() + 1e-12) << label;
    }
    EXPECT_GE(nonempty, 8) << "the clean cases all give an interval";

    const auto clean = hamiltonians::make_model(params("graphene", 6, 4, 1, "pp"));
    const std::optional<SpectralBounds> rq = plane_wave_rayleigh_bounds(clean->block_stencil());
    ASSERT_TRUE(rq.has_value());
    const SpectralBounds g = gershgorin_bounds(clean->block_stencil());
    EXPECT_NEAR(rq->lower, g.lower, 1e-12);
    EXPECT_NEAR(rq->upper, g.upper, 1e-12);
    EXPECT_NEAR(g.upper, -g.lower, 1e-12);
}

TEST(BlockStencil, ReferenceOperatorNeverReadsYWhenBetaIsZero)
{
    const auto model = hamiltonians::make_model(params("graphene", 3, 3, 1, "pp"));
    const auto op = make_block_stencil_reference_operator(model->block_stencil());
    const global_index n = model->num_rows();
    BlockVector x(n, 2), y(n, 2);
    numerics::fill_random_phase_vectors(x, 1, 0, n);
    for (std::size_t k = 0; k < y.size(); ++k) y.data()[k] = std::numeric_limits<double>::quiet_NaN();
    op->apply(x, y, {1.0, 0.0, 0.0, false}, nullptr);
    for (std::size_t k = 0; k < y.size(); ++k) ASSERT_TRUE(std::isfinite(y.data()[k].real())) << k;
}

TEST(BlockStencil, ValidateNamesTheBadField)
{
    BlockStencil s;
    s.name = "bad";
    s.orbitals = 2;
    s.onsite.assign(3, complex_type(0.0, 0.0));
    s.potential.assign(1, 0.0);
    try {
        s.validate();
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("on-site block has 3 entries"), std::string::npos) << e.what();
    }
    s.onsite.assign(4, complex_type(0.0, 0.0));
    s.terms.push_back({1, 0, 0, std::vector<complex_type>(5)});
    EXPECT_THROW(s.validate(), InputError);
    s.terms.back().block.resize(4);
    EXPECT_NO_THROW(s.validate());
    s.potential.assign(3, 0.0);
    EXPECT_THROW(s.validate(), InputError);
}

// The Bloch Hamiltonian from the models' stencils (numerics/kpm/bloch.hpp, the bands drawn
// over A(k, E)) has the analytic bands of models.md: ti periodic in x, y, z gives
// E = +-sqrt((m - t sum cos k_j)^2 + t^2 sum sin^2 k_j), each twice, for kz = 2 pi mz / Nz,
// mz = 0..Nz-1 (the S = 4 Nz eigenvalues of one in-plane k); graphene E = +-t |1 + e^{i(k1 - k2)}
// + e^{-i k2}| (bonds A(m,n) - B(m,n), B(m+1,n-1), B(m,n-1)). zheev's eigenvalues are
// backward stable: errors ~ S eps |H| (|H| <= 5 t), below 1e-12 for S <= 20.
TEST(BlochBands, TiAndGrapheneStencilsGiveTheAnalyticBands)
{
    hamiltonians::ModelParams ti = params("ti", 4, 6, 5, "ppp");
    ti.m = 1.7;
    ti.t = 0.9;
    const auto model = hamiltonians::make_model(ti);
    const BlockStencil st = model->block_stencil();
    for (const numerics::Momentum& k : std::vector<numerics::Momentum>{{0, 0}, {1, 2}, {3, 5}, {2, 3}}) {
        std::vector<double> want;
        for (int mz = 0; mz < ti.nz; ++mz) {
            const double kx = 2 * M_PI * k.mx / ti.nx, ky = 2 * M_PI * k.my / ti.ny, kz = 2 * M_PI * mz / ti.nz;
            const double mass = ti.m - ti.t * (std::cos(kx) + std::cos(ky) + std::cos(kz));
            const double e = std::sqrt(mass * mass + ti.t * ti.t * (std::pow(std::sin(kx), 2) + std::pow(std::sin(ky), 2) +
                                                                   std::pow(std::sin(kz), 2)));
            want.insert(want.end(), {-e, -e, e, e});
        }
        std::sort(want.begin(), want.end());
        const auto got = numerics::hermitian_eigenvalues(numerics::bloch_hamiltonian(st, k), 4 * ti.nz);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "ti k = (" << k.mx << ", " << k.my << ")";
    }
    hamiltonians::ModelParams gr = params("graphene", 6, 9, 1, "pp");
    gr.t = 1.3;
    const BlockStencil gs = hamiltonians::make_model(gr)->block_stencil();
    for (const numerics::Momentum& k : std::vector<numerics::Momentum>{{0, 0}, {4, 3}, {1, 7}, {3, 0}}) {
        const double k1 = 2 * M_PI * k.mx / gr.nx, k2 = 2 * M_PI * k.my / gr.ny;
        const double f = std::abs(1.0 + std::polar(1.0, k1 - k2) + std::polar(1.0, -k2));
        const auto got = numerics::hermitian_eigenvalues(numerics::bloch_hamiltonian(gs, k), 2);
        EXPECT_NEAR(got[0], -gr.t * f, 1e-12) << "graphene k = (" << k.mx << ", " << k.my << ")";
        EXPECT_NEAR(got[1], gr.t * f, 1e-12) << "graphene k = (" << k.mx << ", " << k.my << ")";
    }
}
