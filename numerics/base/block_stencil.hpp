#pragma once
/// @file block_stencil.hpp
/// A backend-neutral description of a translation-invariant tight-binding Hamiltonian on a
/// box of nx x ny x nz sites with B orbitals per site: what a matrix-free kernel (CPU
/// reference, CUDA) needs to apply H without storing it, and nothing model-specific.
///
/// Canonical order (models.md §2, §3): site = z + nz (y + ny x), row = o + B site.
/// Graphene maps onto it with x = m, y = n, nz = 1, B = 2 (row(m, n, s) = s + 2 (n + Ny m)).
///
/// The matrix, for a row (site s = (x, y, z), orbital o) and every column orbital b:
///
///     H[(s, o), (s, b)]     += onsite[o B + b] + (o == b ? V : 0)
///     H[(s, o), (s + d, b)] += term.block[o B + b]      for every term with offset d,
///
/// where V = potential[s] (one value per site) or potential[o + B s] (one per row), and the
/// neighbour s + d is taken modulo the extent in periodic directions; a neighbour outside an
/// open direction is dropped. Terms whose neighbour coincides (tiny periodic extents) add up.
/// The sum is Hermitian when every term (d, T) has a partner (-d, T^dagger) and onsite is
/// Hermitian; validate() checks the sizes only.
///
/// Bytes of a matrix-free sweep: the potential (8 bytes per site or per row) plus the block
/// vectors; the blocks themselves are a few hundred bytes.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "numerics/base/block_vector.hpp"
#include "numerics/base/first_touch.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/base/types.hpp"

namespace topokpm {

/// One neighbour coupling: the B x B block (row-major, block[o * B + b]) from column site
/// s + (dx, dy, dz) to row site s.
struct StencilTerm {
    int dx = 0, dy = 0, dz = 0;
    std::vector<complex_type> block;
};

/// The Peierls phases of a uniform magnetic field along z (models.md §9) in a gauge whose
/// vector potential varies along y only (hamiltonians/field/magnetic_field.hpp): entry (o, b)
/// of slot k (0: the on-site block, k = t + 1: terms[t]) in the row of site (x, y, z) is
///     value * along[((k B + o) B + b) ny + y],   or, when the term's y step wraps around
///     value * across[((k B + o) B + b) nx + x]   the periodic y boundary,
/// (x, y of the row's site), the complex product written out with +0 zero parts
/// (peierls_entry): the rows' own arithmetic, so each entry equals its row's bit for bit.
/// Empty: no field. Lattices only; a kernel that does not carry it refuses the stencil.
struct StencilField {
    std::vector<complex_type> along;   ///< [(1 + T) B B][ny]
    std::vector<complex_type> across;  ///< [(1 + T) B B][nx]
    bool active() const { return !along.empty(); }
};

/// v f written out, (a c - b d, a d + b c), each part's zero +0: a Peierls factor f on an
/// entry v as the models' rows apply it (ti_stencil.cpp, graphene_stencil.cpp).
inline complex_type peierls_entry(complex_type v, complex_type f)
{
    return {v.real() * f.real() - v.imag() * f.imag() + 0.0, v.real() * f.imag() + v.imag() * f.real() + 0.0};
}

struct BlockStencil {
    std::string name;                           ///< model name for operator names ("ti", "graphene")
    int nx = 1, ny = 1, nz = 1;                 ///< sites per direction (>= 1)
    int orbitals = 1;                           ///< B, orbitals per site (1 .. 8)
    std::array<bool, 3> periodic{};             ///< per direction x, y, z
    std::vector<complex_type> onsite;           ///< B x B, row-major
    std::vector<StencilTerm> terms;             ///< neighbour blocks, any order
    /// Per site (size num_sites()) or per row (size num_rows()). A FirstTouchVector: resize()
    /// leaves the values unset (the model writes them in a parallel loop, which places the
    /// pages; a zero fill on one thread was most of the graphene build).
    FirstTouchVector<double> potential;
    StencilField field;                         ///< Peierls phases (empty: no field)

    global_index num_sites() const { return global_index(nx) * ny * nz; }
    global_index num_rows() const { return num_sites() * orbitals; }
    /// True when the potential has one value per row rather than one per site.
    bool potential_per_row() const { return orbitals > 1 && global_index(potential.size()) == num_rows(); }

    /// Throws InputError unless extents >= 1, 1 <= B <= 8, every block has B x B entries,
    /// the potential has num_sites() or num_rows() values and a field's tables their sizes.
    void validate() const;

