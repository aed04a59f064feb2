#pragma once
/// @file magnetic_field.hpp
/// The magnetic field of models.md §9 for the lattice models (`ti`, `graphene`, and `hr` with
/// positions): the flux
/// per unit cell PHI (in flux quanta h/e) held exactly as a fraction, the check that the
/// total flux through the periodic supercell is an integer, and the Peierls phase of every
/// hop in one gauge that is single-valued on that supercell.
///
/// The gauge (recorded in the result as `gauge`, docs/physics.md "Magnetic field"): with
/// positions r = r0 + u a1 + v a2 (lattice coordinates; ti: a1 = x, a2 = y, spacing 1) the
/// Landau gauge A = -(Phi_0 PHI / A_cell) v grad(u), whose curl is PHI flux quanta per cell
/// along +z (a1 x a2). The hop from site j onto site i takes the straight bond from the
/// image j' of j next to i (minimum image: j' = j + kx Nx a1 + ky Ny a2) to i:
///
///     theta_ij / (2 pi) = -PHI [ (v_i + v_j')/2 (u_i - u_j')  +  ky Ny u_j ]
///
/// the first term the line integral of A along the bond, the second the gauge
/// transformation that maps A on the copy of the supercell shifted by ky Ny a2 back onto
/// the supercell (A does not depend on u, so shifts along a1 need none). Single-valued on
/// the torus exactly when Nx Ny PHI is an integer; then theta_ji = -theta_ij (mod 2 pi) and
/// the phases around every plaquette, also one that wraps, add up to 2 pi PHI times its
/// area in cells. With an open direction there is no torus and any PHI is admissible.
/// The origin r0 fixes the phases around the torus' two cycles; it is a site for ti and the
/// bond midpoint -(a1 + a2)/6 (between A(0,0) and B(0,-1)) for graphene: the points where
/// they vanish for integer PHI, so that an integer PHI is a pure gauge transformation of no
/// field on every torus and the spectrum is periodic in PHI with period 1. For hr it is the
/// origin of the Cartesian frame of --orbital-positions (the model cannot know a better
/// point; positions shifted by -r0 of a built-in model give that model's gauge exactly).

#include <cstdint>
#include <string>

#include "numerics/base/attribute.hpp"
#include "numerics/base/types.hpp"

namespace topokpm::hamiltonians {

/// Flux per unit cell in flux quanta, exactly numerator / denominator: reduced
/// (gcd(|numerator|, denominator) = 1), 1 <= denominator <= kMaxFluxTerm,
/// |numerator| <= kMaxFluxTerm. Zero (the default) means no field.
struct MagneticFlux {
    std::int64_t numerator = 0;
    std::int64_t denominator = 1;

    bool zero() const { return numerator == 0; }
    double value() const { return static_cast<double>(numerator) / static_cast<double>(denominator); }
    /// "p/q", or "p" when q = 1 ("0" without a field): what --magnetic-flux reads back exactly.
    std::string text() const;
    friend bool operator==(const MagneticFlux& a, const MagneticFlux& b)
    {
        return a.numerator == b.numerator && a.denominator == b.denominator;
    }
};

inline constexpr std::int64_t kMaxFluxTerm = 1'000'000'000;

/// Reads --magnetic-flux: `p/q` (integers, q >= 1) or a decimal `[-]digits[.digits]` with at
/// most 9 digits after the point, reduced; both terms at most 10^9 in magnitude after
/// reduction. Throws InputError naming {magnetic_flux}, the text and the allowed forms.
MagneticFlux parse_magnetic_flux(const std::string& text);

/// The smallest lattice nx' x ny' (least nx' ny', then least nx') with nx' >= nx, ny' >= ny,
/// both multiples of `multiple_of` (the dot period, or 1), whose total flux nx' ny' PHI is an
/// integer. `flux` non-zero.
struct LatticeSize {
    std::int64_t nx = 0, ny = 0;
};
LatticeSize smallest_admissible_lattice(const MagneticFlux& flux, std::int64_t nx, std::int64_t ny,
                                        std::int64_t multiple_of);

/// Throws the InputError of `--matrix free` in a field (a non-zero `flux`) where the stencil
/// does not carry the Peierls phases: model `hr` (`file_model`: phases at its real
/// positions). ti and graphene carry them (BlockStencil::field) on the CPU and the GPU
/// stencil kernels; the rows (sell, crs) carry them everywhere.
void require_stencil_carries_field(const MagneticFlux& flux, bool file_model);

/// Appends what /model records of a field (docs/format.md), nothing without one:
/// `magnetic_flux` (float64, PHI), `magnetic_flux_fraction` (string, exact "p/q") and
/// `gauge`: the formula of the file comment with `origin` (r0, in words).
void append_field_attributes(AttributeList& attributes, const MagneticFlux& flux, const std::string& origin);

/// The Peierls phases of one lattice, positions relative to the origin r0 given as integers
/// U = s u, V = s v (s = 1 for ti's sites; 6 for graphene, whose atoms sit at thirds of a
/// cell from A(0,0) and sixths from r0), plus real parts where a model's positions are not
/// on such a grid (hr: U, V the cell, the real parts the orbital's offset solved in a1, a2).
/// Lattice coordinates beyond U / s and V / s: u = U / s + ui, v = V / s + vi of site i and
/// the same of site j (uj, vj: equal for j and its image j'). All zero for ti and graphene.
struct PeierlsRealParts {
    double ui = 0.0, vi = 0.0, uj = 0.0, vj = 0.0;
    bool zero() const { return ui == 0.0 && vi == 0.0 && uj == 0.0 && vj == 0.0; }
};

class PeierlsGauge {
public:
    using RealParts = PeierlsRealParts;

    /// @param flux   PHI (may be zero: every phase is then exactly 1)
    /// @param ny     cells along a2 (the period that ky counts)
    /// @param scale  s, 1 <= s <= 6
    PeierlsGauge(const MagneticFlux& flux, int ny, int scale);

    bool active() const { return !flux_.zero(); }

    /// exp(i theta_ij) for the hop onto site i, whose V is vi (the gauge does not depend on
    /// U_i), from the image j' = i + (du, dv) of site j, whose position in the supercell has
    /// U = uj; ky: j' = j + kx Nx a1 + ky Ny a2.
    /// Without real parts exact: the phase is reduced modulo 2 pi in integers before one
    /// cos/sin, multiples of pi/2 are exact, and the reverse hop gives the exact complex
    /// conjugate. With real parts the integer part is reduced as before and the rest, PHI
    /// times the terms the real parts add, in double precision (relative rounding of order
    /// 1e-16 times PHI Ny); the reverse hop is the conjugate to that rounding.
    complex_type hop(std::int64_t vi, std::int64_t du, std::int64_t dv, std::int64_t uj, std::int64_t ky,
                     const RealParts& real = {}) const;

private:
    MagneticFlux flux_;
    std::int64_t ny_ = 0;
    std::int64_t scale_ = 1;
};

}  // namespace topokpm::hamiltonians
