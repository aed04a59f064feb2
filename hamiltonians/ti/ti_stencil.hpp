#pragma once
/// @file ti_stencil.hpp
/// The lattice, couplings and on-site potential of the `ti` model (models.md §2), shared
/// by TiModel::row() and the matrix-free operator so that both produce the same entries
/// in the same (ascending column) order.
///
/// Conventions (models.md §2): site(x, y, z) = z + Nz (y + Ny x), row = o + 4 site,
/// orbital o = 2 tau + s. The block coupling column site n to row site n + e_j is
/// T_j = -t (G1 - i G_{j+1}) / 2, the block from n + e_j (column) to n (row) is T_j^dag,
/// and the diagonal block is V_n G0 + m G1. Each T_j has exactly two structurally
/// non-zero entries per row (a G1 diagonal one and one G_{j+1} off-diagonal one), so a
/// bulk row stores 1 + 6 x 2 = 13 entries. In a magnetic field along z (ModelParams::flux,
/// models.md §9) the x and y blocks carry the Peierls phase of their bond
/// (hamiltonians/field/magnetic_field.hpp with a1 = x, a2 = y): a scalar factor per block.
/// With an exchange mass M_ex (ModelParams::exchange_mass, z open) the diagonal block of the
/// sites on the layers z = 0 and z = Nz - 1 is V_n G0 + M_ex s0 (x) sz + m G1: a Zeeman-like
/// term, diagonal (+M_ex on the orbitals s = 0, -M_ex on s = 1), that gaps the surface Dirac
/// cones with the same sign on both faces (docs/physics.md, "Quantum anomalous Hall slab").

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "hamiltonians/model.hpp"
#include "hamiltonians/onsite_potential.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/base/types.hpp"

namespace topokpm::hamiltonians::ti {

class TiStencil {
public:
    static constexpr int num_orbitals = 4;     ///< orbitals per site
    static constexpr int max_row_length = 13;  ///< 1 on-site + 6 neighbour blocks x 2
    static constexpr int max_blocks = 7;       ///< on-site + 6 neighbour blocks per block row

    /// Which 4x4 block couples a row site to a column site.
    enum class BlockKind : int { onsite = 0, tx, tx_dag, ty, ty_dag, tz, tz_dag };

    /// One non-zero block of a block row: the column site, the block and its Peierls factor
    /// (1 without a field).
    struct Block {
        global_index site = 0;
        BlockKind kind = BlockKind::onsite;
        complex_type phase{1.0, 0.0};
    };

    /// @param params  validated parameters (make_model()), boundary filled in ("ppo"-style).
    explicit TiStencil(const ModelParams& params);

    global_index num_sites() const { return num_sites_; }

    /// The non-zero blocks of block row `site`, sorted by ascending column site; returns
    /// their number (<= max_blocks; fewer at open surfaces).
    /// @param site  0 <= site < num_sites()
    int blocks(global_index site, Block* out) const;

    /// The stored entries of row `orbital` (0..3) of a block row, given the block row's
    /// blocks() and its potential V (without the mass term); columns strictly ascending.
    /// Returns the count (<= max_row_length).
    int row_entries(const Block* blocks, int num_blocks, int orbital, double potential,
                    global_index* cols, complex_type* vals) const;

    /// V_n of models.md §2: dot term, then plus the disorder term, in that order.
    double potential(global_index site) const;

    /// The exchange term of row `orbital` of block row `site`: M_ex sz[s] (s = orbital % 2) on
    /// the layers z = 0 and z = Nz - 1, else 0 (and 0 everywhere without an exchange mass).
    double exchange(global_index site, int orbital) const;

    /// Whether an exchange mass is set (the diagonal then differs between the orbitals of a
    /// surface site, so block_stencil() keeps one potential value per row).
    bool has_exchange() const { return exchange_mass_ != 0.0; }

    /// inside_dot(x, y) of models.md §2 (false when dot_period == 0).
    bool inside_dot(int x, int y) const;

    /// Exact number of stored entries of the whole matrix (no rows generated).
    global_index num_nonzeros() const;

    /// The backend-neutral description (B = 4): on-site m G1, the six T_j / T_j^dag blocks
    /// with the same values as row_entries(), and V_n per site (with an exchange mass
    /// V_n + exchange() per row). In a magnetic field the blocks' Peierls factors as the
    /// stencil's field tables (StencilField: x and y bonds by y, the y wrap by x).
    BlockStencil block_stencil() const;


private:
    /// Row `o` of one 4x4 block: its structurally non-zero entries, columns ascending.
    struct BlockRow {
        int count = 0;
        std::array<int, 2> col{};
        std::array<complex_type, 2> val{};
    };

    std::array<int, 3> extent_{};      // Nx, Ny, Nz
    std::array<bool, 3> periodic_{};   // per direction
    std::array<global_index, 3> stride_{};  // site stride of a unit step in x, y, z
    global_index num_sites_ = 0;
    double m_ = 0.0;
    double exchange_mass_ = 0.0;  // M_ex on the z faces
    OnsitePotential onsite_;  // dots (on layers z < dot_depth) and disorder
    MagneticFlux flux_;
    PeierlsGauge gauge_;
    std::array<double, 4> g1_diag_{};                    // G1[o, o]
    std::array<std::array<BlockRow, 4>, 7> block_rows_;  // [BlockKind][o]; onsite unused
};


}  // namespace topokpm::hamiltonians::ti
