// Positions of the hr model (models.md §8): --cell-vectors read and checked, the orbital
// positions read from a Wannier90 _centres.xyz or a plain file (and every malformed file
// refused at its line without quoting it), make_model()'s rules for them, and what they
// give: graphene's and ti's own _hr.dat files (inputs/) with the built-ins' vectors and
// positions have the built-ins' geometry, velocity operators (entry for entry) and, in a
// magnetic field, the built-ins' Peierls phases (to rounding: the hr gauge takes real
// lattice coordinates) when the positions put the hr gauge origin (the Cartesian origin)
// on the built-in's; with open boundaries any origin is a gauge transformation and the
// spectrum is the built-in's. /model records the positions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "hamiltonians/file_models/hr_positions.hpp"
#include "hamiltonians/model.hpp"
#include "hamiltonians/velocity.hpp"
#include "runtime/base/error.hpp"
#include "tests/support/dense_oracle.hpp"
#include "tests/support/input_error.hpp"
#include "tests/support/scratch_path.hpp"
#include "tests/support/model_params.hpp"

namespace topokpm {
namespace {

using hamiltonians::MagneticFlux;
using hamiltonians::ModelParams;
using hamiltonians::file_models::OrbitalPositions;
using hamiltonians::file_models::parse_cell_vectors;
using hamiltonians::file_models::read_orbital_positions;
using hamiltonians::file_models::Vector3;
using testing::dense_eigenvalues;
using testing::input_error;
using cplx = std::complex<double>;

const std::string kInputs = std::string(TOPOKPM_SOURCE_DIR) + "/inputs/";

std::string write_file(const std::string& name, const std::string& text)
{
    const std::string path = testing::scratch_path("hr_positions", name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// graphene's vectors (models.md §3, carbon-carbon distance 1).
const Vector3 kA1{std::sqrt(3.0), 0.0, 0.0}, kA2{std::sqrt(3.0) / 2.0, 1.5, 0.0};

/// A plain positions file, one "x y z" per line, to 17 digits.
std::string positions_file(const std::string& name, const std::vector<Vector3>& r)
{
    std::string text;
    char line[96];
    for (const Vector3& v : r) {
        std::snprintf(line, sizeof line, "%.17g %.17g %.17g\n", v[0], v[1], v[2]);
        text += line;
    }
    return write_file(name, text);
}

/// Model graphene of models.md §3 and the same as --model hr from inputs/graphene_hr.dat
/// with its vectors and the positions A, B shifted by `shift`.
ModelParams graphene(int nx, int ny, const std::string& boundary, MagneticFlux flux)
{
    ModelParams p = topokpm::testing::lattice_params("graphene", nx, ny, 1, boundary, flux);
    p.disorder = 0.7;
    p.disorder_seed = 3;
    return p;
}

ModelParams graphene_hr(int nx, int ny, const std::string& boundary, MagneticFlux flux, const Vector3& shift)
{
    ModelParams p = graphene(nx, ny, boundary, flux);
    p.name = "hr";
    p.file = kInputs + "graphene_hr.dat";
    p.cell_vectors = {kA1, kA2};
    p.orbital_positions = positions_file("graphene_" + boundary + std::to_string(shift[0]),
                                         {shift, {shift[0], 1.0 + shift[1], shift[2]}});
    return p;
}

ModelParams ti(int nx, int ny, int nz, const std::string& boundary, MagneticFlux flux)
{
    return topokpm::testing::lattice_params("ti", nx, ny, nz, boundary, flux);
}

/// inputs/ti_hr.dat (clean: the built-in's disorder is per site) on a cubic lattice of
/// spacing 1, the 4 orbitals of a site at the site.
ModelParams ti_hr(int nx, int ny, int nz, const std::string& boundary, MagneticFlux flux)
{
    ModelParams p = ti(nx, ny, nz, boundary, flux);
    p.name = "hr";
    p.file = kInputs + "ti_hr.dat";
    p.cell_vectors = {{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}};
    p.orbital_positions = positions_file("ti", std::vector<Vector3>(4, Vector3{0.0, 0.0, 0.0}));
    return p;
}

std::map<std::pair<global_index, global_index>, cplx> entries(const RowSource& s)
{
    std::map<std::pair<global_index, global_index>, cplx> out;
    std::vector<global_index> cols(static_cast<size_t>(s.max_row_length()));
    std::vector<complex_type> vals(cols.size());
    for (global_index r = 0; r < s.num_rows(); ++r) {
        const int len = s.row(r, cols.data(), vals.data());
        for (int k = 0; k < len; ++k) out[{r, cols[static_cast<size_t>(k)]}] = vals[static_cast<size_t>(k)];
    }
    return out;
}

/// Largest |a - b| over the union of the stored entries (a missing entry counts as 0).
double max_difference(const RowSource& a, const RowSource& b)
{
    auto x = entries(a), y = entries(b);
    double d = 0.0;
    for (const auto& [k, v] : x) d = std::max(d, std::abs(v - (y.count(k) ? y.at(k) : cplx(0.0, 0.0))));
    for (const auto& [k, v] : y) d = std::max(d, std::abs(v - (x.count(k) ? x.at(k) : cplx(0.0, 0.0))));
    return d;
}

std::map<std::string, decltype(Attribute::value)> attributes(const hamiltonians::Model& m)
{
    std::map<std::string, decltype(Attribute::value)> out;
    for (const Attribute& a : m.attributes()) out[a.name] = a.value;
    return out;
}

}  // namespace

TEST(CellVectors, ReadsTwoOrThreeIndependentVectors)
{
    const auto three = parse_cell_vectors("2,0,0;0,3,0;0.5,0,4");
    ASSERT_EQ(three.size(), 3u);
    EXPECT_EQ(three[2], (Vector3{0.5, 0.0, 4.0}));
    const auto two = parse_cell_vectors("1.7320508075688772,0,0;0.8660254037844386,1.5,0");
    ASSERT_EQ(two.size(), 2u);
    EXPECT_EQ(two[0][0], std::sqrt(3.0));  // 17 digits read back exactly
    EXPECT_EQ(hamiltonians::file_models::vectors_text(two), "1.7320508075688772,0,0;0.8660254037844386,1.5,0");
    // Each refusal names the option, the value and the rule.
    const std::pair<const char*, const char*> bad[] = {
        {"1,0,0", "1 vectors"},
        {"1,0,0;0,1,0;0,0,1;1,1,1", "4 vectors"},
        {"1,0;0,1", "a1 has 2 coordinates"},
        {"1,0,0;0,x,0;0,0,1", "a2 coordinate 2 is not a finite number"},
        {"1,0,0;0,1,0;0,0,nan", "a3 coordinate 3 is not a finite number"},
        {"1,0,0;0,1,0;0,0,1e101", "a3 coordinate 3 is not a finite number within 1e100"},
        {"1,0,0;2,0,0", "not linearly independent"},
        {"1,0,0;0,1,0;1,1,0", "not linearly independent"},
        {"1,0,0;0,1,0;0,0,0", "not linearly independent"},
        {"1,0,0;0,1,1", "lie in the x-y plane"},
    };
    for (const auto& [text, why] : bad) {
        const std::string e = input_error([&] { parse_cell_vectors(text); });
        EXPECT_TRUE(contains(e, std::string("{cell_vectors} '")) && contains(e, why)) << text << ": " << e;
    }
    // Scale-free: tiny and huge cells are fine when independent.
    EXPECT_EQ(parse_cell_vectors("1e-90,0,0;0,1e-90,0").size(), 2u);
    EXPECT_EQ(parse_cell_vectors("1e99,0,0;0,1e99,0;0,0,1e99").size(), 3u);
}

TEST(OrbitalPositions, ReadsWannierCentresOrPlainLines)
{
    // Wannier90 SEED_centres.xyz: count (centres + atoms), comment, X lines first, then atoms.
    const std::string xyz = write_file("centres.xyz",
                                       "   4\n Wannier centres, written by Wannier90 on 1Jan2026 at 00:00:00\n"
                                       "X          0.50000000       0.25000000      -1.00000000\n"
                                       "X          1.00000000       2.00000000       3.00000000\n"
                                       "C          0.00000000       0.00000000       0.00000000\n"
                                       "C          1.00000000       0.00000000       0.00000000\n");
    const OrbitalPositions a = read_orbital_positions(xyz, 2);
    ASSERT_EQ(a.position.size(), 2u);
    EXPECT_EQ(a.position[0], (Vector3{0.5, 0.25, -1.0}));
    EXPECT_EQ(a.position[1], (Vector3{1.0, 2.0, 3.0}));
    EXPECT_EQ(a.file.path, xyz);
    EXPECT_EQ(a.file.sha256.size(), 64u);
    // The first num_wann X lines of more (a model built from some of the centres).
    EXPECT_EQ(read_orbital_positions(xyz, 1).position.size(), 1u);
    const OrbitalPositions b = read_orbital_positions(write_file("plain.txt", "0 0 0\n\n1.5 -2 1e-3\n"), 2);
    EXPECT_EQ(b.position[1], (Vector3{1.5, -2.0, 1e-3}));

    // Every refusal names the option, the path and the line or the counts; never the text.
    const std::string secret = "SECRET";
    const std::pair<std::string, const char*> bad[] = {
        {"0 0 0\n" + secret + " 1 2\n", "line 2: expected a position `x y z`"},
        {"0 0 0\n1 2\n", "line 2: expected a position"},
        {"0 0 0\n1 2 3 4\n", "line 2: expected a position"},
        {"0 0 0\n1 2 inf\n", "line 2: expected a position"},
        {"0 0 0\n", "1 positions found, the model has num_wann = 2"},
        {"0 0 0\n1 1 1\n2 2 2\n", "line 3: more positions than num_wann = 2"},
        {"", "0 positions found, the model has num_wann = 2"},
        {"1\n" + secret + "\nX 0 0 0\n", "line 1: the xyz count 1 is below num_wann = 2"},
        {"4\ncomment\nX 0 0 0\nC 1 1 1\nX 2 2 2\n", "3 entries, the count line announces 4"},
        {"3\ncomment\nX 0 0 0\nC 1 1 1\nC 2 2 2\n", "1 Wannier centres (X lines) found, the model has num_wann = 2"},
        {"2\ncomment\nX 0 0 0\nX 1 " + secret + " 1\n", "line 4: expected a Wannier centre `X x y z`"},
        {"2\ncomment\nX 0 0 0\nX 1 1 1\nX 2 2 2\n", "line 5: more than the 2 entries the count line announces"},
        {"2\n", "ends after the count line"},
    };
    int k = 0;
    for (const auto& [text, why] : bad) {
        const std::string path = write_file("bad" + std::to_string(k++), text);
        const std::string e = input_error([&] { read_orbital_positions(path, 2); });
        EXPECT_TRUE(contains(e, "{orbital_positions} " + path) && contains(e, why)) << e;
        EXPECT_FALSE(contains(e, secret)) << e;
    }
    EXPECT_TRUE(contains(input_error([&] { read_orbital_positions("/nonexistent/x.xyz", 2); }),
                         "{orbital_positions} /nonexistent/x.xyz: cannot open"));
}

TEST(HrPositions, MakeModelChecksThem)
{
    const MagneticFlux none{}, quarter{1, 4};
    ModelParams p = graphene_hr(4, 4, "pp", none, {0, 0, 0});
    // Positions without vectors; two vectors on a lattice with Nz > 1.
    ModelParams q = p;
    q.cell_vectors.clear();
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(q); }), "needs {cell_vectors}"));
    q = p;
    q.nz = 2;
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(q); }), "two vectors describe a 2-D model"));
    q = p;
    q.cell_vectors = {kA1, kA1};
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(q); }), "not linearly independent"));
    // Positions whose count is not num_wann.
    q = p;
    q.orbital_positions = positions_file("one", {{0, 0, 0}});
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(q); }), "1 positions found, the model has num_wann = 2"));
    // A field needs the positions, a1, a2 in the plane, a3 along z, an integer total flux.
    q = p;
    q.flux = quarter;
    q.orbital_positions.clear();
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(q); }), "need orbital positions"));
    q = ti_hr(4, 4, 2, "ppo", quarter);
    q.cell_vectors[2] = {0.5, 0.0, 1.0};
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(q); }), "a3 along z"));
    q = graphene_hr(3, 3, "pp", quarter, {0, 0, 0});
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(q); }), "the smallest admissible lattice is 3x4x1"))
        << input_error([&] { hamiltonians::make_model(q); });
    q = graphene_hr(3, 3, "op", quarter, {0, 0, 0});  // no torus: any flux
    EXPECT_NO_THROW(hamiltonians::make_model(q));
    // Matrix Market has no positions.
    ModelParams mm;
    mm.name = "matrix-market";
    mm.file = kInputs + "graphene_hr.dat";
    mm.cell_vectors = {kA1, kA2};
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(mm); }), "model matrix-market has no lattice"));
    // The vectors alone are accepted (no geometry: velocities need the positions).
    q = p;
    q.orbital_positions.clear();
    EXPECT_FALSE(hamiltonians::make_model(q)->geometry().has_value());
}

