#include "numerics/sparse_direct/green.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "runtime/base/error.hpp"

namespace topokpm::sparse_direct {
namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double norm2(const std::vector<complex_double>& v)
{
    double s = 0.0;
    for (const complex_double& a : v) s += std::norm(a);
    return std::sqrt(s);
}

/// Restarted flexible GMRES(kGreenGmresBasis), right-preconditioned by the factors `lu` holds (of
/// A - z' I, any z'): solves (A - z I) x = b (one column of n) from the given x, keeping x
/// whenever a cycle lowers the componentwise backward error (SparseLU::residual at z), until
/// it is <= target or a cycle gains nothing. Returns the backward error; adds the steps to
/// `steps`.
double gmres_polish(const SparseLU& lu, complex_double shift, const complex_double* b, complex_double* x, double target,
                    int& steps)
{
    const global_index n = lu.size();
    const std::size_t nn = static_cast<std::size_t>(n);
    constexpr int m = kGreenGmresBasis;
    std::vector<complex_double> v((m + 1) * nn), zs(m * nn), r(nn), w(nn), zero(nn, 0.0), trial(nn);
    SolveOptions once;
    once.max_refinement_steps = 0;
    double best = lu.residual(shift, b, x, r.data()).first;
    for (int cycle = 0; cycle < kGreenGmresCycles && best > target; ++cycle) {
        lu.residual(shift, b, x, r.data());
        const double beta = norm2(r);
        if (beta == 0.0) break;
        for (std::size_t i = 0; i < nn; ++i) v[i] = r[i] / beta;
        std::vector<complex_double> h((m + 1) * m, 0.0), sn(m), g(m + 1, 0.0);
        std::vector<double> cs(m);
        g[0] = beta;
        int k = 0;
        while (k < m) {
            complex_double* z = zs.data() + k * nn;
            lu.solve(v.data() + k * nn, z, 1, once);        // z_k = P^-1 v_k (kept: flexible GMRES)
            lu.residual(shift, zero.data(), z, w.data());   // w = -(A - z I) z_k
            for (complex_double& a : w) a = -a;
            for (int j = 0; j <= k; ++j) {  // modified Gram-Schmidt
                complex_double hjk = 0.0;
                for (std::size_t i = 0; i < nn; ++i) hjk += std::conj(v[j * nn + i]) * w[i];
                for (std::size_t i = 0; i < nn; ++i) w[i] -= hjk * v[j * nn + i];
                h[j + k * (m + 1)] = hjk;
            }
            const double wnorm = norm2(w);
            h[k + 1 + k * (m + 1)] = wnorm;
            if (wnorm > 0.0)
                for (std::size_t i = 0; i < nn; ++i) v[(k + 1) * nn + i] = w[i] / wnorm;
            for (int j = 0; j < k; ++j) {  // the previous rotations on column k
                const complex_double a = h[j + k * (m + 1)], c = h[j + 1 + k * (m + 1)];
                h[j + k * (m + 1)] = cs[j] * a + sn[j] * c;
                h[j + 1 + k * (m + 1)] = -std::conj(sn[j]) * a + cs[j] * c;
            }
            const complex_double a = h[k + k * (m + 1)], c = h[k + 1 + k * (m + 1)];
            const double d = std::hypot(std::abs(a), std::abs(c));
            cs[k] = d == 0.0 ? 1.0 : std::abs(a) / d;
            sn[k] = d == 0.0 ? 0.0 : (std::abs(a) == 0.0 ? complex_double(1.0) : a / std::abs(a)) * std::conj(c) / d;
            h[k + k * (m + 1)] = cs[k] * a + sn[k] * c;
            h[k + 1 + k * (m + 1)] = 0.0;
            g[k + 1] = -std::conj(sn[k]) * g[k];
            g[k] = cs[k] * g[k];
            ++k;
            if (wnorm == 0.0 || std::abs(g[k]) <= kEps * beta) break;
        }
        // y = R^-1 g, x + Z y (the z_k as applied: the preconditioner's rounding does not
        // enter the update, so the residual can fall to the rounding of H - z itself).
        std::vector<complex_double> y(g.begin(), g.begin() + k);
        for (int i = k - 1; i >= 0; --i) {
            for (int j = i + 1; j < k; ++j) y[i] -= h[i + j * (m + 1)] * y[j];
            y[i] /= h[i + i * (m + 1)];
        }
        std::copy(x, x + nn, trial.begin());
        for (int j = 0; j < k; ++j)
            for (std::size_t i = 0; i < nn; ++i) trial[i] += y[j] * zs[j * nn + i];
        steps += k;
        const double e = lu.residual(shift, b, trial.data(), r.data()).first;
        if (!(e < best)) break;
        best = e;
        std::copy(trial.begin(), trial.end(), x);
    }
    return best;
}

}  // namespace

double green_workspace_bytes(global_index n, int block)
{
    return 16.0 * static_cast<double>(n) * (2.0 * std::max(block, 1) + 1.0 + (2.0 * kGreenGmresBasis + 6.0));
}

