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
/// (peierls_product): the rows' own arithmetic, so each entry equals its row's bit for bit.
/// Empty: no field. Lattices only; a kernel that does not carry it refuses the stencil.
struct StencilField {
    std::vector<complex_type> along;   ///< [(1 + T) B B][ny]
    std::vector<complex_type> across;  ///< [(1 + T) B B][nx]
    bool active() const { return !along.empty(); }
};

// The field's arithmetic below is shared by the host (the CPU stencil's checked path and the
// reference operator, through BlockStencil::phased) and the CUDA stencil kernel
// (numerics/cuda/stencil_kernels.cu, which includes this header through nvcc): one
// definition, so the CPU tests exercise the lookup and the product the GPU runs.
#ifndef TOPOKPM_HOST_DEVICE
#if defined(__CUDACC__)
#define TOPOKPM_HOST_DEVICE __host__ __device__
#else
#define TOPOKPM_HOST_DEVICE
#endif
#endif

/// (re, im) = v f written out, (a c - b d, a d + b c), each part's zero +0: a Peierls
/// factor f on an entry v as the models' rows apply it (ti_stencil.cpp, graphene_stencil.cpp).
/// The device spells each operation with its _rn intrinsic (rounded once, never fused); the
/// host compiler may fuse one product of a part into the other (g++ contracts in C++ with
/// -march=native). Where one product of each part is an exact zero, as for every ti and
/// graphene entry (real or imaginary, times any factor), both give the rounded non-zero
/// product, the same bits; otherwise they may differ in the last place.
TOPOKPM_HOST_DEVICE inline void peierls_product(double a, double b, double c, double d, double& re, double& im)
{
#if defined(__CUDA_ARCH__)
    re = __dadd_rn(__dsub_rn(__dmul_rn(a, c), __dmul_rn(b, d)), 0.0);
    im = __dadd_rn(__dadd_rn(__dmul_rn(a, d), __dmul_rn(b, c)), 0.0);
#else
    re = a * c - b * d + 0.0;
    im = a * d + b * c + 0.0;
#endif
}

/// A StencilField's tables as plain (re, im) pairs, where a kernel reads them (host memory:
/// BlockStencil::field_tables; device memory: the CUDA stencil operator's copies).
struct StencilFieldTables {
    const double* along = nullptr;   ///< StencilField::along, 2 doubles per factor
    const double* across = nullptr;  ///< StencilField::across
    int nx = 0, ny = 0, orbitals = 0;
};

/// Entry (o, b) of `slot` (0: on-site, t + 1: terms[t], whose y step is dy; 0 on-site) in the
/// row of site (x, y), given in (re, im), times its Peierls factor (StencilField): the factor
/// from `across` by x when y + dy leaves [0, ny) (the step wraps around the periodic y
/// boundary; an open one drops that neighbour before this is asked), else from `along` by y.
TOPOKPM_HOST_DEVICE inline void peierls_phase_entry(const StencilFieldTables& f, int slot, int o, int b, int x, int y,
                                                    int dy, double& re, double& im)
{
    const long long k = (static_cast<long long>(slot) * f.orbitals + o) * f.orbitals + b;
    const bool wraps_y = y + dy < 0 || y + dy >= f.ny;
    const double* factor = wraps_y ? f.across + 2 * (k * f.nx + x) : f.along + 2 * (k * f.ny + y);
    peierls_product(re, im, factor[0], factor[1], re, im);
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

    /// The field's tables as peierls_phase_entry reads them (pointers into `field`).
    StencilFieldTables field_tables() const
    {
        return {reinterpret_cast<const double*>(field.along.data()), reinterpret_cast<const double*>(field.across.data()),
                nx, ny, orbitals};
    }

    /// Entry v of (o, b) of `slot` (0: on-site, t + 1: terms[t], whose y step is dy) in the
    /// row of a site at (x, y) with its Peierls factor (peierls_phase_entry); v without a field.
    complex_type phased(complex_type v, int slot, int o, int b, int x, int y, int dy) const
    {
        if (!field.active()) return v;
        double re = v.real(), im = v.imag();
        peierls_phase_entry(field_tables(), slot, o, b, x, y, dy, re, im);
        return {re, im};
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

}  // namespace topokpm