// Graphene's own file with graphene's vectors and positions: the built-in's geometry, so the
// velocity operators agree entry for entry (every boundary, both axes), and the same area.
TEST(HrPositions, GrapheneFileHasGraphenesVelocities)
{
    for (const char* b : {"pp", "po", "op", "oo"}) {
        const auto built_in = hamiltonians::make_model(graphene(4, 3, b, {}));
        const auto hr = hamiltonians::make_model(graphene_hr(4, 3, b, {}, {0, 0, 0}));
        const auto g = hr->geometry();
        ASSERT_TRUE(g.has_value());
        EXPECT_EQ(g->dimensions, 2);
        EXPECT_FALSE(g->periodic[2]);
        EXPECT_EQ(g->area(), built_in->geometry()->area());
        EXPECT_EQ(hamiltonians::conductivity_measure(*hr).name, "area");
        for (hamiltonians::Axis a : {0, 1}) {
            const hamiltonians::VelocityRows v_hr(*hr, a), v_built_in(*built_in, a);
            EXPECT_EQ(entries(v_hr), entries(v_built_in)) << b << " axis " << a;
        }
        EXPECT_TRUE(contains(input_error([&] { hamiltonians::parse_conductivity_component("zz", *hr); }),
                             "two-dimensional"));
    }
}

