// Model `graphene` (models.md §3) against an independent dense construction, the
// analytic clean bands and hand-checked dot patterns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "hamiltonians/model.hpp"
#include "tests/support/dense_oracle.hpp"
#include "tests/unit/hamiltonians/spec_reference.hpp"
#include "tests/support/model_params.hpp"

namespace topokpm {
namespace {

using hamiltonians::ModelParams;
using cplx = std::complex<double>;

ModelParams graphene(int nx, int ny, const std::string& boundary = "pp")
{
    return topokpm::testing::lattice_params("graphene", nx, ny, 1, boundary);
}

ModelParams graphene_dirty(const std::string& boundary = "pp")
{
    ModelParams p = graphene(6, 4, boundary);
    p.t = 1.1;
    p.dot_potential = 0.6;
    p.dot_radius = 1.2;
    p.dot_period = 2;
    p.disorder = 0.9;
    p.disorder_seed = 4242;
    return p;
}

long g_row(const ModelParams& p, int m, int n, int s) { return s + 2L * (n + long(p.ny) * m); }

TEST(GrapheneModel, DenseMatrixEqualsIndependentSpecConstructionExactly)
{
    for (const std::string bc : {"pp", "op", "po", "oo"}) {
        const ModelParams p = graphene_dirty(bc);
        const auto model = hamiltonians::make_model(p);
        const std::vector<cplx> got = testing::dense_matrix(*model);
        const std::vector<cplx> want = testing::spec::graphene_dense(p);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) ASSERT_EQ(got[k], want[k]) << "boundary " << bc << ", entry " << k;
    }
}

TEST(GrapheneModel, IsExactlyHermitianWithDotsAndDisorder)
{
    const auto model = hamiltonians::make_model(graphene_dirty());
    const long n = model->num_rows();
    const std::vector<cplx> a = testing::dense_matrix(*model);
    for (long i = 0; i < n; ++i)
        for (long j = 0; j < n; ++j) ASSERT_EQ(a[size_t(i + j * n)], std::conj(a[size_t(j + i * n)])) << i << "," << j;
}

TEST(GrapheneModel, BondsOfTheSpecAreStored)
{
    // A(m,n) bonds to B(m,n), B(m+1,n-1), B(m,n-1): check A(0,0) on a 3x3 lattice by hand,
    // where the wrap-around gives B(0,0) = row 1, B(1,2) = row 11, B(0,2) = row 5.
    ModelParams p = graphene(3, 3);
    p.t = 0.7;
    const auto model = hamiltonians::make_model(p);
    global_index cols[4];
    cplx vals[4];
    ASSERT_EQ(model->row(0, cols, vals), 4);
    const global_index want_cols[4] = {0, 1, 5, 11};
    for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(cols[k], want_cols[k]);
        EXPECT_EQ(vals[k], k == 0 ? cplx(0.0) : cplx(-0.7));
    }
    // B(1,2) = row 11 sees A(1,2) = 10, A(0,0) (via m-1, n+1 wrapped) = 0, A(1,0) = 6.
    ASSERT_EQ(model->row(11, cols, vals), 4);
    const global_index want_b[4] = {0, 6, 10, 11};
    for (int k = 0; k < 4; ++k) EXPECT_EQ(cols[k], want_b[k]);
}

TEST(GrapheneModel, FourEntriesPerRowSortedAndEstimateExact)
{
    for (const std::string bc : {"pp", "op", "po", "oo"})
        for (const auto& dims : std::vector<std::pair<int, int>>{{2, 2}, {2, 5}, {4, 3}, {6, 6}}) {
            const ModelParams p = graphene(dims.first, dims.second, bc);
            const auto model = hamiltonians::make_model(p);
            global_index cols[4];
            cplx vals[4];
            EXPECT_EQ(model->max_row_length(), 4);
            for (long r = 0; r < model->num_rows(); ++r) {
                const int len = model->row(r, cols, vals);
                if (bc == "pp") {
                    ASSERT_EQ(len, 4) << r;
                }
                for (int k = 1; k < len; ++k) ASSERT_LT(cols[k - 1], cols[k]) << r;
                ASSERT_TRUE(std::find(cols, cols + len, r) != cols + len) << "diagonal always stored, row " << r;
            }
            EXPECT_EQ(model->estimated_nonzeros(), model->num_nonzeros(0, model->num_rows())) << bc;
            if (bc == "pp") {
                EXPECT_EQ(model->estimated_nonzeros(), 4 * model->num_rows());
            }
        }
}

TEST(GrapheneModel, CleanSpectrumMatchesAnalyticBands)
{
    // Bloch ansatz psi_s(m, n) = e^{i (k1 m + k2 n)} u_s in the A row of the spec's bond
    // list: -t u_B [1 + e^{i (k1 - k2)} + e^{-i k2}], so E = +-|t| |1 + e^{i(k1-k2)} + e^{-i k2}|.
    const double pi = std::acos(-1.0);
    for (const auto& [nx, ny, t] : {std::tuple{4, 5, 1.0}, std::tuple{6, 6, 1.0}, std::tuple{3, 7, -0.8}}) {
        ModelParams p = graphene(nx, ny);
        p.t = t;
        const auto model = hamiltonians::make_model(p);
        std::vector<double> want;
        for (int a = 0; a < nx; ++a)
            for (int b = 0; b < ny; ++b) {
                const double k1 = 2 * pi * a / nx, k2 = 2 * pi * b / ny;
                const double e = std::abs(t) * std::abs(1.0 + std::polar(1.0, k1 - k2) + std::polar(1.0, -k2));
                want.push_back(e);
                want.push_back(-e);
            }
        std::sort(want.begin(), want.end());
        const std::vector<double> got = testing::dense_eigenvalues(*model);
        ASSERT_EQ(got.size(), want.size());
        // Backward-stable zheev: error <= c(n) eps ||H||, ||H|| <= 3|t|, n <= 72: 1e-12 * 3|t|.
        for (size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], want[k], 3e-12 * std::abs(t)) << k;
    }
}

