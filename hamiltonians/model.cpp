#include "hamiltonians/model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hamiltonians/file_models/hr_model.hpp"
#include "hamiltonians/file_models/hr_positions.hpp"
#include "hamiltonians/file_models/matrix_market_model.hpp"
#include "hamiltonians/graphene/graphene_model.hpp"
#include "hamiltonians/ti/ti_model.hpp"
#include "numerics/base/energy_limits.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::hamiltonians {

namespace {

/// The lattice as the user typed it: NxxNyxNz (ti) or NxxNy (graphene).
std::string lattice_text(const ModelParams& p, bool three_d)
{
    return three_d ? detail::concat(p.nx, "x", p.ny, "x", p.nz) : detail::concat(p.nx, "x", p.ny);
}

void require_finite(const char* option, double value, const char* allowed)
{
    TOPOKPM_USER_REQUIRE(std::isfinite(value), option, " ", value, ": not a finite number (allowed: ", allowed, ")");
}

/// A finite energy of magnitude <= kMaxEnergy (numerics/base/energy_limits.hpp: beyond it the
/// entries' sums and norms overflow).
void require_energy(const char* option, double value, const char* allowed)
{
    require_finite(option, value, allowed);
    TOPOKPM_USER_REQUIRE(std::abs(value) <= kMaxEnergy, option, " ", value, ": out of range (allowed: ", allowed, ")");
}

void require_disorder(double disorder)
{
    require_energy("{disorder}", disorder, "finite, >= 0 and <= 1e+100");
    TOPOKPM_USER_REQUIRE(disorder >= 0.0, "{disorder} ", disorder, ": out of range (allowed: finite, >= 0 and <= 1e+100)");
}

/// models.md §9: on a torus (x and y periodic) the total flux Nx Ny PHI must be an integer for
/// the gauge to be single-valued; otherwise one message names the smallest lattice that
/// admits PHI (keeping Nz and the dot period). With an open direction any PHI is admissible.
void require_admissible_flux(const ModelParams& p, bool three_d)
{
    const MagneticFlux& f = p.flux;
    if (f.zero() || p.boundary[0] != 'p' || p.boundary[1] != 'p') return;
    const global_index cells = global_index(p.nx) * p.ny;
    if (cells % f.denominator == 0) return;  // q | Nx Ny (p and q coprime)
    const LatticeSize s = smallest_admissible_lattice(f, p.nx, p.ny, std::max(1, p.dot_period));
    const std::string smallest = three_d ? detail::concat(s.nx, "x", s.ny, "x", p.nz) : detail::concat(s.nx, "x", s.ny);
    throw InputError(detail::concat(
        "{magnetic_flux} ", f.text(), " on {lattice} ", lattice_text(p, three_d), ": the total flux Nx Ny PHI = ", p.nx,
        " x ", p.ny, " x ", f.text(), " through the periodic x-y supercell is not an integer (allowed: Nx Ny a multiple of ",
        f.denominator, p.dot_period > 0 ? ", Nx and Ny multiples of {dot_period}" : "",
        "); the smallest admissible lattice is ", smallest));
}

/// The dot superlattice's radius and period (models.md §2/§3/§8; the potential is an energy,
/// checked with the others): radius finite >= 0, period >= 0 dividing Nx and Ny.
void require_dots(const ModelParams& p, bool three_d)
{
    require_finite("{dot_radius}", p.dot_radius, "finite, >= 0");
    TOPOKPM_USER_REQUIRE(p.dot_radius >= 0.0, "{dot_radius} ", p.dot_radius, ": out of range (allowed: finite, >= 0)");
    TOPOKPM_USER_REQUIRE(p.dot_period >= 0, "{dot_period} ", p.dot_period,
                         ": out of range (allowed: >= 0; 0 = no dots; must divide Nx and Ny)");
    if (p.dot_period == 0) return;
    const char* axis[2] = {"Nx", "Ny"};
    const int extent[2] = {p.nx, p.ny};
    for (int d = 0; d < 2; ++d)
        TOPOKPM_USER_REQUIRE(extent[d] % p.dot_period == 0, "{lattice} ", lattice_text(p, three_d), ": ", axis[d], " = ",
                             extent[d], " is not a multiple of {dot_period} ", p.dot_period);
}

/// The checks of models.md §8 for the models read from a file (the files themselves are
/// checked by their readers): hr gets a 3-letter boundary ("ppp" by default, 1 or 2 letters
/// padded with 'p'), its positions (--cell-vectors, --orbital-positions) are what the field
/// and the dots need; matrix-market has no lattice, boundary, positions, disorder, field or dots.
ModelParams validate_file_model(ModelParams p)
{
    TOPOKPM_USER_REQUIRE(!p.file.empty(), "{model} ", p.name, " reads its Hamiltonian from {model_file} FILE (none given)");
    const bool lattice = p.name != "matrix-market";  // the factory's own dispatch (make_model)
    TOPOKPM_USER_REQUIRE(p.exchange_mass == 0.0, "{exchange_mass} ", p.exchange_mass, ": model ", p.name,
                         " takes its on-site terms from {model_file} (allowed: 0; model ti with z open)");
    if (!lattice) {
        TOPOKPM_USER_REQUIRE(p.flux.zero(), "{magnetic_flux} ", p.flux.text(),
                             ": the Peierls phases on model matrix-market need a lattice, which a Matrix Market file "
                             "does not have");
        TOPOKPM_USER_REQUIRE(p.dot_period == 0, "{dot_period} ", p.dot_period,
                             ": dots on model matrix-market need a lattice, which a Matrix Market file does not have");
        TOPOKPM_USER_REQUIRE(p.cell_vectors.empty() && p.orbital_positions.empty(),
                             "{cell_vectors}/{orbital_positions}: model matrix-market has no lattice (positions go "
                             "with --model hr)");
        TOPOKPM_USER_REQUIRE(p.nx == 0 && p.boundary.empty(), "{lattice}/{boundary}: model matrix-market has no lattice "
                             "(its size is the file's N)");
        TOPOKPM_USER_REQUIRE(p.disorder == 0.0, "{disorder} ", p.disorder,
                             ": model matrix-market takes its diagonal from the file (allowed: 0)");
        return p;
    }
    const char* axis[3] = {"Nx", "Ny", "Nz"};
    const int extent[3] = {p.nx, p.ny, p.nz};
    for (int d = 0; d < 3; ++d)
        TOPOKPM_USER_REQUIRE(extent[d] >= 1, "{lattice} ", lattice_text(p, true), ": ", axis[d], " = ", extent[d],
                             " out of range (allowed: >= 1)");
    if (p.boundary.empty()) p.boundary = "ppp";
    bool letters_ok = !p.boundary.empty() && p.boundary.size() <= 3;
    for (char c : p.boundary) letters_ok = letters_ok && (c == 'p' || c == 'o');
    TOPOKPM_USER_REQUIRE(letters_ok, "{boundary} '", p.boundary,
                         "': model hr needs 1 to 3 letters (c1, c2, c3), each 'p' (periodic) or 'o' (open), e.g. ppo");
    p.boundary.resize(3, 'p');
    require_disorder(p.disorder);

    // Positions (models.md §8): the cell vectors alone, or with the orbitals' positions.
    const bool vectors = !p.cell_vectors.empty(), positions = !p.orbital_positions.empty();
    if (vectors) {
        file_models::check_cell_vectors(p.cell_vectors);
        TOPOKPM_USER_REQUIRE(p.cell_vectors.size() == 3 || p.nz == 1, "{cell_vectors} '",
                             file_models::vectors_text(p.cell_vectors), "' on {lattice} ", lattice_text(p, true),
                             ": two vectors describe a 2-D model (allowed: Nz = 1, or three vectors a1;a2;a3)");
    }
    TOPOKPM_USER_REQUIRE(vectors || !positions, "{orbital_positions} ", p.orbital_positions,
                         ": the positions are offsets within the cell, which needs {cell_vectors} \"a1;a2;a3\" too");
    TOPOKPM_USER_REQUIRE(p.flux.zero() || positions, "{magnetic_flux} ", p.flux.text(),
                         ": the Peierls phases on model hr need orbital positions (give {cell_vectors} and "
                         "{orbital_positions})");
    if (!p.flux.zero()) {
        // The field is along z, perpendicular to the plane of a1, a2; the gauge is single-
        // valued across a periodic z only when a3 has no component in that plane.
        const auto& a = p.cell_vectors;
        TOPOKPM_USER_REQUIRE(a[0][2] == 0.0 && a[1][2] == 0.0 && (a.size() == 2 || (a[2][0] == 0.0 && a[2][1] == 0.0)),
                             "{magnetic_flux} ", p.flux.text(), " with {cell_vectors} '", file_models::vectors_text(a),
                             "': the field is along z, which needs a1, a2 in the x-y plane (z = 0) and a3 along z "
                             "(x = y = 0)");
        require_admissible_flux(p, true);
    }
    // Dots (models.md §8): on the orbitals whose position lies inside one, by the distance
    // in the x-y plane, so a1, a2 span that plane.
    require_energy("{dot_potential}", p.dot_potential, "finite, -1e+100 .. 1e+100");
    require_dots(p, true);
    if (p.dot_period > 0) {
        TOPOKPM_USER_REQUIRE(positions, "{dot_period} ", p.dot_period,
                             ": dots on model hr need orbital positions (give {cell_vectors} and {orbital_positions})");
        const auto& a = p.cell_vectors;
        TOPOKPM_USER_REQUIRE(a[0][2] == 0.0 && a[1][2] == 0.0, "{dot_period} ", p.dot_period, " with {cell_vectors} '",
                             file_models::vectors_text(a),
                             "': the dots are discs in the x-y plane, which needs a1, a2 in that plane (z = 0)");
    }
    return p;
}

/// Every check of models.md §2/§3 that make_model() promises; returns the parameters with
/// the default boundary filled in. Models trust what comes out of here.
ModelParams validate(ModelParams p)
{
    TOPOKPM_USER_REQUIRE(p.name == "ti" || p.name == "graphene" || reads_model_file(p.name), "{model} '", p.name,
                         "': unknown model (allowed: ti, graphene, hr, matrix-market)");
    if (reads_model_file(p.name)) return validate_file_model(p);
    const bool ti = p.name == "ti";
    const int dims = ti ? 3 : 2;
    const char* axis[3] = {"Nx", "Ny", "Nz"};
    const int extent[3] = {p.nx, p.ny, p.nz};

    // Lattice extents.
    for (int d = 0; d < dims; ++d)
        TOPOKPM_USER_REQUIRE(extent[d] >= 1, "{lattice} ", lattice_text(p, ti), ": ", axis[d], " = ", extent[d],
                             " out of range (allowed: >= 1)");
    TOPOKPM_USER_REQUIRE(ti || p.nz == 1, "{lattice}: model graphene is two-dimensional (NxxNy cells), got Nz = ",
                         p.nz, " (allowed: 1)");

    // Boundary conditions: one letter per direction; periodic directions need enough
    // sites that the two neighbours of a site are distinct (no duplicate columns).
    if (p.boundary.empty()) p.boundary = ti ? "ppo" : "pp";
    bool letters_ok = static_cast<int>(p.boundary.size()) == dims;
    for (char c : p.boundary) letters_ok = letters_ok && (c == 'p' || c == 'o');
    TOPOKPM_USER_REQUIRE(letters_ok, "{boundary} '", p.boundary, "': model ", p.name, " needs ", dims,
                         " letters (", ti ? "x, y, z" : "a1, a2", "), each 'p' (periodic) or 'o' (open), e.g. ",
                         ti ? "ppo" : "pp");
    const int min_periodic = ti ? 3 : 2;
    for (int d = 0; d < dims; ++d)
        TOPOKPM_USER_REQUIRE(p.boundary[d] == 'o' || extent[d] >= min_periodic, "{lattice} ", lattice_text(p, ti),
                             " with {boundary} ", p.boundary, ": ", axis[d], " = ", extent[d],
                             " is too small for a periodic direction (allowed: >= ", min_periodic,
                             ", or 'o' for that direction)");

    // Total size: rows are 64-bit global indices.
    const global_index orbitals = ti ? 4 : 2;
    const global_index sites_xy = global_index(p.nx) * p.ny;
    TOPOKPM_USER_REQUIRE(sites_xy <= std::numeric_limits<global_index>::max() / p.nz / orbitals, "{lattice} ",
                         lattice_text(p, ti), ": ", orbitals, " x Nx x Ny", ti ? " x Nz" : "",
                         " rows overflow a 64-bit index (allowed: < 2^63 rows)");

    // Energies.
    require_energy("{t}", p.t, "finite, non-zero, 1e-100 <= |t| <= 1e+100; t is the energy unit");
    TOPOKPM_USER_REQUIRE(std::abs(p.t) >= kMinEnergyScale, "{t} ", p.t,
                         ": out of range (allowed: finite, non-zero, 1e-100 <= |t| <= 1e+100; t is the energy unit)");
    if (ti) require_energy("{m}", p.m, "finite, -1e+100 .. 1e+100");
    require_energy("{dot_potential}", p.dot_potential, "finite, -1e+100 .. 1e+100");
    require_disorder(p.disorder);

    require_dots(p, ti);
    if (ti)
        TOPOKPM_USER_REQUIRE(p.dot_depth >= 0 && p.dot_depth <= p.nz, "{dot_depth} ", p.dot_depth,
                             ": out of range (allowed: 0 .. Nz = ", p.nz, ")");
    require_energy("{exchange_mass}", p.exchange_mass, "finite, -1e+100 .. 1e+100");
    TOPOKPM_USER_REQUIRE(p.exchange_mass == 0.0 || (ti && p.boundary[2] == 'o'), "{exchange_mass} ", p.exchange_mass,
                         ": the exchange mass sits on the surfaces of a slab open in z, ",
                         ti ? "and {boundary} " + p.boundary + " has none (allowed: 0, or z open: e.g. {boundary} ppo)"
                            : "and model " + p.name + " has none (allowed: 0; model ti with z open)");
    require_admissible_flux(p, ti);
    return p;
}

}  // namespace

