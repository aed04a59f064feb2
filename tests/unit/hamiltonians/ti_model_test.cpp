// Model `ti` (models.md §2) against an independent dense construction, hand-computed
// entries and the analytic clean-bulk bands.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "hamiltonians/model.hpp"
#include "tests/support/dense_oracle.hpp"
#include "tests/unit/hamiltonians/spec_reference.hpp"
#include "tests/support/model_params.hpp"

namespace topokpm {
namespace {

using hamiltonians::ModelParams;
using cplx = std::complex<double>;

ModelParams ti(int nx, int ny, int nz, const std::string& boundary = "ppo")
{
    return topokpm::testing::lattice_params("ti", nx, ny, nz, boundary);
}

/// A ti model with dots (P = 3) and disorder: every term of the Hamiltonian is active.
ModelParams ti_dirty(const std::string& boundary = "ppo")
{
    ModelParams p = ti(3, 6, 4, boundary);
    p.t = 0.8;
    p.m = 1.7;
    p.dot_potential = -0.45;
    p.dot_radius = 1.0;
    p.dot_period = 3;
    p.dot_depth = 2;
    p.disorder = 1.3;
    p.disorder_seed = 99;
    return p;
}

long ti_row(const ModelParams& p, int x, int y, int z, int o) { return o + 4L * (z + p.nz * (y + long(p.ny) * x)); }

TEST(TiModel, DenseMatrixEqualsIndependentSpecConstructionExactly)
{
    for (const std::string bc : {"ppo", "ppp", "opo", "oop", "ooo"}) {
        const ModelParams p = ti_dirty(bc);
        const auto model = hamiltonians::make_model(p);
        const std::vector<cplx> got = testing::dense_matrix(*model);
        const std::vector<cplx> want = testing::spec::ti_dense(p);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) ASSERT_EQ(got[k], want[k]) << "boundary " << bc << ", entry " << k;
    }
}

// The exchange mass M_ex s0 (x) sz on both z faces of a slab (docs/physics.md): the dense
// matrix of the rows equals the test's own construction entry for entry, with dots and
// disorder, also on a one-layer slab (Nz = 1: the term once); the diagonal of a surface site
// differs by exactly +-M_ex from the same model without it, interior sites not at all.
TEST(TiModel, ExchangeMassOnBothSurfaceLayersEqualsTheConstruction)
{
    for (const std::string bc : {"ppo", "ooo"})
        for (const int nz : {1, 2, 4}) {
            ModelParams p = ti_dirty(bc);
            p.nz = nz;
            p.dot_depth = std::min(p.dot_depth, nz);
            p.exchange_mass = 0.45;
            const auto model = hamiltonians::make_model(p);
            const std::vector<cplx> got = testing::dense_matrix(*model);
            const std::vector<cplx> want = testing::spec::ti_dense(p);
            ASSERT_EQ(got.size(), want.size());
            for (size_t k = 0; k < got.size(); ++k) ASSERT_EQ(got[k], want[k]) << bc << " Nz " << nz << ", entry " << k;
            ModelParams none = p;
            none.exchange_mass = 0.0;
            const std::vector<cplx> plain = testing::dense_matrix(*hamiltonians::make_model(none));
            const long dim = long(model->num_rows());
            for (int z = 0; z < nz; ++z)
                for (int o = 0; o < 4; ++o) {
                    const long r = ti_row(p, 1, 2, z, o);
                    const double expected = (z == 0 || z == nz - 1) ? (o % 2 == 0 ? 0.45 : -0.45) : 0.0;
                    EXPECT_NEAR((got[size_t(r * (dim + 1))] - plain[size_t(r * (dim + 1))]).real(), expected, 1e-15)
                        << bc << " Nz " << nz << " z " << z << " o " << o;
                }
            const AttributeList a = model->attributes();
            EXPECT_TRUE(std::any_of(a.begin(), a.end(), [](const Attribute& x) { return x.name == "exchange_mass"; }));
        }
}

TEST(TiModel, IsExactlyHermitianWithDotsAndDisorder)
{
    const auto model = hamiltonians::make_model(ti_dirty());
    const long n = model->num_rows();
    const std::vector<cplx> a = testing::dense_matrix(*model);
    for (long i = 0; i < n; ++i)
        for (long j = 0; j < n; ++j) ASSERT_EQ(a[size_t(i + j * n)], std::conj(a[size_t(j + i * n)])) << i << "," << j;
}

TEST(TiModel, HoppingBlocksMatchHandComputedEntries)
{
    // Hand-derived from T_j = -t (G1 - i G_{j+1}) / 2 with G1 = diag(1, 1, -1, -1) and the
    // anti-diagonal entries of G2 = sx(x)sx, G3 = sx(x)sy, G4 = sx(x)sz.
    ModelParams p = ti(4, 4, 4);
    p.t = 0.6;
    const double h = p.t / 2;
    const cplx i(0.0, 1.0);
    const auto model = hamiltonians::make_model(p);
    const std::vector<cplx> a = testing::dense_matrix(*model);
    const long n = model->num_rows();
    const auto at = [&](long r, long c) { return a[size_t(r + c * n)]; };
    // Site (1, 1, 1) and its +x, +y, +z neighbours: H[n + e_j, n] = T_j.
    const auto tx = [&](int s, int u) { return at(ti_row(p, 2, 1, 1, s), ti_row(p, 1, 1, 1, u)); };
    const auto ty = [&](int s, int u) { return at(ti_row(p, 1, 2, 1, s), ti_row(p, 1, 1, 1, u)); };
    const auto tz = [&](int s, int u) { return at(ti_row(p, 1, 1, 2, s), ti_row(p, 1, 1, 1, u)); };
    EXPECT_EQ(tx(0, 0), cplx(-h)); EXPECT_EQ(tx(2, 2), cplx(h)); EXPECT_EQ(tx(0, 3), i * h); EXPECT_EQ(tx(3, 0), i * h);
    EXPECT_EQ(tx(1, 2), i * h);    EXPECT_EQ(tx(0, 1), cplx(0)); EXPECT_EQ(tx(0, 2), cplx(0));
    EXPECT_EQ(ty(0, 3), cplx(h));  EXPECT_EQ(ty(1, 2), cplx(-h)); EXPECT_EQ(ty(2, 1), cplx(h)); EXPECT_EQ(ty(3, 0), cplx(-h));
    EXPECT_EQ(ty(1, 1), cplx(-h)); EXPECT_EQ(ty(3, 3), cplx(h));
    EXPECT_EQ(tz(0, 2), i * h);    EXPECT_EQ(tz(1, 3), -i * h); EXPECT_EQ(tz(2, 0), i * h); EXPECT_EQ(tz(3, 1), -i * h);
    EXPECT_EQ(tz(0, 3), cplx(0));
    // Full blocks against the Kronecker construction, both directions.
    for (int j = 1; j <= 3; ++j) {
        const auto tj = testing::spec::hopping_block(j, p.t);
        int c[3] = {1, 1, 1};
        c[j - 1] = 2;
        for (int s = 0; s < 4; ++s)
            for (int u = 0; u < 4; ++u) {
                EXPECT_EQ(at(ti_row(p, c[0], c[1], c[2], s), ti_row(p, 1, 1, 1, u)), tj[s][u]) << j;
                EXPECT_EQ(at(ti_row(p, 1, 1, 1, s), ti_row(p, c[0], c[1], c[2], u)), std::conj(tj[u][s])) << j;
            }
    }
    // Diagonal: V + m G1[o, o] with V = 0.
    for (int o = 0; o < 4; ++o)
        EXPECT_EQ(at(ti_row(p, 1, 1, 1, o), ti_row(p, 1, 1, 1, o)), cplx(o < 2 ? p.m : -p.m));
}

TEST(TiModel, RowsAreSortedAndStoreExactlyTheStructuralNonzeros)
{
    for (const std::string bc : {"ppo", "ppp", "ooo"}) {
        const ModelParams p = ti_dirty(bc);
        const auto model = hamiltonians::make_model(p);
        const std::vector<cplx> want = testing::spec::ti_dense(p);
        const long n = model->num_rows();
        std::vector<global_index> cols(model->max_row_length());
        std::vector<cplx> vals(model->max_row_length());
        for (long r = 0; r < n; ++r) {
            const int len = model->row(r, cols.data(), vals.data());
            ASSERT_LE(len, model->max_row_length());
            long nonzeros = 0;  // off-diagonal non-zeros of the reference row (t != 0 makes them structural)
            for (long c = 0; c < n; ++c) nonzeros += (c != r && want[size_t(r + c * n)] != cplx(0));
            ASSERT_EQ(len, nonzeros + 1) << "row " << r;
            bool has_diagonal = false;
            for (int k = 0; k < len; ++k) {
                if (k > 0) {
                    ASSERT_LT(cols[k - 1], cols[k]) << "row " << r;
                }
                has_diagonal = has_diagonal || cols[k] == r;
                if (cols[k] != r) {
                    ASSERT_NE(vals[k], cplx(0)) << "row " << r;
                }
            }
            ASSERT_TRUE(has_diagonal) << "row " << r;
        }
    }
}

TEST(TiModel, ThirteenEntriesPerBulkRowFewerAtOpenSurfaces)
{
    const ModelParams p = ti(4, 3, 5, "ppo");
    const auto model = hamiltonians::make_model(p);
    std::vector<global_index> cols(model->max_row_length());
    std::vector<cplx> vals(model->max_row_length());
    EXPECT_EQ(model->max_row_length(), 13);
    for (int z = 0; z < p.nz; ++z)
        for (int o = 0; o < 4; ++o) {
            // One z neighbour block (2 entries per row) is missing at either surface.
            const int expected = (z == 0 || z == p.nz - 1) ? 11 : 13;
            EXPECT_EQ(model->row(ti_row(p, 2, 1, z, o), cols.data(), vals.data()), expected) << z;
        }
    // A single layer has no z neighbours at all.
    const auto layer = hamiltonians::make_model(ti(3, 3, 1));
    EXPECT_EQ(layer->row(5, cols.data(), vals.data()), 9);
}

TEST(TiModel, EstimatedNonzerosEqualsCountedNonzeros)
{
    for (const std::string bc : {"ppo", "ppp", "opo", "poo", "ooo", "oop"})
        for (const auto& dims : std::vector<std::array<int, 3>>{{3, 3, 3}, {4, 5, 1}, {3, 4, 2}, {5, 3, 6}}) {
            ModelParams p = ti(dims[0], dims[1], dims[2], bc);
            if (bc[2] == 'p' && dims[2] < 3) continue;
            const auto model = hamiltonians::make_model(p);
            EXPECT_EQ(model->estimated_nonzeros(), model->num_nonzeros(0, model->num_rows()))
                << bc << " " << dims[0] << "x" << dims[1] << "x" << dims[2];
        }
    // Fully periodic: exactly 13 per row.
    const auto bulk = hamiltonians::make_model(ti(4, 4, 4, "ppp"));
    EXPECT_EQ(bulk->estimated_nonzeros(), 13 * bulk->num_rows());
}

/// E = +-sqrt((m - t sum cos k)^2 + t^2 sum sin^2 k), each twice degenerate, k_j = 2 pi n_j / N_j.
std::vector<double> ti_bulk_bands(int nx, int ny, int nz, double t, double m)
{
    const double pi = std::acos(-1.0);
    std::vector<double> e;
    for (int a = 0; a < nx; ++a)
        for (int b = 0; b < ny; ++b)
            for (int c = 0; c < nz; ++c) {
                const double k[3] = {2 * pi * a / nx, 2 * pi * b / ny, 2 * pi * c / nz};
                double cs = 0, s2 = 0;
                for (double kj : k) {
                    cs += std::cos(kj);
                    s2 += std::sin(kj) * std::sin(kj);
                }
                const double en = std::sqrt((m - t * cs) * (m - t * cs) + t * t * s2);
                e.insert(e.end(), {en, en, -en, -en});
            }
    std::sort(e.begin(), e.end());
    return e;
}

TEST(TiModel, CleanPeriodicBulkMatchesAnalyticBands)
{
    struct Case { int nx, ny, nz; double t, m; };
    for (const Case& c : {Case{4, 4, 4, 1.0, 2.0}, Case{3, 5, 4, 1.0, 2.0}, Case{4, 3, 3, 0.7, 1.1}, Case{3, 4, 5, -1.3, 2.9}}) {
        ModelParams p = ti(c.nx, c.ny, c.nz, "ppp");
        p.t = c.t;
        p.m = c.m;
        const auto model = hamiltonians::make_model(p);
        const std::vector<double> got = testing::dense_eigenvalues(*model);
        const std::vector<double> want = ti_bulk_bands(c.nx, c.ny, c.nz, c.t, c.m);
        ASSERT_EQ(got.size(), want.size());
        // zheev is backward stable: |E_computed - E| <= c(n) eps ||H||_2 with modest c(n)
        // (n <= 256 here, so c(n) eps < 1e-13); ||H||_2 <= |m| + 3|t|. Allow 1e-12 ||H||.
        const double tol = 1e-12 * (std::abs(c.m) + 3 * std::abs(c.t));
        for (size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], want[k], tol) << k;
    }
}