// ti's own file on the cubic lattice of spacing 1: ti's velocities along x, y, z, the
// volume of the bulk and the area of the slab.
TEST(HrPositions, TiFileHasTisVelocities)
{
    for (const char* b : {"ppp", "ppo", "opo"}) {
        const auto built_in = hamiltonians::make_model(ti(3, 4, 3, b, {}));
        const auto hr = hamiltonians::make_model(ti_hr(3, 4, 3, b, {}));
        EXPECT_EQ(hamiltonians::conductivity_measure(*hr).name, hamiltonians::conductivity_measure(*built_in).name);
        EXPECT_EQ(hamiltonians::conductivity_measure(*hr).value, hamiltonians::conductivity_measure(*built_in).value);
        for (hamiltonians::Axis a : {0, 1, 2}) {
            const hamiltonians::VelocityRows v_hr(*hr, a), v_built_in(*built_in, a);
            EXPECT_EQ(entries(v_hr), entries(v_built_in)) << b << " axis " << a;
        }
    }
}

// In a field: the Peierls phases of the built-ins. ti's sites are its gauge origin's grid
// (integer lattice coordinates: the same integer path, entry for entry); graphene's
// positions shifted by (a1 + a2)/6 put the hr origin on graphene's r0 = -(a1 + a2)/6 from
// A(0, 0), and the real lattice coordinates 1/6, 5/6 give the phases to rounding.
TEST(HrPositions, FieldGivesTheBuiltInsPhases)
{
    for (const MagneticFlux& f : {MagneticFlux{1, 4}, MagneticFlux{-3, 8}, MagneticFlux{1, 1}}) {
        for (const char* b : {"ppo", "ppp", "opo"}) {
            const auto built_in = hamiltonians::make_model(ti(4, 4, 3, b, f));
            const auto hr = hamiltonians::make_model(ti_hr(4, 4, 3, b, f));
            EXPECT_FALSE(hr->real_valued());
            EXPECT_FALSE(hr->offers_block_stencil());
            EXPECT_EQ(max_difference(*hr, *built_in), 0.0) << "ti " << b << " " << f.text();
        }
        const Vector3 r0{(kA1[0] + kA2[0]) / 6.0, (kA1[1] + kA2[1]) / 6.0, 0.0};
        for (const char* b : {"pp", "po", "op", "oo"}) {
            const auto built_in = hamiltonians::make_model(graphene(4, 8, b, f));
            const auto hr = hamiltonians::make_model(graphene_hr(4, 8, b, f, r0));
            // Entries of magnitude t = 1 and the disorder's; phases of lattice coordinates of
            // at most ~Ny, in turns PHI x (terms < 2 Ny): rounding ~1e-16 x 16 per term.
            EXPECT_LT(max_difference(*hr, *built_in), 1e-13) << "graphene " << b << " " << f.text();
            if (f.denominator > 1) {  // a field at all (an integer PHI is a gauge transformation of none)
                EXPECT_GT(max_difference(*hr, *hamiltonians::make_model(graphene(4, 8, b, {}))), 0.1);
            }
        }
    }
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(ti_hr(4, 4, 3, "ppo", {1, 4}))->block_stencil(); }),
                         "{matrix} free with {magnetic_flux} 1/4"));
}

