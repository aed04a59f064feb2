#pragma once
/// @file hr_model.hpp
/// Model `hr` (models.md §8): a Wannier90 tight-binding Hamiltonian (hr_file.hpp) tiled over
/// a supercell of Nx x Ny x Nz cells, periodic or open per direction, in the canonical order
///     row(c1, c2, c3, o) = o + num_wann (c3 + Nz (c2 + Ny c1)),
/// so it is a BlockStencil with B = num_wann, on-site block H(0) and one term per R != 0.
/// Row (c, o) holds H(R)[o, n] at column (c + R, n) for every R and n: an open direction
/// drops c + R outside the supercell, a periodic one wraps it; terms landing on the same
/// column add up (tiny periodic extents). Stored: the diagonal always (plus the potential),
/// every other entry whose value is not exactly 0. Disorder adds
/// disorder (uniform(S_d, row) - 1/2) to every diagonal entry (per orbital).
///
/// Positions (hr_positions.hpp): with --cell-vectors and --orbital-positions orbital o of
/// cell c sits at c1 a1 + c2 a2 + c3 a3 + position[o] (geometry(): velocities, conductivity)
/// and a magnetic field (models.md §9) puts the Peierls phase of PeierlsGauge on every
/// entry but the diagonal: the hop of H(R)[o, n] from (c + R, n) onto (c, o) along the
/// straight bond to the image c + R (not wrapped), in lattice coordinates u, v of the
/// x-y plane solved from a1, a2 (u = c1 + the orbital's own part), gauge origin the
/// Cartesian origin of the positions. Dots (models.md §8) add dot_potential to the orbitals
/// whose position lies within dot_radius (in the x-y plane) of the nearest centre of the
/// superlattice P a1, P a2 (P = dot_period), the centre of the supercell of cells [0, P)^2
/// being the centroid of its orbitals, (P - 1)/2 (a1 + a2) + the mean of the positions (ti's
/// rule of §2 for sites at the cell corners); every layer. V = dot term, then plus disorder.

#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "hamiltonians/file_models/hr_file.hpp"
#include "hamiltonians/file_models/hr_positions.hpp"
#include "hamiltonians/model.hpp"
#include "hamiltonians/onsite_potential.hpp"

namespace topokpm::hamiltonians::file_models {

class HrModel final : public Model {
public:
    /// Orbitals per cell the matrix-free kernels take (BlockStencil::validate()).
    static constexpr int kMaxStencilOrbitals = 8;

    /// @param params  validated by make_model() (name "hr", file set, 3-letter boundary,
    ///                extents >= 1, no dots, checked cell vectors; a field only with positions).
    ///                Reads params.file and params.orbital_positions; InputError for a bad
    ///                file or a supercell whose num_wann Nx Ny Nz rows overflow 64 bits.
    explicit HrModel(const ModelParams& params);

    global_index num_rows() const override { return num_rows_; }
    int max_row_length() const override { return max_row_length_; }
    int row(global_index row, global_index* cols, complex_type* values) const override;
    /// Every Im of the file is 0 (the potential is real) and there is no field.
    bool real_valued() const override { return h_.real && !gauge_.active(); }

    const ModelParams& params() const override { return params_; }
    int orbitals_per_site() const override { return h_.num_wann; }
    double potential(global_index row) const override;
    double potential_entries_per_row() const override { return 1.0; }
    /// InputError naming --matrix free when num_wann exceeds the stencil kernels' 8 orbitals
    /// or a field puts position-dependent phases on the hops.
    BlockStencil block_stencil() const override;
    bool offers_block_stencil() const override { return h_.num_wann <= kMaxStencilOrbitals && !gauge_.active(); }
    /// With --cell-vectors and --orbital-positions: dimensions 2 (two vectors; periodic[2]
    /// false) or 3, the positions as offsets; nullopt otherwise.
    std::optional<LatticeGeometry> geometry() const override;
    /// models.md §8: also the positions when given (cell_vectors, orbital_positions and
    /// their file's path, size and SHA-256) and the field (magnetic_field.hpp).
    AttributeList attributes() const override;
    /// Every hopping counted once per cell it reaches (periodic images that coincide and
    /// merge are counted apart: an upper bound, exact when none coincide), saturating at 2^63 - 1.
    global_index estimated_nonzeros() const override { return estimated_nonzeros_; }

private:
    /// One stored entry of orbital row o: H(R)[o, n] (the diagonal of R = 0 excluded).
    struct Hop {
        int dr[3];
        int n;
        complex_type value;
    };
    ModelParams params_;
    HrHamiltonian h_;
    std::vector<std::vector<Hop>> hops_;     ///< per orbital o
    std::vector<complex_type> onsite_diag_;  ///< H(0)[o, o]
    std::optional<OrbitalPositions> positions_;     ///< --orbital-positions, when given
    /// Per orbital: the lattice coordinates u, v (in ui, vi) of its position in the x-y
    /// plane, solved from a1, a2 (zero unless a field or dots need them).
    std::vector<PeierlsGauge::RealParts> lattice_;
    PeierlsGauge gauge_;
    OnsitePotential onsite_;
    /// The dot superlattice (dot_period > 0): the in-plane cell vectors, a3's u, v, the
    /// centre of supercell (0, 0) in u, v, a reduced basis of the superlattice and its inverse.
    struct Dots {
        double a1[2] = {}, a2[2] = {}, a3_uv[2] = {}, centre[2] = {};
        double b1[2] = {}, b2[2] = {}, inverse[2][2] = {};
    };
    Dots dots_;
    bool inside_dot(global_index row) const;
    global_index num_rows_ = 0;
    int max_row_length_ = 1;
    global_index estimated_nonzeros_ = 0;
};

}  // namespace topokpm::hamiltonians::file_models
