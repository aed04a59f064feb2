#pragma once
/// @file conductivity.hpp
/// The Kubo-Bastin conductivity of models.md §9 from the two-index moments
/// Gamma_nm = Tr[v_a T_n(Ht) v_b T_m(Ht)] / N (numerics/kpm/two_index.hpp), by the kernel of
/// García, Covaci and Rappoport, PRL 114, 116602 (2015). With x = (E - b)/a = cos(theta),
/// s = sin(theta), c_n = g_n / (1 + delta_n0) (g: the damping of both indices, Jackson by
/// default) and the velocities in units of t x length (hbar = 1),
///
///   sigma_ab(mu, T) / (e^2/h) = 8 N / (Omega a^2) integral dx f(x; mu, T) Re S(x) / (1 - x^2)^2,
///   S(x) = sum_nm Gamma_nm [ alpha_n(x) tau_m(x) + tau_n(x) conj(alpha_m(x)) ],
///   alpha_n = c_n (x - i n s) e^{i n theta},   tau_n = c_n T_n(x),
///
/// from sigma = (i e^2 hbar / Omega) integral dE f(E) Tr[v_a delta(E-H) v_b dG+/dE -
/// v_a dG-/dE v_b delta(E-H)] with the Chebyshev expansions of delta and G+- (docs/physics.md
/// "Conductivity"); Omega is the area (a sheet conductance) or the volume (per unit length),
/// f the Fermi function at temperature T (T = 0: a step, 1/2 at E = mu).
///
/// The integral is the midpoint rule in theta on the Chebyshev grid of K points,
/// theta_k = pi (k + 1/2) / K, weight (pi / K) s_k, over the grid points inside the spectral
/// bounds [lower, upper] only: no states lie outside them, and there the 1/(1 - x^2)^2 of
/// the kernel would amplify the truncated expansions' tails without limit near x = +-1.
/// sigma is returned at the same K energies, ascending (the DOS's default grid).

#include <complex>
#include <vector>

#include "analysis/reconstruct.hpp"

namespace topokpm::analysis {

struct ConductivityGridInput {
    const std::vector<std::complex<double>>* gamma = nullptr;  ///< [M x M] row-major, Gamma_nm at n M + m
    int num_moments = 0;                                       ///< M
    std::vector<double> damping;          ///< g_0 .. g_{M-1} (damping_factors), applied to both indices
    int num_points = 0;                   ///< K >= M (InputError naming {energy_points})
    double scale_a = 1.0, scale_b = 0.0;  ///< the scaling of the moments
    double lower = 0.0, upper = 0.0;      ///< spectral bounds the integral runs over (energy units)
    double rows_per_measure = 1.0;        ///< N / Omega
    double temperature = 0.0;             ///< T >= 0 in energy units (InputError naming {temperature})
};

/// sigma_ab(mu) in e^2/h at the K Chebyshev-grid energies mu (ascending) as a Spectrum
/// (energy, rho = sigma). O(M^2 K) work, OpenMP over the energies.
Spectrum reconstruct_conductivity(const ConductivityGridInput& input);

}  // namespace topokpm::analysis