// Off the built-ins' grids (positions anywhere, a complex file with second neighbours and
// a non-orthogonal cell) the matrix in a field is Hermitian exactly, on a torus and open.
TEST(HrPositions, FieldKeepsTheMatrixHermitian)
{
    for (const char* b : {"pp", "op", "oo"}) {
        ModelParams p = graphene_hr(4, 6, b, {5, 12}, {0.3, -1.7, 0.25});
        p.cell_vectors = {{1.1, 0.2, 0.0}, {-0.4, 0.9, 0.0}};
        const auto m = hamiltonians::make_model(p);
        const auto e = entries(*m);
        int complex_entries = 0;
        for (const auto& [k, v] : e) {
            ASSERT_TRUE(e.count({k.second, k.first})) << k.first << " " << k.second;
            EXPECT_EQ(e.at({k.second, k.first}), std::conj(v)) << b << " " << k.first << " " << k.second;
            complex_entries += v.imag() != 0.0;
        }
        EXPECT_GT(complex_entries, 0) << b;
    }
}

// With both directions open a different gauge origin is a gauge transformation: graphene's
// positions as §3 writes them (A at the origin) give the built-in's spectrum; and the
// spectrum does not depend on a shift of all positions.
TEST(HrPositions, OpenLatticeSpectrumDoesNotDependOnTheOrigin)
{
    const MagneticFlux f{2, 7};
    const std::vector<double> want = dense_eigenvalues(*hamiltonians::make_model(graphene(5, 4, "oo", f)));
    for (const Vector3& shift : {Vector3{0, 0, 0}, Vector3{0.3, -1.7, 0.25}}) {
        const std::vector<double> got = dense_eigenvalues(*hamiltonians::make_model(graphene_hr(5, 4, "oo", f, shift)));
        ASSERT_EQ(got.size(), want.size());
        double d = 0.0;
        for (std::size_t i = 0; i < got.size(); ++i) d = std::max(d, std::abs(got[i] - want[i]));
        // zheev on a 40 x 40 matrix of norm ~3.5: backward error ~ N eps ||H||.
        EXPECT_LT(d, 1e-12) << shift[0];
    }
}

