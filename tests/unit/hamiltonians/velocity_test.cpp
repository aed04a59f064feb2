// The velocity operators of models.md §9, (v_a)_ij = i (r_a,j - r_a,i) H_ij, checked against
// constructions of the test's own: on an open lattice (no wrapped bonds) v_a is the
// commutator i [H, R_a] of the dense matrices with the positions of models.md §2/§3; on a
// torus every entry's separation is the shortest image of the spec's positions (a
// nearest-neighbour bond: length 1) and v_a is Hermitian; a field's Peierls phases are
// carried. Plus the refusals of --conductivity and the area/volume of the supercell.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "hamiltonians/velocity.hpp"
#include "tests/support/dense_oracle.hpp"
#include "tests/support/input_error.hpp"
#include "tests/support/model_params.hpp"

namespace topokpm {
namespace {

using hamiltonians::MagneticFlux;
using hamiltonians::ModelParams;
using cplx = std::complex<double>;

ModelParams graphene(int nx, int ny, const std::string& boundary, MagneticFlux flux)
{
    ModelParams p = topokpm::testing::lattice_params("graphene", nx, ny, 1, boundary, flux);
    p.disorder = 0.9;
    p.disorder_seed = 5;
    return p;
}

ModelParams ti(int nx, int ny, int nz, const std::string& boundary, MagneticFlux flux)
{
    ModelParams p = topokpm::testing::lattice_params("ti", nx, ny, nz, boundary, flux);
    p.disorder = 0.9;
    return p;
}

/// Positions of models.md §3 (graphene: row s + 2 (n + Ny m) at m a1 + n a2 + s (0, 1)) and
/// §2/§9 (ti: row o + 4 (z + Nz (y + Ny x)) at (x, y, z)), written out from the spec.
std::array<double, 3> spec_position(const ModelParams& p, global_index row)
{
    if (p.name == "graphene") {
        const global_index s = row % 2, cell = row / 2, n = cell % p.ny, m = cell / p.ny;
        return {std::sqrt(3.0) * (double(m) + 0.5 * double(n)), 1.5 * double(n) + double(s), 0.0};
    }
    const global_index site = row / 4;
    return {double(site / (global_index(p.nz) * p.ny)), double((site / p.nz) % p.ny), double(site % p.nz)};
}

/// The shortest r_j - r_i + (kx Nx a1 + ky Ny a2 + kz Nz a3) over |k| <= 2 (periodic directions).
std::array<double, 3> shortest_image(const ModelParams& p, global_index i, global_index j)
{
    const bool g = p.name == "graphene";
    const std::array<double, 3> a1 = g ? std::array<double, 3>{std::sqrt(3.0), 0, 0} : std::array<double, 3>{1, 0, 0};
    const std::array<double, 3> a2 =
        g ? std::array<double, 3>{std::sqrt(3.0) / 2, 1.5, 0} : std::array<double, 3>{0, 1, 0};
    const std::array<double, 3> a3{0, 0, 1};
    const auto ri = spec_position(p, i), rj = spec_position(p, j);
    std::array<double, 3> best{};
    double best_len = 1e300;
    const int kz_max = !g && p.boundary[2] == 'p' ? 2 : 0;
    for (int kx = p.boundary[0] == 'p' ? -2 : 0; kx <= (p.boundary[0] == 'p' ? 2 : 0); ++kx)
        for (int ky = p.boundary[1] == 'p' ? -2 : 0; ky <= (p.boundary[1] == 'p' ? 2 : 0); ++ky)
            for (int kz = -kz_max; kz <= kz_max; ++kz) {
                std::array<double, 3> d{};
                for (int c = 0; c < 3; ++c)
                    d[c] = rj[c] - ri[c] + kx * p.nx * a1[c] + ky * p.ny * a2[c] + kz * p.nz * a3[c];
                const double len = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                if (len < best_len - 1e-9) {
                    best = d;
                    best_len = len;
                }
            }
    return best;
}

void expect_velocity_matches(const ModelParams& p)
{
    const auto model = hamiltonians::make_model(p);
    const global_index n = model->num_rows();
    const std::vector<cplx> h = testing::dense_matrix(*model);
    for (int axis = 0; axis < (p.name == "ti" ? 3 : 2); ++axis) {
        const hamiltonians::VelocityRows v(*model, axis);
        const std::vector<cplx> dv = testing::dense_matrix(v);
        double worst = 0.0;
        for (global_index j = 0; j < n; ++j)
            for (global_index i = 0; i < n; ++i) {
                const cplx hij = h[i + j * n];
                cplx expected = 0.0;
                if (i != j && hij != 0.0) {
                    const auto d = shortest_image(p, i, j);
                    EXPECT_NEAR(d[0] * d[0] + d[1] * d[1] + d[2] * d[2], 1.0, 1e-12) << "a nearest-neighbour bond";
                    expected = cplx(0.0, d[axis]) * hij;
                }
                worst = std::max(worst, std::abs(dv[i + j * n] - expected));
                // Hermitian: (v)_ji = conj((v)_ij), bit for bit (the model's H is).
                EXPECT_EQ(dv[j + i * n], std::conj(dv[i + j * n])) << i << "," << j;
            }
        EXPECT_LE(worst, 1e-13) << p.name << " " << p.boundary << " axis " << axis;
    }
}

}  // namespace

// Open boundaries: no bond wraps, so v_a = i [H, R_a] with R_a the diagonal of positions.
TEST(Velocity, OpenLatticeIsTheCommutatorWithPosition)
{
    for (const ModelParams& p : {graphene(4, 3, "oo", MagneticFlux{1, 7}), ti(3, 3, 2, "ooo", MagneticFlux{1, 5})}) {
        const auto model = hamiltonians::make_model(p);
        const global_index n = model->num_rows();
        const std::vector<cplx> h = testing::dense_matrix(*model);
        for (int axis = 0; axis < 2; ++axis) {
            const std::vector<cplx> v = testing::dense_matrix(hamiltonians::VelocityRows(*model, axis));
            for (global_index j = 0; j < n; ++j)
                for (global_index i = 0; i < n; ++i) {
                    const cplx commutator = h[i + j * n] * (spec_position(p, j)[axis] - spec_position(p, i)[axis]);
                    EXPECT_NEAR(std::abs(v[i + j * n] - cplx(0.0, 1.0) * commutator), 0.0, 1e-13) << i << "," << j;
                }
        }
    }
}

// Periodic boundaries: the minimum image, with the Peierls phases of a field; graphene at
// Nx = Ny = 2 (the smallest torus) too, and a ti bulk (z periodic) for the z velocity.
TEST(Velocity, PeriodicBondsTakeTheShortestImage)
{
    expect_velocity_matches(graphene(6, 6, "pp", MagneticFlux{1, 12}));
    expect_velocity_matches(graphene(2, 2, "pp", MagneticFlux{1, 4}));
    expect_velocity_matches(graphene(3, 4, "po", MagneticFlux{0, 1}));
    expect_velocity_matches(ti(3, 4, 2, "ppo", MagneticFlux{1, 12}));
    expect_velocity_matches(ti(3, 3, 3, "ppp", MagneticFlux{0, 1}));
}

// The area (or volume) the conductivity divides by, and what --conductivity refuses.
TEST(Velocity, ComponentsAndMeasure)
{
    const auto g = hamiltonians::make_model(graphene(6, 4, "pp", MagneticFlux{}));
    const auto m = hamiltonians::conductivity_measure(*g);
    EXPECT_EQ(m.name, "area");
    EXPECT_NEAR(m.value, 6 * 4 * 3 * std::sqrt(3.0) / 2, 1e-12);
    EXPECT_EQ((hamiltonians::parse_conductivity_component("xy", *g)), (std::array<int, 2>{0, 1}));
    EXPECT_NE(
        testing::input_error([&] { hamiltonians::parse_conductivity_component("zz", *g); }).find("xx, xy, yx, yy"),
        std::string::npos);
    EXPECT_NE(
        testing::input_error([&] { hamiltonians::parse_conductivity_component("x", *g); }).find("{conductivity} 'x'"),
        std::string::npos);
    const auto slab = hamiltonians::make_model(ti(3, 4, 5, "ppo", MagneticFlux{}));
    EXPECT_EQ(hamiltonians::conductivity_measure(*slab).name, "area");
    EXPECT_EQ(hamiltonians::conductivity_measure(*slab).value, 12.0);
    EXPECT_NE(testing::input_error([&] { hamiltonians::parse_conductivity_component("xz", *slab); }).find("open in z"),
              std::string::npos);
    const auto bulk = hamiltonians::make_model(ti(3, 4, 5, "ppp", MagneticFlux{}));
    EXPECT_EQ(hamiltonians::conductivity_measure(*bulk).name, "volume");
    EXPECT_EQ(hamiltonians::conductivity_measure(*bulk).value, 60.0);
    EXPECT_EQ((hamiltonians::parse_conductivity_component("zz", *bulk)), (std::array<int, 2>{2, 2}));
}

}  // namespace topokpm