TEST(TiModel, DotPatternOddPeriodIsCentredOnASite)
{
    // P = 3, radius 1: dx, dy in {-1, 0, 1}; inside iff dx^2 + dy^2 <= 1: a plus shape.
    ModelParams p = ti(6, 3, 3);
    p.dot_period = 3;
    p.dot_radius = 1.0;
    p.dot_potential = 1.0;
    p.dot_depth = 2;
    const auto model = hamiltonians::make_model(p);
    const char* pattern[3] = {".#.", "###", ".#."};  // [x mod 3][y mod 3]
    for (int x = 0; x < p.nx; ++x)
        for (int y = 0; y < p.ny; ++y)
            for (int z = 0; z < p.nz; ++z)
                for (int o = 0; o < 4; ++o) {
                    const bool inside = pattern[x % 3][y % 3] == '#' && z < p.dot_depth;
                    EXPECT_EQ(model->potential(ti_row(p, x, y, z, o)), inside ? 1.0 : 0.0) << x << y << z << o;
                }
}

TEST(TiModel, DotPatternEvenPeriodIsCentredOnAPlaquette)
{
    // P = 4: dx, dy in {-1.5, -0.5, 0.5, 1.5}. Radius 1 keeps the central 2x2 plaquette
    // (0.5 < 1); radius 1.6 (2.56) adds the (1.5, 0.5) ring but not the corners (4.5).
    const char* small[4] = {"....", ".##.", ".##.", "...."};
    const char* large[4] = {".##.", "####", "####", ".##."};
    for (const auto& [radius, pattern] : {std::pair{1.0, small}, std::pair{1.6, large}}) {
        ModelParams p = ti(8, 4, 2);
        p.dot_period = 4;
        p.dot_radius = radius;
        p.dot_potential = 2.5;
        p.dot_depth = 1;
        const auto model = hamiltonians::make_model(p);
        for (int x = 0; x < p.nx; ++x)
            for (int y = 0; y < p.ny; ++y)
                for (int z = 0; z < p.nz; ++z) {
                    const bool inside = pattern[x % 4][y % 4] == '#' && z == 0;
                    EXPECT_EQ(model->potential(ti_row(p, x, y, z, 3)), inside ? 2.5 : 0.0) << radius << " " << x << y << z;
                }
    }
}

