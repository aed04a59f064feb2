#pragma once
/// @file hr_positions.hpp
/// Where the orbitals of a `--model hr` sit (models.md §8): the cell vectors a1, a2[, a3]
/// (--cell-vectors) and the Cartesian position of each of the num_wann orbitals of cell 0
/// (--orbital-positions), both in one length unit (whatever the files use: Wannier90 writes
/// Angstrom). Orbital o of cell (c1, c2, c3) sits at c1 a1 + c2 a2 + c3 a3 + position[o]:
/// the positions are taken as given, not wrapped into the cell spanned by the vectors.
///
/// Errors are InputError naming the option ({cell_vectors}, {orbital_positions}), the value
/// or the path and line, and the rule; a file's text is never quoted.

#include <array>
#include <string>
#include <vector>

#include "hamiltonians/file_models/model_file.hpp"

namespace topokpm::hamiltonians::file_models {

using Vector3 = std::array<double, 3>;

/// Largest magnitude of a coordinate (as the energies' 1e100: squares and cross products
/// stay finite).
inline constexpr double kMaxCoordinate = 1e100;

/// Reads --cell-vectors: "x,y,z;x,y,z;x,y,z" (a1; a2; a3) or, for a two-dimensional model,
/// "x,y,z;x,y,z" (a1; a2 in the x-y plane). Each coordinate a finite decimal of magnitude
/// <= 1e100; the vectors as check_cell_vectors() requires. Throws InputError naming
/// {cell_vectors} and the text.
std::vector<Vector3> parse_cell_vectors(const std::string& text);

/// The rules of parse_cell_vectors() for vectors from anywhere: 2 or 3 of them, finite
/// coordinates within 1e100; two vectors have z = 0; linearly independent: |a1 x a2|
/// (two) or |det(a1, a2, a3)| (three) above 1e-12 times the product of their lengths.
void check_cell_vectors(const std::vector<Vector3>& vectors);

/// "x,y,z;x,y,z[;x,y,z]" with every coordinate to 17 significant digits (reads back
/// exactly): what /model records of vectors or positions.
std::string vectors_text(const std::vector<Vector3>& vectors);

struct OrbitalPositions {
    std::vector<Vector3> position;  ///< per orbital, num_wann entries, Cartesian
    ModelFileInfo file;             ///< path, size, SHA-256
};

/// Reads --orbital-positions PATH for a model of `num_wann` orbitals, in one of two forms:
///  - Wannier90's SEED_centres.xyz: a line with the count of entries (>= num_wann), a
///    comment line (anything), then that many entry lines `SYMBOL x y z`; the first
///    num_wann entries whose symbol is `X` (the Wannier centres, which Wannier90 writes
///    first) are the positions, the others (atoms) are counted, not read;
///  - plain: exactly num_wann lines `x y z`.
/// Blank lines are skipped. The form is the xyz one when the first non-blank line is a
/// single integer. Throws InputError "{orbital_positions} PATH line N: why" (a line without
/// three finite coordinates within 1e100, more or fewer lines than the count) or
/// "{orbital_positions} PATH: why" (K positions found, the model has num_wann = W).
OrbitalPositions read_orbital_positions(const std::string& path, int num_wann);

}  // namespace topokpm::hamiltonians::file_models
