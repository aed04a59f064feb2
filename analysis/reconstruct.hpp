#pragma once
/// @file reconstruct.hpp
/// Kernel damping and DOS reconstruction from Chebyshev moments (models.md §4).

#include <string>
#include <vector>

namespace topokpm::analysis {

enum class DampingKernel {
    Jackson,  ///< g_n of models.md §4 (default): positive, resolution ~ pi a / M
    Lorentz,  ///< g_n = sinh(lambda (1 - n/M)) / sinh(lambda): for Green's functions
    None      ///< g_n = 1 (Dirichlet kernel; Gibbs oscillations)
};

/// "jackson" | "lorentz" | "none" -> kernel; throws InputError naming --kernel otherwise.
DampingKernel parse_damping_kernel(const std::string& name);
/// The lower-case name that parse_damping_kernel accepts and /dos@kernel stores.
std::string to_string(DampingKernel kernel);

/// The M damping factors g_0..g_{M-1} (models.md §4; Jackson with M + 1 in its formula,
/// g_0 = 1 for every kernel). lambda is used by Lorentz only and must be finite and > 0
/// (InputError naming --lorentz-lambda); M >= 1 (InputError naming --moments).
std::vector<double> damping_factors(DampingKernel kernel, int num_moments, double lambda);

/// A function of energy on a grid (energies ascending, in units of t).
struct Spectrum {
    std::vector<double> energy;
    std::vector<double> rho;
};

/// rho(E) on the Chebyshev grid x_k = cos(pi (k + 1/2) / K), E = a x + b, evaluated with
/// FFTW's DCT-III (REDFT01) in O(K log K); returned with ascending energies.
/// Requires K >= M (= moments.size(); InputError naming --energy-points otherwise) and
/// g.size() == moments.size(). Thread-safe (FFTW planning is serialised inside).
Spectrum reconstruct_chebyshev_grid(const std::vector<double>& moments,
                                    const std::vector<double>& g, int num_points,
                                    double scale_a, double scale_b);

/// rho(E) at arbitrary energies by Clenshaw summation; energies outside the scaled
/// interval (|x| >= 1) give rho = 0.
std::vector<double> reconstruct_at(const std::vector<double>& moments,
                                   const std::vector<double>& g,
                                   const std::vector<double>& energies, double scale_a,
                                   double scale_b);

/// Integral of rho over E on the Chebyshev grid by Gauss-Chebyshev quadrature (exact
/// for K >= M: equals g_0 mu_0, i.e. 1 for normalised moments). `spectrum` must come from
/// reconstruct_chebyshev_grid with the same a, b.
double integral_chebyshev_grid(const Spectrum& spectrum, double scale_a, double scale_b);

/// Integral of rho over E on any ascending grid by the trapezoidal rule.
double integral_trapezoid(const std::vector<double>& energy, const std::vector<double>& rho);

}  // namespace topokpm::analysis
