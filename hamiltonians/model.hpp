#pragma once
/// @file model.hpp
/// The physical models of models.md (§2 `ti`, §3 `graphene`, §8 `hr` and `matrix-market`
/// read from --model-file) behind one interface.
/// A Model is a RowSource (its stored rows in canonical order, from which SELL-C-σ,
/// CRS and the Matrix Market export are built) and a BlockStencil (from which the
/// matrix-free operators apply the same matrix); operator_source() hands both to
/// numerics::make_operator().

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hamiltonians/field/magnetic_field.hpp"
#include "numerics/base/attribute.hpp"
#include "numerics/base/block_stencil.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/base/row_source.hpp"
#include "numerics/spmmv/operator_factory.hpp"

namespace topokpm::files {
struct Guard;  // runtime/base/files.hpp
}

namespace topokpm::hamiltonians {

/// Every model parameter, with the defaults of models.md §4.
struct ModelParams {
    std::string name = "ti";          ///< "ti" | "graphene" | "hr" | "matrix-market"
    std::string file;                 ///< hr, matrix-market: the model file (--model-file)
    int nx = 0, ny = 0, nz = 1;       ///< sites (ti) or unit cells (graphene: nz = 1; hr: 1 when
                                      ///< not given); matrix-market: set from the file, N x 1 x 1
    double t = 1.0;                   ///< hopping (energy unit)
    double m = 2.0;                   ///< ti mass
    double dot_potential = 0.0;       ///< energy units of t
    double dot_radius = 0.0;          ///< lattice units (ti) / carbon-carbon distances (graphene) /
                                      ///< the length unit of the positions (hr)
    int dot_period = 0;               ///< superlattice period in sites/cells; 0 = no dots
    int dot_depth = 1;                ///< ti: dots act on layers z < dot_depth (hr: every layer)
    double disorder = 0.0;            ///< Anderson disorder width W (energy units of t)
    std::uint64_t disorder_seed = 1;  ///< user seed; stream seed S_d = splitmix64(seed, 1)
    std::string boundary;             ///< "ppo"-style per direction ('p' periodic, 'o' open);
                                      ///< empty = model default ("ppo" ti, "pp" graphene, "ppp" hr;
                                      ///< hr pads 1 or 2 letters with 'p'); matrix-market: none
    MagneticFlux flux;                ///< --magnetic-flux PHI per unit cell (models.md §9; ti,
                                      ///< graphene, hr with positions; zero = no field): Peierls
                                      ///< phases in row()
    /// hr: --cell-vectors a1, a2[, a3] (Cartesian, the length unit of the positions); empty:
    /// none; two: a 2-D model (z = 0, Nz = 1). hamiltonians/file_models/hr_positions.hpp.
    std::vector<std::array<double, 3>> cell_vectors;
    std::string orbital_positions;    ///< hr: --orbital-positions FILE (needs cell_vectors); empty: none
    double exchange_mass = 0.0;       ///< ti with z open: M_ex s0 (x) sz on the layers z = 0 and
                                      ///< z = Nz - 1 (units of t; 0 = none; docs/physics.md)
};

/// What kpm-eigs weighs each eigenvector over (models.md §6).
enum class EigenvectorParts {
    None,         ///< nothing
    Layers,       ///< each z layer: row r lies in layer (r / orbitals_per_site) % Nz ("layer_weight")
    Sublattices,  ///< each orbital of a cell: row r on sublattice r % orbitals_per_site ("sublattice_weight")
};

/// What a kind of model is, known from its name before any file is read or model built:
/// what the app asks instead of comparing model names, so that a new model is one row of
/// model_kinds() and its class, and the app is not touched.
struct ModelKind {
    std::string name;                 ///< the --model value
    bool reads_file = false;          ///< its matrix comes from --model-file (models.md §8)
    int min_extents = 0, max_extents = 0;  ///< extents --lattice takes; 0: no lattice (refused)
    std::string lattice_form;         ///< how --lattice reads, e.g. "NxxNyxNz (e.g. 64x64x16)"
    int site_coordinates = 0;         ///< coordinates of `--ldos site:`: 3 (x, y, z), 2 (cell m, n); 0: none;
                                      ///< fewer down to min_extents where the omitted extents are 1
    std::string zone_points;          ///< the --k-path points it knows, e.g. "G, X, Y, M"; empty: none
    bool takes_positions = false;     ///< reads --cell-vectors and --orbital-positions (hr, models.md §8)
    bool lu_site_blocks = false;      ///< the sparse LU orders whole sites (orbitals_per_site rows)
    EigenvectorParts eigenvector_parts = EigenvectorParts::None;
};

/// The real-space positions of a lattice model's rows (models.md §9: the velocity operators
/// and the area of the conductivity): row = o + B (z + Nz (y + Ny x)) (the canonical order
/// of §2, §3 and §8, B = orbitals_per_site()) sits at x a1 + y a2 + z a3 + offset[o].
/// Lengths in the model's unit (ti: lattice spacing 1; graphene: carbon-carbon distance 1).
struct LatticeGeometry {
    using Vector = std::array<double, 3>;
    int dimensions = 0;                  ///< 2 (a1, a2 in the x-y plane) or 3
    std::array<Vector, 3> cell{};        ///< a1, a2, a3 (a3 unused when 2-D)
    std::vector<Vector> offset;          ///< per orbital of a cell, B entries
    std::array<int, 3> extent{1, 1, 1};  ///< Nx, Ny, Nz
    std::array<bool, 3> periodic{};      ///< per direction (models' --boundary)

