#pragma once
/// @file hr_file.hpp
/// Reader of Wannier90's `SEED_hr.dat` (models.md §8; Wannier90 >= 2.0): a comment line;
/// num_wann; nrpts; nrpts degeneracy weights ndegen(R), 15 per line; then nrpts x num_wann^2
/// lines `R1 R2 R3 m n Re Im` (1-based orbitals), meaning
///     H(R)[m, n] = <m, cell 0| H |n, cell R> = (Re + i Im) / ndegen(R).
///
/// One streaming pass, O(1) work per line; the only allocations are the nrpts blocks of
/// num_wann^2 values the header announces, and only after the header's counts have been
/// checked against the file's size (an entry line has at least 13 bytes), so a header that
/// claims 10^12 entries is refused before anything is allocated.
///
/// Every malformed file is one InputError "{model_file} PATH line N: ..." naming the line
/// and never quoting it: a missing or extra header field, a count out of range, a weight
/// ndegen < 1 or a degeneracy line without min(15, remaining) weights, an entry line without
/// 7 fields, an orbital outside 1 .. num_wann, a value that is not a finite number (or beyond
/// the energy limit 1e100 of numerics/base/energy_limits.hpp), a
/// duplicate (R, m, n), more than nrpts distinct R, a truncated file or lines after the
/// last entry, and a non-Hermitian H: |H(R)[m, n] - conj(H(-R)[n, m])| above 1e-12 times
/// the largest |H(R)[m, n]| (a missing -R counts as zeros), reported at the line of the
/// first offending entry in the order (R as first seen, m, n).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hamiltonians/file_models/model_file.hpp"
#include "numerics/base/types.hpp"

namespace topokpm::hamiltonians::file_models {

struct HrHamiltonian {
    struct Term {
        std::array<int, 3> r{};              ///< R in units of the lattice vectors
        std::vector<complex_type> block;     ///< H(R), row-major: block[m * num_wann + n], 0-based
    };
    int num_wann = 0;
    std::vector<Term> terms;                 ///< every R of the file, in order of first appearance
    bool real = true;                        ///< every Im in the file is exactly 0
    ModelFileInfo file;
};

/// Largest |R_i| accepted (R is packed into a 64-bit key).
inline constexpr int kMaxCellOffset = 1 << 20;
/// Largest num_wann accepted (num_wann^2 stays far inside 64 bits).
inline constexpr int kMaxWannierOrbitals = 1 << 16;

/// Reads and checks `path` (see the file comment). Throws InputError.
HrHamiltonian read_hr_file(const std::string& path);

}  // namespace topokpm::hamiltonians::file_models
