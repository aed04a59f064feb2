#include "numerics/lanczos/lanczos.hpp"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "numerics/base/counter_rng.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

/// Eigenvalues and last eigenvector components of the m x m tridiagonal (alpha, beta).
void tridiagonal_ritz(const std::vector<double>& alpha, const std::vector<double>& beta, int m,
                      std::vector<double>& theta, std::vector<double>& last_component)
{
    theta.assign(alpha.begin(), alpha.begin() + m);
    std::vector<double> off(beta.begin(), beta.begin() + std::max(m - 1, 0));
    off.resize(std::max(m - 1, 1));
    std::vector<double> z(static_cast<size_t>(m) * m);
    const lapack_int info = LAPACKE_dstev(LAPACK_COL_MAJOR, 'V', m, theta.data(), off.data(), z.data(), m);
    if (info != 0) throw NumericalError(detail::concat("LAPACKE_dstev failed in Lanczos, info = ", info));
    last_component.resize(m);
    for (int i = 0; i < m; ++i) last_component[i] = z[static_cast<size_t>(i) * m + (m - 1)];
}

/// Lanczos in value type T (the operator's precision). The stored vectors are unnormalised,
/// u_j = beta_{j-1} v_j (u_0 = v_0), so one sweep and one vector pass make a step and the
/// blocks only swap roles:
///   sweep:  w = (1/beta_{j-1}) H u_j - (beta_{j-1}/beta_{j-2}) u_{j-1} = H v_j - beta_{j-1} v_{j-1}
///           (scale and beta of the augmented kernel; w overwrites u_{j-1}), with
///           <w|u_j> = beta_{j-1} alpha_j on the fly;
///   pass:   w -= (alpha_j / beta_{j-1}) u_j, ||w||^2 = beta_j^2: w is u_{j+1}.
/// In exact arithmetic this is the textbook recurrence; the norms stay of the size of the
/// betas (no growth like ||H||^j, which would overflow float). Sums are double for both T.
template <class T>
LanczosBounds run_lanczos(const Operator& op, int max_steps, std::uint64_t seed, double relative_margin,
                          double tolerance, const SpectralBounds* enclosure)
{
    // Distributed operators: this rank's rows of the global vectors (identical to the
    // serial ones), local dots and norms summed over the ranks every step.
    const global_index n = op.num_rows();
    const global_index n_global = op.global_rows();
    const int steps = static_cast<int>(std::min<global_index>(max_steps, n_global));

    BasicBlockVector<T> u(n, 1), w(n, 1);
    {
        // Random signs of real and imaginary parts, (+-1 +-i) / sqrt(2 N): a unit vector with
        // a random overlap on every eigenvector, made in the operator's precision without
        // the sines and cosines of random phases (they cost as much as several sweeps).
        // Its own counter stream (the spec reserves 1 and 2 for disorder and vectors).
        const std::uint64_t stream = splitmix64(seed, 3);
        const double amp = 1.0 / std::sqrt(2.0 * static_cast<double>(n_global));
        T* up = u.data();
        global_index local = 0;  // entries are functions of the canonical row (a 2-D tile: several runs)
        for (const auto& [first, end] : op.row_runs()) {
            const global_index len = end - first;
#pragma omp parallel for schedule(static)
            for (global_index i = 0; i < len; ++i) {
                const std::uint64_t bits = splitmix64(stream, static_cast<std::uint64_t>(first + i));
                up[local + i] = T((bits & 1u) ? amp : -amp, (bits & 2u) ? amp : -amp);
            }
            local += len;
        }
    }

    std::vector<double> alpha, beta, theta, last;
    LanczosBounds out;
    DotSums dots;
    double norm_u = 1.0, norm_w = 1.0;  // ||u_j|| = beta_{j-1}, ||u_{j-1}|| = beta_{j-2} (1 for v_0)
    for (int j = 0; j < steps; ++j) {
        const double b_prev = j == 0 ? 0.0 : beta[j - 1];
        op.apply(u, w, AugmentedOps{1.0 / norm_u, 0.0, j == 0 ? 0.0 : -b_prev / norm_w, true}, &dots);
        // dots.yx = <w|u_j> = norm_u (<Hv|v> - b_prev <v_prev|v>) = norm_u alpha_j (v_prev ⟂ v)
        double a = dots.yx[0].real();
        if (!op.dots_reduced()) op.sum_over_ranks(&a, 1);
        a /= norm_u;
        alpha.push_back(a);
        const double c = a / norm_u;
        double norm2 = 0.0;
        T* wp = w.data();
        const T* up = u.data();
#pragma omp parallel for reduction(+ : norm2) schedule(static)
        for (global_index i = 0; i < n; ++i) {
            const complex_double wi = complex_double(wp[i]) - c * complex_double(up[i]);
            wp[i] = T(wi);
            norm2 += std::norm(complex_double(wp[i]));
        }
        op.sum_over_ranks(&norm2, 1);  // no-op unless distributed
        const double b = std::sqrt(norm2);
        out.iterations = j + 1;
        const int m = j + 1;
        if (m >= 2) {  // the m x m tridiagonal eigenproblem costs microseconds next to a sweep
            tridiagonal_ritz(alpha, beta, m, theta, last);
            out.lowest_ritz = theta.front();
            out.highest_ritz = theta.back();
            out.residual_low = std::abs(b * last.front());
            out.residual_high = std::abs(b * last.back());
            const double width = std::max(out.highest_ritz - out.lowest_ritz, 1e-300);
            if (enclosure != nullptr && enclosure->lower >= out.lowest_ritz - relative_margin * width &&
                enclosure->upper <= out.highest_ritz + relative_margin * width) {
                out.enclosure_taken = true;
                out.bounds = *enclosure;
                return out;
            }
            if (std::max(out.residual_low, out.residual_high) <= tolerance * width) break;
        }
        if (b == 0.0 || m == steps) {
            if (m == 1) {  // 1x1 operator or an eigenvector start: one Ritz value, exact
                out.lowest_ritz = out.highest_ritz = a;
            }
            break;
        }
        beta.push_back(b);
        // w is u_{j+1}; u_j becomes the block the next sweep overwrites.
        u.swap(w);
        norm_w = norm_u;
        norm_u = b;
    }
    const double width = out.highest_ritz - out.lowest_ritz;
    if (!(width > 0.0) && out.highest_ritz == 0.0 && out.lowest_ritz == 0.0)
        throw NumericalError("Lanczos found a zero operator: no spectral width to scale by");
    const double margin = relative_margin * std::max(width, 1e-12 * std::abs(out.highest_ritz));
    out.bounds.lower = out.lowest_ritz - out.residual_low - margin;
    out.bounds.upper = out.highest_ritz + out.residual_high + margin;
    return out;
}

}  // namespace

LanczosBounds lanczos_bounds(const Operator& op, int max_steps, std::uint64_t seed, double relative_margin,
                             double tolerance, const SpectralBounds* enclosure)
{
    TOPOKPM_USER_REQUIRE(max_steps >= 2, "{lanczos_steps} ", max_steps, ": must be >= 2");
    // The vectors in the operator's precision: a single-precision operator sweeps its own
    // blocks (rounding double blocks into float ones every step allocated two blocks per step).
    if (op.precision() == Precision::Single) return run_lanczos<complex_single>(op, max_steps, seed, relative_margin,
                                                                                tolerance, enclosure);
    return run_lanczos<complex_double>(op, max_steps, seed, relative_margin, tolerance, enclosure);
}

}  // namespace topokpm::numerics
