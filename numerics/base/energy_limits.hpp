#pragma once
/// @file energy_limits.hpp
/// The range of every energy a user gives (units of t: hopping, mass, potentials, disorder,
/// spectral bounds, grid ends, shifts, windows, the --green broadening). Finite values
/// beyond it are refused by name where they are read (app/cli/options.cpp,
/// hamiltonians/model.cpp), because later arithmetic would overflow or underflow.

namespace topokpm {

/// Largest magnitude of an energy: 1e100. Differences of two energies, squares, and sums of
/// squares over 10^12 rows (vector norms) stay finite in double (1e200 * 1e12 << 1.8e308).
inline constexpr double kMaxEnergy = 1e100;

/// Smallest magnitude of an energy that sets a scale (|t|, --green ETA): 1e-100, so that its
/// reciprocal and square stay finite and normal in double.
inline constexpr double kMinEnergyScale = 1e-100;

}  // namespace topokpm