GreenLdos green_ldos(SparseLU& lu, const std::vector<global_index>& rows, const std::vector<double>& energies,
                     const GreenLdosOptions& options)
{
    TOPOKPM_USER_REQUIRE(options.eta > 0.0 && std::isfinite(options.eta), "{green_eta} ", options.eta,
                         ": must be > 0 and finite (units of t)");
    TOPOKPM_USER_REQUIRE(options.block >= 1, "{green_block} ", options.block, ": must be >= 1");
    const global_index n = lu.size();
    for (const global_index r : rows)
        TOPOKPM_USER_REQUIRE(r >= 0 && r < n, "{ldos} row ", r, ": must be in 0..", n - 1);
    for (const double e : energies) TOPOKPM_USER_REQUIRE(std::isfinite(e), "energy ", e, ": must be finite");

    const std::size_t nr = rows.size(), ne = energies.size();
    GreenLdos out;
    out.rho.assign(nr * ne, 0.0);
    if (nr == 0) return out;
    const int block = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(options.block), nr));
    std::vector<complex_double> b(static_cast<std::size_t>(n) * block), x(b.size()), r(static_cast<std::size_t>(n));
    SolveOptions first_guess = options.solve;
    first_guess.max_refinement_steps = 0;
    for (std::size_t k = 0; k < ne; ++k) {
        if (options.stop && options.stop()) {
            out.energies_done = static_cast<int>(k);
            return out;
        }
        const FactorReport f = lu.factorize({energies[k], options.eta}, options.factor);
        out.factor_seconds += f.seconds;
        out.tiny_pivots += f.tiny_pivots;
        bool preconditioner = false;  // lu holds the factors of H - z' (see below), not of H - z
        for (std::size_t r0 = 0; r0 < nr; r0 += static_cast<std::size_t>(block)) {
            const int w = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(block), nr - r0));
            std::fill(b.begin(), b.end(), complex_double(0.0, 0.0));
            for (int c = 0; c < w; ++c) b[static_cast<std::size_t>(rows[r0 + c] + c * n)] = 1.0;
            const auto t_solve = std::chrono::steady_clock::now();
            // Once lu holds the preconditioner, its solve is only GMRES's first guess.
            const SolveReport s = lu.solve(b.data(), x.data(), w, preconditioner ? first_guess : options.solve);
            out.max_refinement_steps = std::max(out.max_refinement_steps, s.refinement_steps);
            double backward_error = preconditioner ? INFINITY : s.backward_error;
            if (backward_error > kGreenPolishBackwardError) {
                // Refinement stalled: a near-singular energy. GMRES against H - z on the
                // columns that need it, preconditioned by the factors of H - z' with
                // Im z' = max(eta, kGreenPreconditionerEta ||H - z||_1): no pivot of those is
                // tiny, and they differ from H - z only in the directions of the eigenvalues
                // within about Im z' of E, which GMRES removes in about as many steps.
                const complex_double z(energies[k], options.eta);
                const double eta_p = std::max(options.eta, kGreenPreconditionerEta * f.norm1);
                if (!preconditioner && eta_p > options.eta) {
                    const FactorReport fp = lu.factorize({energies[k], eta_p}, options.factor);
                    out.factor_seconds += fp.seconds;
                    preconditioner = true;
                    ++out.preconditioned_energies;
                }
                backward_error = 0.0;
                for (int c = 0; c < w; ++c) {
                    complex_double* bc = b.data() + static_cast<std::size_t>(c) * n;
                    complex_double* xc = x.data() + static_cast<std::size_t>(c) * n;
                    double e = lu.residual(z, bc, xc, r.data()).first;
                    if (e > kGreenPolishBackwardError) {
                        e = gmres_polish(lu, z, bc, xc, options.solve.target_backward_error, out.gmres_steps);
                        ++out.gmres_solves;
                    }
                    backward_error = std::max(backward_error, e);
                }
            }
            out.solve_seconds += seconds_since(t_solve);
            out.worst_backward_error = std::max(out.worst_backward_error, backward_error);
            // Forward error of x from the componentwise backward error w: ||dA||_2 <= w ||A||_1
            // (|A| symmetric), ||A^-1||_2 <= 1/eta and ||x|| >= 1/||A||_1, so
            // ||dx|| / ||x|| <= 2 w ||A||_1 / eta, and rho ~ ||x||^2 to twice that.
            out.worst_error_bound = std::max(out.worst_error_bound, 4.0 * backward_error * f.norm1 / options.eta);
            // G = -(H - z)^-1, x = (H - z)^-1 e_j: -Im G_jj / pi = Im x_j / pi, and with
            // x^H (H - z) x = x^H e_j = conj(x_j), whose imaginary part is -eta ||x||^2 (H
            // Hermitian): Im x_j = eta ||x||^2. The norm form is >= 0 by construction and at
            // least as accurate (its relative error 2 ||dx||/||x||, Im x_j's ||dx|| / (eta ||x||^2),
            // and eta ||x|| <= 1).
            for (int c = 0; c < w; ++c) {
                const complex_double* xc = x.data() + static_cast<std::size_t>(c) * n;
                double norm2 = 0.0;
                for (global_index i = 0; i < n; ++i) norm2 += std::norm(xc[i]);
                out.rho[(r0 + c) * ne + k] = options.eta * norm2 / M_PI;
            }
        }
        if (options.progress) options.progress(static_cast<int>(k + 1), static_cast<int>(ne), f);
    }
    out.energies_done = static_cast<int>(ne);
    return out;
}

}  // namespace topokpm::sparse_direct