TEST(GrapheneModel, DotIsTheHexagonAroundTheSupercellCentre)
{
    // P = 2, radius 1: the centre of supercell (0, 0) is (1 + 1/3) a1 + (1 + 1/3) a2 =
    // (2 sqrt 3, 2), the centre of the hexagon whose six corners are at distance 1:
    // A(1,1), A(2,1), A(1,2), B(1,1), B(2,0), B(2,1) (worked out by hand in Cartesian
    // coordinates). On a 4x4 lattice this repeats with period 2 in m and n.
    ModelParams p = graphene(4, 4);
    p.dot_period = 2;
    p.dot_radius = 1.0;
    p.dot_potential = 1.0;
    const auto model = hamiltonians::make_model(p);
    const std::set<std::array<int, 3>> hexagon = {{1, 1, 0}, {0, 1, 0}, {1, 0, 0}, {1, 1, 1}, {0, 0, 1}, {0, 1, 1}};
    int inside = 0;
    for (int m = 0; m < 4; ++m)
        for (int n = 0; n < 4; ++n)
            for (int s = 0; s < 2; ++s) {
                const bool want = hexagon.count({m % 2, n % 2, s}) > 0;
                EXPECT_EQ(model->potential(g_row(p, m, n, s)), want ? 1.0 : 0.0) << m << n << s;
                inside += want;
            }
    EXPECT_EQ(inside, 24);
}

TEST(GrapheneModel, DotPatternMatchesBruteForceMinimumImage)
{
    // Brute force in Cartesian coordinates over every centre and periodic image.
    for (const auto& [nx, ny, period, radius] :
         {std::tuple{6, 6, 3, 1.8}, std::tuple{8, 4, 4, 2.1}, std::tuple{10, 5, 5, 3.0}, std::tuple{6, 6, 6, 2.65}}) {
        ModelParams p = graphene(nx, ny);
        p.dot_period = period;
        p.dot_radius = radius;
        p.dot_potential = -1.5;
        const auto model = hamiltonians::make_model(p);
        int inside = 0;
        for (int m = 0; m < nx; ++m)
            for (int n = 0; n < ny; ++n)
                for (int s = 0; s < 2; ++s) {
                    const bool want = testing::spec::graphene_inside_dot(p, m, n, s);
                    inside += want;
                    EXPECT_EQ(model->potential(g_row(p, m, n, s)), want ? -1.5 : 0.0) << m << " " << n << " " << s;
                }
        EXPECT_GT(inside, 0);
        EXPECT_LT(inside, 2 * nx * ny);
    }
}

TEST(GrapheneModel, DisorderPotentialIsTheCounterStreamOfTheRow)
{
    ModelParams p = graphene(5, 4);
    p.disorder = 3.1;
    p.disorder_seed = 7;
    const std::uint64_t sd = testing::spec::splitmix(7, 1);
    const auto model = hamiltonians::make_model(p);
    for (long r = 0; r < model->num_rows(); ++r)
        ASSERT_EQ(model->potential(r), p.disorder * (testing::spec::unif(sd, std::uint64_t(r)) - 0.5)) << r;
    // Row 0 by the values computed once with Python (see counter_rng_reference_test.cpp):
    // uniform(splitmix64(7, 1), 0) = 0.5091093394740435.
    EXPECT_EQ(model->potential(0), 3.1 * (0.5091093394740435 - 0.5));
}

TEST(GrapheneModel, AttributesFollowTheResultSchema)
{
    ModelParams p = graphene_dirty();
    p.boundary.clear();
    const auto model = hamiltonians::make_model(p);
    const AttributeList attrs = model->attributes();
    const std::vector<std::string> names = {"name",       "Nx",       "Ny",           "Nz",           "t",         "dot_potential",
                                            "dot_radius", "dot_period", "disorder", "disorder_seed", "boundary"};
    ASSERT_EQ(attrs.size(), names.size());
    for (size_t k = 0; k < names.size(); ++k) EXPECT_EQ(attrs[k].name, names[k]);
    EXPECT_EQ(std::get<std::string>(attrs[0].value), "graphene");
    EXPECT_EQ(std::get<std::int64_t>(attrs[1].value), 6);
    EXPECT_EQ(std::get<std::int64_t>(attrs[2].value), 4);
    EXPECT_EQ(std::get<std::int64_t>(attrs[3].value), 1);
    EXPECT_EQ(std::get<double>(attrs[4].value), 1.1);
    EXPECT_EQ(std::get<double>(attrs[5].value), 0.6);
    EXPECT_EQ(std::get<double>(attrs[6].value), 1.2);
    EXPECT_EQ(std::get<std::int64_t>(attrs[7].value), 2);
    EXPECT_EQ(std::get<double>(attrs[8].value), 0.9);
    EXPECT_EQ(std::get<std::uint64_t>(attrs[9].value), 4242u);
    EXPECT_EQ(std::get<std::string>(attrs[10].value), "pp");
    EXPECT_EQ(model->orbitals_per_site(), 2);
    EXPECT_EQ(model->num_rows(), 48);
}

}  // namespace
}  // namespace topokpm