TEST(TiModel, DisorderPotentialIsTheCounterStreamOfTheSite)
{
    ModelParams p = ti(4, 6, 5);
    p.disorder = 2.7;
    p.disorder_seed = 12345;
    const std::uint64_t sd = testing::spec::splitmix(p.disorder_seed, 1);
    const auto model = hamiltonians::make_model(p);
    // Nothing else enters V: other t, m and boundary give the same potential.
    ModelParams q = p;
    q.t = -0.3;
    q.m = 0.1;
    q.boundary = "ooo";
    const auto other = hamiltonians::make_model(q);
    for (long r = 0; r < model->num_rows(); ++r) {
        const double want = p.disorder * (testing::spec::unif(sd, std::uint64_t(r / 4)) - 0.5);
        ASSERT_EQ(model->potential(r), want) << r;
        ASSERT_EQ(other->potential(r), want) << r;
    }
    // With dots the dot term comes first, then the disorder term is added.
    p.dot_period = 2;
    p.dot_radius = 0.8;
    p.dot_potential = 0.35;
    p.dot_depth = 3;
    const auto dotted = hamiltonians::make_model(p);
    for (int x = 0; x < p.nx; ++x)
        for (int y = 0; y < p.ny; ++y)
            for (int z = 0; z < p.nz; ++z)
                ASSERT_EQ(dotted->potential(ti_row(p, x, y, z, 1)), testing::spec::ti_potential(p, x, y, z));
}