    /// The Peierls factor of entry (o, b) of `slot` (0: on-site, t + 1: terms[t]) in the row
    /// of a site at (x, y), whose neighbour along the term wraps around the y boundary or
    /// not (StencilField); 1 without a field.
    complex_type phase(int slot, int o, int b, int x, int y, bool wraps_y) const
    {
        if (!field.active()) return {1.0, 0.0};
        const std::size_t k = (static_cast<std::size_t>(slot) * orbitals + o) * orbitals + b;
        return wraps_y ? field.across[k * nx + x] : field.along[k * ny + y];
    }

    /// Structurally non-zero entries of the matrix (|value| != 0 in onsite or a term, plus
    /// the diagonal), counting dropped open-boundary neighbours correctly; the nonzeros
    /// figure of OperatorCost.
    global_index num_nonzeros() const;
};

/// An enclosure of the spectrum from the blocks and the potential's range, without a pass
/// over the rows: per orbital o, c_o = Re of the on-site diagonal (offset-0 terms included)
/// and R_o = the sum of |entry| over the rest of row o of the on-site block and every term's
/// block; lower = min over rows (V + c_o - R_o), upper = max (V + c_o + R_o). A row's
/// Gershgorin disc lies inside [V + c_o - R_o, V + c_o + R_o] (dropped open-boundary terms
/// only shrink it; coinciding neighbours add as |a + b| <= |a| + |b|, or onto the diagonal,
/// which moves the centre by at most their modulus), so the result contains the Gershgorin
/// bounds of the rows and the spectrum; it equals them on a periodic lattice with distinct
/// neighbours (clean graphene: [-3 t, 3 t]). One parallel pass over the potential.
SpectralBounds gershgorin_bounds(const BlockStencil& stencil);

/// An interval inside the hull of the spectrum, E_min <= lower and upper <= E_max, from
/// Rayleigh quotients of plane waves, without a pass over vectors: the trial vectors
/// psi(x, y, z, b) = exp(i (kx x + ky y)) u(z, b), kx and ky in {0, pi}. For each k their
/// quadratic form without the potential is the Hermitian S x S matrix (S = B nz)
///     M_k[(z', o), (z, b)] = delta_{z z'} onsite[o B + b]
///                            + sum over terms (d, T) whose z' + dz is z (wrapped or dropped as in the
///                              lattice) of T[o B + b] f(dx, nx, kx) f(dy, ny, ky),
///     f(d, n, k) = (1 / n) sum over q in [0, n) whose q + d is inside (or wrapped to q') of exp(i k (q' - q)),
/// so its extremal eigenvalues are Rayleigh quotients of actual vectors; the potential adds
/// sum |psi|^2 V, between min V and max V. lower = min_k lambda_min(M_k) + max V, upper =
/// max_k lambda_max(M_k) + min V. Exact at the band edges of a clean periodic lattice whose
/// extremal states lie at k = 0 or pi (graphene: [-3 t, 3 t], equal to gershgorin_bounds).
/// std::nullopt when S > 512 or the interval is empty (a potential wider than the bands), and
/// in a field (its phases break the translations the plane waves rest on).
/// One parallel pass over the potential and four dense eigenproblems of size S.
std::optional<SpectralBounds> plane_wave_rayleigh_bounds(const BlockStencil& stencil);

/// The sites x_begin <= x < x_end of `stencil` as a stencil of their own (nx = x_end -
/// x_begin, x open, the potential sliced): the local part of a rank that owns those
/// x-planes (rows are x slowest, so an x-slab is a contiguous row range). Couplings across
/// the slab faces, and the periodic wrap, are left to the caller (the distributed
/// operator's remote part).
BlockStencil x_slab(const BlockStencil& stencil, int x_begin, int x_end);

/// The sites x_begin <= x < x_end, y_begin <= y < y_end (every z) of `stencil` as a stencil
/// of their own: the local part of a rank of a 2-D decomposition, whose rows (a tile of
/// whole z-columns) are numbered in the tile's own canonical order. A direction the tile
/// covers completely keeps its boundary (the periodic wrap stays inside the tile); one it
/// cuts is open, its couplings across the faces left to the caller (the distributed
/// operator's remote part). A field's tables are sliced to the tile's x and y.
BlockStencil xy_tile(const BlockStencil& stencil, int x_begin, int x_end, int y_begin, int y_end);

/// The naive loop over sites, orbitals, terms and columns (the reference backend):
/// y = scale (H - shift) x + beta y with the DotSums of operator.hpp. Readable, not fast;
/// the oracle for the CUDA stencil kernel and the models' block_stencil().
std::unique_ptr<Operator> make_block_stencil_reference_operator(BlockStencil stencil);

}  // namespace topokpm