// Dots (models.md §8): ti's own file on its cubic lattice with ti's dots on every layer
// (dot_depth = Nz) gives ti's rows entry for entry.
TEST(HrDots, TiFileHasTisDots)
{
    for (const int period : {2, 3, 4})
        for (const double radius : {0.0, 0.7, 1.0, 1.5, 2.3})
            for (const char* b : {"ppo", "ppp"}) {
                ModelParams t = ti(12, 12, 3, b, {});
                t.dot_period = period;
                t.dot_radius = radius;
                t.dot_potential = 0.8;
                t.dot_depth = 3;
                ModelParams h = ti_hr(12, 12, 3, b, {});
                h.dot_period = period;
                h.dot_radius = radius;
                h.dot_potential = 0.8;
                const auto hr = hamiltonians::make_model(h);
                EXPECT_EQ(entries(*hr), entries(*hamiltonians::make_model(t))) << period << " " << radius << " " << b;
            }
}

// On any cell (graphene's, and a strongly skewed one) an orbital is inside when its distance
// in the plane to the nearest superlattice centre (P - 1)/2 (a1 + a2) + mean position
// + i P a1 + j P a2, over every i, j near the sample, is below the radius: brute force here.
TEST(HrDots, NearestCentreOnAnyCell)
{
    struct Cell {
        Vector3 a1, a2, shift;
    };
    for (const Cell& c : {Cell{kA1, kA2, {0.0, 0.0, 0.0}}, Cell{{1.0, 0.0, 0.0}, {3.2, 0.5, 0.0}, {0.4, -0.3, 0.7}}}) {
        // Radii as fractions of the supercell's size sqrt(P^2 |a1 x a2|): few, some, most inside.
        const double size = 3.0 * std::sqrt(std::abs(c.a1[0] * c.a2[1] - c.a1[1] * c.a2[0]));
        for (const double radius : {0.2 * size, 0.35 * size, 0.5 * size}) {
            ModelParams p = graphene_hr(6, 9, "pp", {}, c.shift);
            p.disorder = 0.0;
            p.cell_vectors = {c.a1, c.a2};
            p.dot_period = 3;
            p.dot_radius = radius;
            p.dot_potential = 1.0;
            const auto m = hamiltonians::make_model(p);
            const Vector3 pos[2] = {c.shift, {c.shift[0], 1.0 + c.shift[1], 0.0}};
            const double mean[2] = {pos[0][0] / 2 + pos[1][0] / 2, pos[0][1] / 2 + pos[1][1] / 2};
            int inside = 0;
            for (global_index row = 0; row < m->num_rows(); ++row) {
                const int o = static_cast<int>(row % 2), c1 = static_cast<int>(row / 2 / 9), c2 = static_cast<int>(row / 2 % 9);
                const double x = c1 * c.a1[0] + c2 * c.a2[0] + pos[o][0], y = c1 * c.a1[1] + c2 * c.a2[1] + pos[o][1];
                double nearest = 1e300;
                for (int i = -12; i <= 12; ++i)
                    for (int j = -12; j <= 12; ++j) {
                        const double u = 3 * i + 1.0, v = 3 * j + 1.0;  // (P - 1)/2 = 1
                        const double cx = u * c.a1[0] + v * c.a2[0] + mean[0], cy = u * c.a1[1] + v * c.a2[1] + mean[1];
                        nearest = std::min(nearest, (x - cx) * (x - cx) + (y - cy) * (y - cy));
                    }
                // Away from the edge by more than rounding (the model's own test is exact there).
                if (std::abs(nearest - radius * radius) < 1e-6) continue;
                const bool want = nearest < radius * radius;
                EXPECT_EQ(m->potential(row), want ? 1.0 : 0.0) << "row " << row << " radius " << radius;
                inside += want;
            }
            EXPECT_GT(inside, 0);
            EXPECT_LT(inside, m->num_rows());
        }
    }
}

