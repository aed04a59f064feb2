// Every operator of a model applies the same matrix: stored SELL-C-σ, CRS, the naive
// unfused path and the matrix-free stencil, for both models with dots and disorder.
#include <gtest/gtest.h>

#include <cmath>

#include "hamiltonians/model.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "tests/support/dense_oracle.hpp"

using namespace topokpm;

namespace {

hamiltonians::ModelParams ti_params()
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = 6; p.ny = 4; p.nz = 5;
    p.dot_potential = 0.4; p.dot_radius = 1.0; p.dot_period = 2; p.dot_depth = 2;
    p.disorder = 0.8; p.disorder_seed = 3;
    return p;
}

hamiltonians::ModelParams graphene_params()
{
    hamiltonians::ModelParams p;
    p.name = "graphene";
    p.nx = 8; p.ny = 6; p.nz = 1;
    p.dot_potential = -0.3; p.dot_radius = 1.5; p.dot_period = 2;
    p.disorder = 0.5; p.disorder_seed = 9;
    return p;
}

}  // namespace

// Each entry of y is a sum of at most 13 products of O(1) numbers (|H_ij| <= max(t, |m|+|V|)):
// different summation orders differ by a few eps times sum |H_ij||x_j| <= ~10; 1e-13 absolute.
TEST(OperatorEquivalence, AllOperatorsApplyTheSameMatrix)
{
    for (const auto& params : {ti_params(), graphene_params()}) {
        const auto model = hamiltonians::make_model(params);
        const global_index n = model->num_rows();
        std::vector<std::unique_ptr<Operator>> ops;
        ops.push_back(numerics::make_naive_operator(std::make_shared<numerics::SellMatrix>(
            numerics::SellMatrix::build(*model, 0, n, {1, 1}))));
        ops.push_back(numerics::make_sell_operator(std::make_shared<numerics::SellMatrix>(
            numerics::SellMatrix::build(*model, 0, n, {1, 1}))));
        ops.push_back(numerics::make_sell_operator(std::make_shared<numerics::SellMatrix>(
            numerics::SellMatrix::build(*model, 0, n, {32, 64}))));
        ops.push_back(numerics::make_sell_operator(std::make_shared<numerics::SellMatrix>(
            numerics::SellMatrix::build(*model, 0, n, {8, 1}))));
        ops.push_back(numerics::make_cpu_stencil_operator(model->block_stencil()));
        for (const int r : {1, 3, 8, 32}) {
            BlockVector x(n, r), y0(n, r);
            numerics::fill_random_phase_vectors(x, 17, 0, n);
            numerics::fill_random_phase_vectors(y0, 18, 0, n);
            const AugmentedOps ops_step{0.37, -0.2, -1.0, true};
            BlockVector ref = y0;
            DotSums ref_dots;
            ops[0]->apply(x, ref, ops_step, &ref_dots);
            for (size_t o = 1; o < ops.size(); ++o) {
                BlockVector y = y0;
                DotSums dots;
                ops[o]->apply(x, y, ops_step, &dots);
                double err = 0.0;
                for (size_t i = 0; i < y.size(); ++i) err = std::max(err, std::abs(y.data()[i] - ref.data()[i]));
                EXPECT_LT(err, 1e-13) << params.name << " " << ops[o]->name() << " R=" << r;
                for (int c = 0; c < r; ++c) {
                    EXPECT_NEAR(dots.xx[c], ref_dots.xx[c], 1e-12 * n) << ops[o]->name();
                    EXPECT_NEAR(std::abs(dots.yx[c] - ref_dots.yx[c]), 0.0, 1e-11 * n) << ops[o]->name();
                }
            }
        }
    }
}

// Gershgorin discs contain every eigenvalue (a theorem; the test guards the row data).
TEST(OperatorEquivalence, GershgorinBoundsContainTheSpectrum)
{
    for (const auto& params : {ti_params(), graphene_params()}) {
        const auto model = hamiltonians::make_model(params);
        const SpectralBounds g = gershgorin_bounds(*model);
        const std::vector<double> ev = topokpm::testing::dense_eigenvalues(*model);
        EXPECT_LE(g.lower, ev.front()) << params.name;
        EXPECT_GE(g.upper, ev.back()) << params.name;
    }
}