TEST(TiModel, AttributesFollowTheResultSchema)
{
    ModelParams p = ti_dirty();
    p.boundary.clear();  // the default is filled in
    const auto model = hamiltonians::make_model(p);
    const AttributeList attrs = model->attributes();
    const std::vector<std::string> names = {"name", "Nx", "Ny", "Nz", "t", "m", "dot_potential", "dot_radius",
                                            "dot_period", "dot_depth", "disorder", "disorder_seed", "boundary"};
    ASSERT_EQ(attrs.size(), names.size());
    for (size_t k = 0; k < names.size(); ++k) EXPECT_EQ(attrs[k].name, names[k]);
    EXPECT_EQ(std::get<std::string>(attrs[0].value), "ti");
    EXPECT_EQ(std::get<std::int64_t>(attrs[1].value), 3);
    EXPECT_EQ(std::get<std::int64_t>(attrs[2].value), 6);
    EXPECT_EQ(std::get<std::int64_t>(attrs[3].value), 4);
    EXPECT_EQ(std::get<double>(attrs[4].value), 0.8);
    EXPECT_EQ(std::get<double>(attrs[5].value), 1.7);
    EXPECT_EQ(std::get<double>(attrs[6].value), -0.45);
    EXPECT_EQ(std::get<double>(attrs[7].value), 1.0);
    EXPECT_EQ(std::get<std::int64_t>(attrs[8].value), 3);
    EXPECT_EQ(std::get<std::int64_t>(attrs[9].value), 2);
    EXPECT_EQ(std::get<double>(attrs[10].value), 1.3);
    EXPECT_EQ(std::get<std::uint64_t>(attrs[11].value), 99u);
    EXPECT_EQ(std::get<std::string>(attrs[12].value), "ppo");
    EXPECT_EQ(model->params().boundary, "ppo");
    EXPECT_EQ(model->orbitals_per_site(), 4);
    EXPECT_EQ(model->num_rows(), 4 * 3 * 6 * 4);
}

}  // namespace
}  // namespace topokpm