namespace {

/// Row -> (x, y, z, orbital) of the canonical order.
std::array<global_index, 4> lattice_coordinates(const LatticeGeometry& g, global_index row)
{
    const global_index b = static_cast<global_index>(g.offset.size());
    const global_index site = row / b;
    return {site / (global_index(g.extent[2]) * g.extent[1]), (site / g.extent[2]) % g.extent[1], site % g.extent[2],
            row % b};
}

}  // namespace

LatticeGeometry::Vector LatticeGeometry::separation(global_index i, global_index j) const
{
    // In whole cells first (exact integers), so that a bond across the boundary of a large
    // supercell does not lose digits to the difference of two large positions.
    const std::array<global_index, 4> ci = lattice_coordinates(*this, i), cj = lattice_coordinates(*this, j);
    const Vector& oi = offset[static_cast<std::size_t>(ci[3])];
    const Vector& oj = offset[static_cast<std::size_t>(cj[3])];
    auto vector = [&](const global_index(&cells)[3]) {
        Vector d{};
        for (int k = 0; k < 3; ++k) d[k] = oj[k] - oi[k];
        for (int a = 0; a < 3; ++a)
            for (int k = 0; k < 3; ++k) d[k] += static_cast<double>(cells[a]) * cell[a][k];
        return d;
    };
    // Images in the order 0, -1, +1 per periodic direction; a later one wins only when it is
    // shorter beyond rounding, so a tie keeps the earlier (models.md §9: minimum image).
    static constexpr int kOrder[3] = {0, -1, 1};
    Vector best{};
    double best_len = -1.0;
    for (const int kx : kOrder)
        for (const int ky : kOrder)
            for (const int kz : kOrder) {
                const int k[3] = {kx, ky, kz};
                bool allowed = true;
                for (int a = 0; a < 3; ++a) allowed = allowed && (k[a] == 0 || periodic[a]);
                if (!allowed) continue;
                global_index cells[3];
                for (int a = 0; a < 3; ++a) cells[a] = cj[a] - ci[a] + global_index(k[a]) * extent[a];
                const Vector e = vector(cells);
                const double len = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
                if (best_len < 0.0 || len < best_len * (1.0 - 1e-12)) {
                    best = e;
                    best_len = len;
                }
            }
    return best;
}

