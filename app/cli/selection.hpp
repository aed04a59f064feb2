#pragma once
/// @file selection.hpp
/// What the LDOS and A(k, E) runs look at: the --ldos row selection and the momenta of
/// --k-points / --k-path, resolved against the model (docs/physics.md).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/kpm/block_trace.hpp"

namespace topokpm::app {

/// Rows of an LDOS run. `layer` is set for `layer:Z` selections, whose rows are every
/// orbital of every site of that layer in canonical order (so the per-site map is the sum
/// of `orbitals` consecutive rows).
struct LdosSelection {
    std::vector<global_index> rows;
    std::optional<int> layer;
    int orbitals = 1;  ///< rows per site (4 ti, 2 graphene)
    int nx = 0, ny = 0;
};

/// Parses --ldos: `0,5,8-11` or `rows:0,5,8-11` (rows, ranges inclusive), `layer:Z` (all
/// orbitals of the sites with z = Z; graphene: layer:0 = the sheet), `site:X,Y,Z` (ti; hr with
/// as few coordinates as its --lattice has extents, omitted ones 0) or `site:M,N` (graphene
/// cell): all orbitals of one site. Throws InputError naming --ldos.
LdosSelection resolve_ldos_selection(const std::string& text, const hamiltonians::Model& model);

/// Momenta of an A(k, E) run with what the plot needs to draw a path.
struct MomentumList {
    std::vector<numerics::Momentum> momenta;
    std::vector<double> k;              ///< [nk, 2]: (2 pi mx / Nx, 2 pi my / Ny) in radians
    std::vector<double> path_distance;  ///< [nk]: cumulative Cartesian |dk| (1 / lattice unit)
    std::vector<std::int64_t> ticks;    ///< indices of the high-symmetry points (--k-path)
    std::string tick_labels;            ///< comma-separated labels of the ticks, e.g. "M,G,X"
};

/// Parses --k-points `mx,my;mx,my` (integers) or --k-path `M-G-X` (ti and hr: G = (0,0),
/// X = (Nx/2, 0), Y = (0, Ny/2), M = (Nx/2, Ny/2); graphene: G, K = (2Nx/3, Ny/3),
/// M = (Nx/2, Ny/2); every lattice momentum along each straight segment). Exactly one of
/// the two texts is non-empty. path_distance is Cartesian by the reciprocal basis of the
/// model's geometry() (its (k1, k2) without one). Throws InputError naming the option.
MomentumList resolve_momenta(const std::string& k_points, const std::string& k_path, const hamiltonians::Model& model);

/// The plane-wave layout of the model (S = 4 Nz for ti, 2 for graphene). Throws
/// InputError when x or y is not periodic (momenta are then not good quantum numbers).
numerics::PlaneWaveLattice plane_wave_lattice(const hamiltonians::Model& model);

/// True when the model is translation invariant in x and y (no dots, no disorder, no field,
/// periodic x and y): its Bloch Hamiltonians then give the exact bands.
bool translation_invariant(const hamiltonians::Model& model);

/// Splits `text` at every `sep` ("a:b:" -> "a", "b", ""), for the list-valued options.
std::vector<std::string> split(const std::string& text, char sep);

}  // namespace topokpm::app
