#include "analysis/reconstruct.hpp"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "runtime/base/error.hpp"

namespace topokpm::analysis {

namespace {

constexpr double kPi = 3.14159265358979323846;

void require_scaling(double scale_a, double scale_b)
{
    TOPOKPM_REQUIRE(std::isfinite(scale_a) && scale_a > 0.0 && std::isfinite(scale_b),
                    "scaling a = ", scale_a, ", b = ", scale_b, " (need a > 0, both finite)");
}

void require_moments(const std::vector<double>& moments, const std::vector<double>& g)
{
    TOPOKPM_REQUIRE(!moments.empty(), "no moments to reconstruct from");
    TOPOKPM_REQUIRE(g.size() == moments.size(), g.size(), " damping factors for ", moments.size(),
                    " moments");
}

/// sqrt(1 - x^2) as (1 - x)(1 + x): no cancellation near |x| = 1. The grid, Clenshaw and
/// the quadrature all use this one expression, so they agree to rounding.
double sqrt_one_minus_x2(double x) { return std::sqrt((1.0 - x) * (1.0 + x)); }

/// FFTW's planner (and fftw_destroy_plan) is not thread-safe; fftw_execute is.
std::mutex& fftw_planner_mutex()
{
    static std::mutex mutex;
    return mutex;
}

/// A buffer from fftw_alloc_real: always SIMD-aligned, so FFTW picks the same algorithm
/// (and gives the same bits) on every call, which std::vector's alignment would not ensure.
class FftwBuffer {
public:
    explicit FftwBuffer(std::size_t n) : data_(fftw_alloc_real(n))
    {
        TOPOKPM_REQUIRE(data_ != nullptr || n == 0, "fftw_alloc_real(", n, ") failed");
        std::fill(data_, data_ + n, 0.0);
    }
    ~FftwBuffer() { fftw_free(data_); }
    FftwBuffer(const FftwBuffer&) = delete;
    FftwBuffer& operator=(const FftwBuffer&) = delete;

    double* data() { return data_; }
    double& operator[](std::size_t i) { return data_[i]; }

private:
    double* data_;
};

/// A one-dimensional real-to-real plan that is destroyed under the planner lock.
class R2rPlan {
public:
    R2rPlan(int n, double* in, double* out, fftw_r2r_kind kind)
    {
        std::lock_guard<std::mutex> lock(fftw_planner_mutex());
        // FFTW_ESTIMATE neither measures nor touches the arrays: planning is cheap.
        plan_ = fftw_plan_r2r_1d(n, in, out, kind, FFTW_ESTIMATE);
        TOPOKPM_REQUIRE(plan_ != nullptr, "FFTW could not plan a real-to-real transform of size ", n);
    }
    ~R2rPlan()
    {
        std::lock_guard<std::mutex> lock(fftw_planner_mutex());
        fftw_destroy_plan(plan_);
    }
    R2rPlan(const R2rPlan&) = delete;
    R2rPlan& operator=(const R2rPlan&) = delete;