    /// r_j - r_i for a stored entry (i, j): the shortest of the separations that differ by
    /// a supercell vector Nd ad of a periodic direction d (minimum image; at a tie the one
    /// first in the order 0, -1, +1 of the image offset per direction, x slowest).
    Vector separation(global_index i, global_index j) const;
    /// |Nx a1 x Ny a2|: the supercell's area in the a1-a2 plane.
    double area() const;
    /// area() Nz |a3| (3-D models; a3 perpendicular to the plane).
    double volume() const;
};

/// Every model kind, in the order --help lists them.
const std::vector<ModelKind>& model_kinds();

/// The kind named `name`, or nullptr when there is none.
const ModelKind* find_model_kind(const std::string& name);

class Model : public RowSource {
public:
    /// The validated parameters (boundary filled in with the default when it was empty).
    virtual const ModelParams& params() const = 0;

    /// Its kind (model_kinds()): what it is, by property rather than by name.
    const ModelKind& kind() const;

    /// Orbitals per site or cell: 4 (ti), 2 (graphene). Rows of one site are never split.
    virtual int orbitals_per_site() const = 0;

    /// On-site potential V of global row `row` (models.md §2/§3), without the mass term.
    virtual double potential(global_index row) const = 0;

    /// Entries of the on-site potential per row in block_stencil(): 1/4 for ti (one per
    /// site), 1 for graphene (one per row). The matrix-free operators' data.
    virtual double potential_entries_per_row() const = 0;

    /// The same matrix as a backend-neutral BlockStencil (numerics/base/block_stencil.hpp):
    /// lattice, per-direction boundaries, the B x B coupling blocks and the on-site
    /// potential of every site (ti) or row (graphene), for device matrix-free kernels.
    /// Allocates and fills the potential (8 bytes per entry, OpenMP-parallel).
    virtual BlockStencil block_stencil() const = 0;

    /// False when block_stencil() would throw (matrix-market: no lattice; hr: more orbitals
    /// than the matrix-free kernels take, or a magnetic field, whose phases at hr's real
    /// positions the stencil does not carry); whoever only wants it as a shortcut (the
    /// serial Lanczos enclosure) then works from the rows. ti and graphene offer it in a
    /// field too, with the phases (BlockStencil::field).
    virtual bool offers_block_stencil() const { return true; }

    /// The positions of the rows (LatticeGeometry), or nullopt when the model has none
    /// (matrix-market; hr without --cell-vectors and --orbital-positions): what the
    /// velocity operators and the conductivity need (models.md §9).
    virtual std::optional<LatticeGeometry> geometry() const { return std::nullopt; }

    /// The attributes of /model in the result file (models.md §5), in a fixed order.
    virtual AttributeList attributes() const = 0;

    /// Stored entries of the whole matrix, computed cheaply (no row generation), so a
    /// run can be sized before anything is allocated.
    virtual global_index estimated_nonzeros() const = 0;
};

/// True for the models read from --model-file ("hr", "matrix-market", models.md §8).
bool reads_model_file(const std::string& name);

/// Validates `params` and builds the model (hr and matrix-market read params.file). Throws InputError naming the bad option
/// (e.g. "--lattice 64x63x16: Ny = 63 is not a multiple of --dot-period 4").
std::unique_ptr<Model> make_model(const ModelParams& params);

/// The model as the source of numerics::make_operator(): its rows, its stencil (built on
/// demand), its lattice row order row = s + S (y + Ny x) with S = orbitals nz (models.md
/// §2-3) and its size estimates. `model` must outlive the result.
numerics::OperatorSource operator_source(const Model& model);

/// Writes the stored matrix in Matrix Market `coordinate complex general`, 1-based,
/// canonical row order, every stored entry (models.md §5); the second line is a blank
/// comment ("%" and spaces: where the temporary carried files::kTemporaryMarker). Written
/// to files::temporary_name(path) and renamed into place (files::publish) as `guard`
/// allows. Throws IoError; when the guarded target changed during the run, one naming
/// `path` and the name the complete matrix is kept under.
void export_matrix_market(const RowSource& source, const std::string& path, const files::Guard* guard = nullptr);

}  // namespace topokpm::hamiltonians