double LatticeGeometry::area() const
{
    const Vector& a = cell[0];
    const Vector& b = cell[1];
    const double cx = a[1] * b[2] - a[2] * b[1], cy = a[2] * b[0] - a[0] * b[2], cz = a[0] * b[1] - a[1] * b[0];
    return std::sqrt(cx * cx + cy * cy + cz * cz) * extent[0] * extent[1];
}

double LatticeGeometry::volume() const
{
    const Vector& c = cell[2];
    return area() * extent[2] * std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
}

numerics::OperatorSource operator_source(const Model& model)
{
    numerics::OperatorSource s;
    s.rows = &model;
    s.stencil = [&model] { return model.block_stencil(); };
    const ModelParams& p = model.params();
    s.lattice = numerics::LatticeRowOrder{p.nx, p.ny, model.orbitals_per_site() * p.nz};
    s.estimated_nonzeros = static_cast<double>(model.estimated_nonzeros());
    s.potential_per_row = model.potential_entries_per_row();
    return s;
}

const std::vector<ModelKind>& model_kinds()
{
    static const std::vector<ModelKind> kinds = [] {
        const auto kind = [](const char* name, bool reads_file, int min_extents, int max_extents, const char* form,
                             int site_coordinates) {
            ModelKind k;
            k.name = name;
            k.reads_file = reads_file;
            k.min_extents = min_extents;
            k.max_extents = max_extents;
            k.lattice_form = form;
            k.site_coordinates = site_coordinates;
            return k;
        };
        ModelKind ti = kind("ti", false, 3, 3, "NxxNyxNz (e.g. 64x64x16)", 3);
        ti.zone_points = "G, X, Y, M";
        ti.lu_site_blocks = true;
        ti.eigenvector_parts = EigenvectorParts::Layers;
        ModelKind graphene = kind("graphene", false, 2, 2, "NxxNy (e.g. 120x120)", 2);
        graphene.zone_points = "G, K, M";
        graphene.eigenvector_parts = EigenvectorParts::Sublattices;
        ModelKind hr = kind("hr", true, 1, 3, "Nx[xNy[xNz]] cells (e.g. 32x32x4)", 3);
        hr.takes_positions = true;
        hr.zone_points = "G, X, Y, M";  // the zone's centre and edge midpoints, in b1, b2 (any cell)
        return std::vector<ModelKind>{ti, graphene, hr, kind("matrix-market", true, 0, 0, "", 0)};
    }();
    return kinds;
}

const ModelKind* find_model_kind(const std::string& name)
{
    for (const ModelKind& k : model_kinds())
        if (k.name == name) return &k;
    return nullptr;
}

const ModelKind& Model::kind() const
{
    const ModelKind* k = find_model_kind(params().name);
    TOPOKPM_REQUIRE(k != nullptr, "model '", params().name, "' has no row in model_kinds()");
    return *k;
}

bool reads_model_file(const std::string& name)
{
    const ModelKind* k = find_model_kind(name);
    return k != nullptr && k->reads_file;
}

std::unique_ptr<Model> make_model(const ModelParams& params)
{
    const ModelParams p = validate(params);
    if (p.name == "ti") return std::make_unique<ti::TiModel>(p);
    if (p.name == "hr") return std::make_unique<file_models::HrModel>(p);
    if (p.name == "matrix-market") return std::make_unique<file_models::MatrixMarketModel>(p);
    return std::make_unique<graphene::GrapheneModel>(p);
}

}  // namespace topokpm::hamiltonians