    void execute() const { fftw_execute(plan_); }

private:
    fftw_plan plan_ = nullptr;
};

}  // namespace

DampingKernel parse_damping_kernel(const std::string& name)
{
    if (name == "jackson") return DampingKernel::Jackson;
    if (name == "lorentz") return DampingKernel::Lorentz;
    if (name == "none") return DampingKernel::None;
    throw InputError(detail::concat("{kernel} '", name,
                                    "' is not a damping kernel; allowed: jackson, lorentz, none"));
}

std::string to_string(DampingKernel kernel)
{
    switch (kernel) {
    case DampingKernel::Jackson: return "jackson";
    case DampingKernel::Lorentz: return "lorentz";
    case DampingKernel::None: return "none";
    }
    return "unknown";
}

std::vector<double> damping_factors(DampingKernel kernel, int num_moments, double lambda)
{
    TOPOKPM_USER_REQUIRE(num_moments >= 1, "{moments} ", num_moments, " must be >= 1");
    const int M = num_moments;
    std::vector<double> g(static_cast<std::size_t>(M), 1.0);
    switch (kernel) {
    case DampingKernel::Jackson: {
        const double q = kPi / (M + 1);
        const double cot_q = std::cos(q) / std::sin(q);
        for (int n = 0; n < M; ++n)
            g[n] = ((M - n + 1) * std::cos(q * n) + std::sin(q * n) * cot_q) / (M + 1);
        break;
    }
    case DampingKernel::Lorentz: {
        TOPOKPM_USER_REQUIRE(std::isfinite(lambda) && lambda > 0.0, "{lorentz_lambda} ", lambda,
                             " must be a finite number > 0");
        // sinh(l (1 - t)) / sinh(l) = exp(-l t) expm1(-2 l (1 - t)) / expm1(-2 l): the same
        // value without overflowing sinh for large lambda or cancelling for small lambda.
        const double denom = std::expm1(-2.0 * lambda);
        for (int n = 0; n < M; ++n) {
            // 1 - t as (M - n) / M: exact integers, so no relative error grows as n -> M.
            const double t = static_cast<double>(n) / M;
            const double one_minus_t = static_cast<double>(M - n) / M;
            g[n] = std::exp(-lambda * t) * std::expm1(-2.0 * lambda * one_minus_t) / denom;
        }
        break;
    }
    case DampingKernel::None: break;
    }
    return g;
}

Spectrum reconstruct_chebyshev_grid(const std::vector<double>& moments,
                                    const std::vector<double>& g, int num_points,
                                    double scale_a, double scale_b)
{
    require_moments(moments, g);
    require_scaling(scale_a, scale_b);
    const int M = static_cast<int>(moments.size());
    const int K = num_points;
    TOPOKPM_USER_REQUIRE(K >= M, "{energy_points} ", K, " must be >= {moments} (", M, ")");

    // FFTW's REDFT01 computes Y_k = X_0 + 2 sum_{j=1}^{K-1} X_j cos(pi j (k + 1/2) / K)
    // (unnormalised DCT-III), i.e. exactly g_0 mu_0 + 2 sum_n g_n mu_n T_n(x_k) with
    // X_n = g_n mu_n padded with zeros to K: the factor 2 of models.md §4 is FFTW's.
    FftwBuffer in(static_cast<std::size_t>(K));
    FftwBuffer out(static_cast<std::size_t>(K));
    for (int n = 0; n < M; ++n) in[n] = g[n] * moments[n];
    const R2rPlan plan(K, in.data(), out.data(), FFTW_REDFT01);
    plan.execute();

    Spectrum spectrum;
    spectrum.energy.resize(static_cast<std::size_t>(K));
    spectrum.rho.resize(static_cast<std::size_t>(K));
    for (int k = 0; k < K; ++k) {
        const double x = std::cos(kPi * (k + 0.5) / K);
        const int i = K - 1 - k;  // x_k descends with k; store ascending energies
        spectrum.energy[i] = scale_a * x + scale_b;
        spectrum.rho[i] = out[k] / (scale_a * kPi * sqrt_one_minus_x2(x));
    }
    return spectrum;
}

std::vector<double> reconstruct_at(const std::vector<double>& moments,
                                   const std::vector<double>& g,
                                   const std::vector<double>& energies, double scale_a,
                                   double scale_b)
{
    require_moments(moments, g);
    require_scaling(scale_a, scale_b);
    const std::size_t M = moments.size();
    std::vector<double> c(M);
    c[0] = g[0] * moments[0];
    for (std::size_t n = 1; n < M; ++n) c[n] = 2.0 * g[n] * moments[n];

    std::vector<double> rho(energies.size(), 0.0);
    for (std::size_t e = 0; e < energies.size(); ++e) {
        const double x = (energies[e] - scale_b) / scale_a;
        if (!(std::abs(x) < 1.0)) continue;  // outside the spectrum (and NaN): rho = 0
        // Clenshaw: b_n = c_n + 2 x b_{n+1} - b_{n+2}; f = c_0 + x b_1 - b_2.
        double b1 = 0.0, b2 = 0.0;
        for (std::size_t n = M - 1; n >= 1; --n) {
            const double b0 = c[n] + 2.0 * x * b1 - b2;
            b2 = b1;
            b1 = b0;
        }
        const double f = c[0] + x * b1 - b2;
        rho[e] = f / (scale_a * kPi * sqrt_one_minus_x2(x));
    }
    return rho;
}

double integral_chebyshev_grid(const Spectrum& spectrum, double scale_a, double scale_b)
{
    require_scaling(scale_a, scale_b);
    const std::size_t K = spectrum.rho.size();
    TOPOKPM_REQUIRE(K > 0 && spectrum.energy.size() == K, spectrum.energy.size(), " energies for ",
                    K, " values of rho");
    // With f(x) = a pi sqrt(1 - x^2) rho(a x + b) (the Chebyshev series),
    // int rho dE = (1/pi) int_{-1}^{1} f(x) / sqrt(1 - x^2) dx, and K-point Gauss-Chebyshev
    // quadrature (pi/K) sum_k f(x_k) is exact for polynomials of degree <= 2K - 1 >= M - 1:
    // int rho dE = (1/K) sum_k a pi sqrt(1 - x_k^2) rho_k = g_0 mu_0.
    double sum = 0.0;
    for (std::size_t i = 0; i < K; ++i) {
        const std::size_t k = K - 1 - i;  // ascending storage index i holds x_k
        const double x = std::cos(kPi * (static_cast<double>(k) + 0.5) / static_cast<double>(K));
        TOPOKPM_REQUIRE(std::abs((spectrum.energy[i] - scale_b) / scale_a - x) <= 1e-9, "energy ",
                        spectrum.energy[i], " is not point ", k, " of the ", K,
                        "-point Chebyshev grid");
        sum += spectrum.rho[i] * scale_a * kPi * sqrt_one_minus_x2(x);
    }
    return sum / static_cast<double>(K);
}

double integral_trapezoid(const std::vector<double>& energy, const std::vector<double>& rho)
{
    TOPOKPM_REQUIRE(energy.size() == rho.size(), energy.size(), " energies for ", rho.size(),
                    " values of rho");
    double sum = 0.0;
    for (std::size_t i = 1; i < energy.size(); ++i)
        sum += 0.5 * (energy[i] - energy[i - 1]) * (rho[i] + rho[i - 1]);
    return sum;
}

}  // namespace topokpm::analysis
