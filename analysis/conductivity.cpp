#include "analysis/conductivity.hpp"

#include <cmath>

#include "runtime/base/error.hpp"

namespace topokpm::analysis {

namespace {

constexpr double kPi = 3.14159265358979323846;

/// Occupation of energy e at chemical potential mu: the Fermi function, a step at T = 0
/// (1/2 at e = mu), written so that exp() never overflows.
double occupation(double e, double mu, double temperature)
{
    if (temperature == 0.0) return e < mu ? 1.0 : (e == mu ? 0.5 : 0.0);
    const double x = (e - mu) / temperature;
    if (x > 0.0) {
        const double q = std::exp(-x);
        return q / (1.0 + q);
    }
    return 1.0 / (1.0 + std::exp(x));
}

}  // namespace

Spectrum reconstruct_conductivity(const ConductivityGridInput& in)
{
    const int m = in.num_moments;
    const int k_points = in.num_points;
    TOPOKPM_REQUIRE(in.gamma && m >= 1 && in.gamma->size() == static_cast<std::size_t>(m) * m &&
                        in.damping.size() == static_cast<std::size_t>(m),
                    "conductivity moments of ", in.gamma ? in.gamma->size() : 0, " entries for M = ", m);
    TOPOKPM_USER_REQUIRE(k_points >= m, "{energy_points} ", k_points, ": the conductivity needs K >= M = ", m);
    TOPOKPM_USER_REQUIRE(std::isfinite(in.temperature) && in.temperature >= 0.0, "{temperature} ", in.temperature,
                         ": out of range (allowed: finite, >= 0, units of t)");
    const std::vector<std::complex<double>>& gamma = *in.gamma;
    std::vector<double> c(in.damping);
    c[0] /= 2.0;
    const double prefactor = 8.0 * in.rows_per_measure / (in.scale_a * in.scale_a);

    // contribution[k]: the integrand times its weight at grid point k (descending energy).
    std::vector<double> energy(static_cast<std::size_t>(k_points)), contribution(energy.size(), 0.0);
#pragma omp parallel
    {
        std::vector<std::complex<double>> alpha(static_cast<std::size_t>(m));
        std::vector<double> tau(static_cast<std::size_t>(m));
#pragma omp for schedule(static)
        for (int k = 0; k < k_points; ++k) {
            const double theta = kPi * (k + 0.5) / k_points;
            const double x = std::cos(theta), s = std::sin(theta);
            energy[k] = in.scale_a * x + in.scale_b;
            if (energy[k] < in.lower || energy[k] > in.upper) continue;
            for (int n = 0; n < m; ++n) {
                tau[n] = c[n] * std::cos(n * theta);
                alpha[n] = c[n] * std::complex<double>(x, -n * s) * std::polar(1.0, n * theta);
            }
            std::complex<double> sum = 0.0;
            for (int n = 0; n < m; ++n) {
                const std::complex<double>* row = gamma.data() + static_cast<std::size_t>(n) * m;
                std::complex<double> first = 0.0, second = 0.0;
                for (int j = 0; j < m; ++j) {
                    first += row[j] * tau[j];
                    second += row[j] * std::conj(alpha[j]);
                }
                sum += alpha[n] * first + tau[n] * second;
            }
            contribution[k] = prefactor * (kPi / k_points) * sum.real() / (s * s * s);
        }
    }
    Spectrum out;
    out.energy.assign(energy.rbegin(), energy.rend());
    std::vector<double> weight(contribution.rbegin(), contribution.rend());
    out.rho.assign(out.energy.size(), 0.0);
#pragma omp parallel for schedule(static)
    for (int j = 0; j < k_points; ++j) {
        double sigma = 0.0;
        for (int k = 0; k < k_points; ++k)
            if (weight[k] != 0.0) sigma += weight[k] * occupation(out.energy[k], out.energy[j], in.temperature);
        out.rho[j] = sigma;
    }
    return out;
}

}  // namespace topokpm::analysis