TEST(HrDots, MakeModelChecksThem)
{
    ModelParams p = graphene_hr(6, 6, "pp", {}, {0, 0, 0});
    p.dot_period = 3;
    p.dot_radius = 1.0;
    ModelParams q = p;
    q.orbital_positions.clear();
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(q); }), "{dot_period} 3: dots on model hr need orbital positions"));
    q = p;
    q.nx = 4;
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(q); }), "Nx = 4 is not a multiple of {dot_period} 3"));
    q = p;
    q.dot_radius = -1.0;
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(q); }), "{dot_radius} -1"));
    q = ti_hr(6, 6, 2, "ppo", {});
    q.dot_period = 3;
    q.cell_vectors = {{1.0, 0.0, 0.5}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}};
    EXPECT_TRUE(contains(input_error([&] { hamiltonians::make_model(q); }), "needs a1, a2 in that plane"));
    const auto a = attributes(*hamiltonians::make_model(p));
    EXPECT_EQ(std::get<std::int64_t>(a.at("dot_period")), 3);
    EXPECT_EQ(std::get<double>(a.at("dot_radius")), 1.0);
}

TEST(HrPositions, ModelRecordsThem)
{
    const ModelParams p = graphene_hr(4, 4, "pp", {1, 4}, {0, 0, 0});
    const auto m = hamiltonians::make_model(p);
    const auto a = attributes(*m);
    EXPECT_EQ(std::get<std::string>(a.at("cell_vectors")), "1.7320508075688772,0,0;0.8660254037844386,1.5,0");
    EXPECT_EQ(std::get<std::string>(a.at("orbital_positions")), "0,0,0;0,1,0");
    EXPECT_EQ(std::get<std::string>(a.at("orbital_positions_file")), p.orbital_positions);
    EXPECT_EQ(std::get<std::string>(a.at("orbital_positions_sha256")).size(), 64u);
    EXPECT_EQ(std::get<std::uint64_t>(a.at("orbital_positions_size")), 12u);
    EXPECT_EQ(std::get<std::string>(a.at("magnetic_flux_fraction")), "1/4");
    EXPECT_TRUE(contains(std::get<std::string>(a.at("gauge")), "r0 = 0, the origin of the Cartesian frame"));
    // Without positions: none of them.
    ModelParams q = p;
    q.flux = {};
    q.cell_vectors.clear();
    q.orbital_positions.clear();
    const auto b = attributes(*hamiltonians::make_model(q));
    EXPECT_EQ(b.count("cell_vectors") + b.count("orbital_positions") + b.count("gauge"), 0u);
}

}  // namespace topokpm
