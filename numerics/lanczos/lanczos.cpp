#include "numerics/lanczos/lanczos.hpp"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "numerics/base/counter_rng.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

/// True when the enclosure lies within relative_margin (hi - lo) of [lo, hi], values inside
/// the spectrum's hull (Ritz values, Rayleigh quotients): no Lanczos bound can be tighter.
bool enclosure_within_margin(const SpectralBounds& enclosure, double lo, double hi, double relative_margin)
{
    const double width = std::max(hi - lo, 1e-300);
    return enclosure.lower >= lo - relative_margin * width && enclosure.upper <= hi + relative_margin * width;
}

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

/// The Lanczos start vector into `u` (one column): random signs of real and imaginary
/// parts, (+-1 +-i) / sqrt(2 N), a unit vector with a random overlap on every eigenvector,
/// made in the operator's precision without the sines and cosines of random phases (they
/// cost as much as several sweeps). Its own counter stream (the spec reserves 1 and 2 for
/// disorder and vectors); entries are functions of the canonical row (a 2-D tile: several runs).
template <class T>
void random_sign_start(const Operator& op, std::uint64_t seed, BasicBlockVector<T>& u)
{
    const std::uint64_t stream = splitmix64(seed, 3);
    const double amp = 1.0 / std::sqrt(2.0 * static_cast<double>(op.global_rows()));
    T* up = u.data();
    global_index local = 0;
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
    random_sign_start(op, seed, u);

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
            if (enclosure != nullptr &&
                enclosure_within_margin(*enclosure, out.lowest_ritz, out.highest_ritz, relative_margin)) {
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

/// Lanczos from Chebyshev moments (used when an enclosure is given, see the header): the
/// fused KPM sweep y = 2 Ht x - y with <x|x> and <y|x> on the fly yields two moments
/// mu_n = <v|T_n(Ht)|v> per sweep and nothing else touches the vectors; the Jacobi matrix
/// of v's spectral measure, which is the Lanczos tridiagonal of the same start vector, comes
/// from the moments (jacobi_from_chebyshev_moments). Ht = (H - b) / a puts the enclosure in
/// [-1/1.01, 1/1.01], so the recurrence stays bounded (|mu_n| <= mu_0) and the modified
/// moments are well conditioned. A Lanczos step was a sweep and a vector pass (read two
/// blocks, write one); here it is the sweep alone.
/// Extremal Ritz values of the Jacobi matrix of m = mu.size() / 2 steps (lo, hi) and of
/// m - 1 steps with their residuals sqrt(beta_{m-1}) |z_last| (scaled units); not valid when
/// the moments are exhausted (or m < 2).
struct Extremes {
    bool valid = false;
    double lo = 0, hi = 0, prev_lo = 0, prev_hi = 0, res_low = 0, res_high = 0;
};
Extremes moment_extremes(const std::vector<double>& mu, double rounding)
{
    Extremes e;
    const JacobiMatrix jac = jacobi_from_chebyshev_moments(mu, rounding);
    const int m = static_cast<int>(jac.alpha.size());
    if (jac.exhausted || m < 2) return e;
    std::vector<double> theta, last;
    const std::vector<double> off = jac.off_diagonal();
    tridiagonal_ritz(jac.alpha, off, m, theta, last);
    e.lo = theta.front();
    e.hi = theta.back();
    tridiagonal_ritz(jac.alpha, off, m - 1, theta, last);
    const double r = std::sqrt(jac.beta[m - 1]);
    e.prev_lo = theta.front();
    e.prev_hi = theta.back();
    e.res_low = r * std::abs(last.front());
    e.res_high = r * std::abs(last.back());
    e.valid = true;
    return e;
}

template <class T>
std::optional<LanczosBounds> run_moment_lanczos(const Operator& op, int max_sweeps, bool last_is_answer,
                                                std::uint64_t seed, double relative_margin, double tolerance,
                                                const SpectralBounds& enclosure)
{
    const global_index n = op.num_rows();
    const double a = 0.505 * (enclosure.upper - enclosure.lower);
    const double b = 0.5 * (enclosure.upper + enclosure.lower);
    // Moments in float vectors carry relative errors of some float epsilons; a coefficient
    // beta_k below that level is rounding: v's measure is exhausted (a tiny system).
    const double rounding = 100.0 * std::numeric_limits<typename T::value_type>::epsilon();

    BasicBlockVector<T> x(n, 1), y(n, 1);
    random_sign_start(op, seed, x);
    const double noise = 10.0 * std::numeric_limits<typename T::value_type>::epsilon();
    std::vector<double> mu, noisy, sensitivity;
    LanczosBounds out;
    // The moments of a sweep: mu_2s = 2 <v_s|v_s> - mu_0, mu_2s+1 = 2 Re<v_s+1|v_s> - mu_1.
    auto record = [&](const DotSums& dots) {
        double d[2] = {dots.xx[0], dots.yx[0].real()};
        if (!op.dots_reduced()) op.sum_over_ranks(d, 2);
        if (mu.empty()) {
            mu = {d[0], d[1]};
        } else {
            mu.push_back(2.0 * d[0] - mu[0]);
            mu.push_back(2.0 * d[1] - mu[1]);
        }
    };
    // After sweep s (the moments mu_0 .. mu_2s+1): the answer, the recurrence instead
    // (nullopt), or on to the next sweep.
    enum class Verdict { Next, Answer, Recurrence };
    auto judge = [&](int s) -> Verdict {
        out.iterations = s + 1;
        if (s < 1) return Verdict::Next;
        // J_m (all sweeps) for the enclosure test; J_{m-1} with beta_{m-1} for the residuals
        // (J_m's residual needs mu_2m). The same from moments perturbed at their rounding
        // level: where the extremal Ritz values or residuals move by more than 1 % of the
        // margin, the moments no longer determine them (the map is ill-conditioned when the
        // spectrum fills the enclosure only partly, or for few distinct eigenvalues).
        const Extremes e = moment_extremes(mu, rounding);
        noisy.resize(mu.size());
        for (size_t l = 0; l < mu.size(); ++l)
            noisy[l] = mu[l] + noise * mu[0] * ((splitmix64(seed, l) & 1u) ? 1.0 : -1.0);
        const Extremes f = moment_extremes(noisy, rounding);
        if (!e.valid || !f.valid) return Verdict::Recurrence;  // exhausted: the recurrence terminates exactly
        const double lo = a * e.lo + b, hi = a * e.hi + b;
        const double tol = 0.01 * relative_margin * (e.hi - e.lo);
        const double moved = std::max({std::abs(e.lo - f.lo), std::abs(e.hi - f.hi), std::abs(e.prev_lo - f.prev_lo),
                                       std::abs(e.prev_hi - f.prev_hi), std::abs(e.res_low - f.res_low),
                                       std::abs(e.res_high - f.res_high), 1e-300});
        if (!(moved <= tol)) return Verdict::Recurrence;
        // The sensitivity grows geometrically with the steps (by 1/c^2 and more per step
        // when the spectrum fills a fraction c of the enclosure: ti's Gershgorin discs are
        // 1.6x its spectrum, a factor 5 per step): where the growth of the last three steps
        // would carry it past the tolerance within 20 more, the recurrence takes over now
        // rather than after those sweeps (judged above 100 x the noise: below, the changes
        // are rounding of the rounding).
        sensitivity.push_back(moved);
        if (sensitivity.size() >= 4 && moved > 100.0 * noise) {
            const double rate = std::cbrt(moved / sensitivity[sensitivity.size() - 4]);
            if (rate > 1.0 && moved * std::pow(rate, 20) > tol) return Verdict::Recurrence;
        }
        // Ritz values lie in the hull of the measure, inside the enclosure.
        const double slack = 1e-6 * (enclosure.upper - enclosure.lower);
        if (!(lo >= enclosure.lower - slack && hi <= enclosure.upper + slack)) return Verdict::Recurrence;
        if (enclosure_within_margin(enclosure, lo, hi, relative_margin)) {
            out.lowest_ritz = lo;
            out.highest_ritz = hi;
            out.enclosure_taken = true;
            out.bounds = enclosure;
            return Verdict::Answer;
        }
        out.lowest_ritz = a * e.prev_lo + b;
        out.highest_ritz = a * e.prev_hi + b;
        out.residual_low = a * e.res_low;
        out.residual_high = a * e.res_high;
        if (std::max(out.residual_low, out.residual_high) <=
                tolerance * std::max(out.highest_ritz - out.lowest_ritz, 1e-300) ||
            (last_is_answer && s + 1 == max_sweeps)) {
            const double margin = relative_margin * (out.highest_ritz - out.lowest_ritz);
            // The enclosure contains the spectrum: a Lanczos bound beyond it is only looser.
            out.bounds.lower = std::max(out.lowest_ritz - out.residual_low - margin, enclosure.lower);
            out.bounds.upper = std::min(out.highest_ritz + out.residual_high + margin, enclosure.upper);
            return Verdict::Answer;
        }
        return Verdict::Next;
    };
    // Sweep 0: y = Ht v_0 (mu_0, mu_1); sweep s: y = 2 Ht v_s - v_{s-1} = v_{s+1} with
    // <v_s|v_s> and <v_{s+1}|v_s> (mu_2s, mu_2s+1), as in ChebyshevRecurrence::step. Where
    // the operator fuses two sweeps per pass over memory (graphene's stencil at R = 1), sweeps
    // s and s + 1 run as one apply_two_steps (as the KPM pairs them) and are judged in order:
    // the answer is the one-sweep loop's (the same moments to rounding), at the cost of one
    // extra sweep when it comes after the first of a pair (iterations counts the sweeps the
    // answer used).
    const bool pairs = op.fused_steps(1) >= 2;
    DotSums dots, second;
    for (int s = 0; s < max_sweeps;) {
        Verdict v = Verdict::Next;
        if (s >= 1 && pairs && s + 2 <= max_sweeps) {
            // y becomes v_{s+1}, then x becomes v_{s+2}: x stays the current block.
            op.apply_two_steps(x, y, AugmentedOps{2.0 / a, b, -1.0, true}, &dots, &second);
            record(dots);
            v = judge(s);
            if (v == Verdict::Next) {
                record(second);
                v = judge(s + 1);
            }
            s += 2;
        } else {
            op.apply(x, y, AugmentedOps{(s == 0 ? 1.0 : 2.0) / a, b, s == 0 ? 0.0 : -1.0, true}, &dots);
            record(dots);
            x.swap(y);
            v = judge(s);
            s += 1;
        }
        if (v == Verdict::Answer) return out;
        if (v == Verdict::Recurrence) return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace

std::vector<double> JacobiMatrix::off_diagonal() const
{
    std::vector<double> off(beta.size() > 1 ? beta.size() - 1 : 0);
    for (size_t k = 1; k < beta.size(); ++k) off[k - 1] = std::sqrt(beta[k]);
    return off;
}

JacobiMatrix jacobi_from_chebyshev_moments(const std::vector<double>& mu, double rounding)
{
    // Gautschi's modified Chebyshev algorithm (Orthogonal Polynomials, 2004, §2.1.7) with the
    // monic Chebyshev polynomials p_0 = 1, p_l = 2^{1-l} T_l (a_l = 0, b_1 = 1/2, b_l = 1/4) as
    // the auxiliary basis. Its mixed moments sigma_{k,l} = int pi_k p_l (pi_k: the measure's
    // monic orthogonal polynomials) shrink like 4^{-k} and 2^{-l}; here each row is divided
    // by its diagonal and each column taken in the T_l basis,
    //     r_{k,l} = sigma_{k,l} / sigma_{k,k} * (c_k / c_l),  c_0 = 1, c_l = 2^{1-l},
    // which are O(1) for any length. Substituting into Gautschi's recurrence
    //     sigma_{k,l} = sigma_{k-1,l+1} - alpha_{k-1} sigma_{k-1,l} - beta_{k-1} sigma_{k-2,l} + b_l sigma_{k-1,l-1}
    // (beta_{k-1} = sigma_{k-1,k-1} / sigma_{k-2,k-2}) and multiplying by c_{k-1} / (c_l sigma_{k-1,k-1}):
    //     q_l = r_{k-1,l+1} / 2 - alpha_{k-1} r_{k-1,l} - g_k r_{k-2,l} + r_{k-1,l-1} / 2,
    //     g_k = c_{k-1} / c_{k-2} (0 for k = 1, 1 for k = 2, 1/2 after; b_l c_{l-1} / c_l = 1/2),
    //     r_{k,l} = q_l / q_k,  beta_k = q_k c_k / c_{k-1},
    //     alpha_k = r_{k,k+1} / 2 - (c_k / c_{k-1}) r_{k-1,k},
    // with r_{0,l} = mu_l / mu_0, alpha_0 = mu_1 / mu_0, beta_0 = mu_0. The algorithm is well
    // conditioned for measures on [-1, 1] (Gautschi, §2.1.7.1); O(L^2) for L moments.
    JacobiMatrix jac;
    const int num = static_cast<int>(mu.size());
    if (num < 1 || !(mu[0] > 0.0)) return jac;
    jac.beta.push_back(mu[0]);
    if (num < 2) return jac;
    std::vector<double> older(num, 0.0), prev(num), cur(num, 0.0);
    for (int l = 0; l < num; ++l) prev[l] = mu[l] / mu[0];
    jac.alpha.push_back(prev[1]);
    auto c_ratio = [](int k) { return k >= 2 ? 0.5 : 1.0; };  // c_k / c_{k-1}
    for (int k = 1; 2 * k + 1 <= num; ++k) {
        // Row k for l = k .. num-k-1 (row k-1 is known for l = k-1 .. num-k).
        const double g = k == 1 ? 0.0 : c_ratio(k - 1);
        const double am = jac.alpha[k - 1];
        for (int l = k; l <= num - k - 1; ++l)
            cur[l] = 0.5 * prev[l + 1] - am * prev[l] - g * older[l] + 0.5 * prev[l - 1];
        const double qk = cur[k];
        const double beta_k = qk * c_ratio(k);
        if (!(beta_k > rounding) || !std::isfinite(beta_k)) {
            jac.beta.push_back(std::isfinite(beta_k) ? std::max(beta_k, 0.0) : 0.0);
            jac.exhausted = true;
            return jac;
        }
        jac.beta.push_back(beta_k);
        for (int l = k; l <= num - k - 1; ++l) cur[l] /= qk;
        if (k + 1 > num - k - 1) break;  // alpha_k needs r_{k,k+1}: one moment more
        jac.alpha.push_back(0.5 * cur[k + 1] - c_ratio(k) * prev[k]);
        std::swap(older, prev);
        std::swap(prev, cur);
    }
    return jac;
}

LanczosBounds lanczos_bounds(const Operator& op, int max_steps, std::uint64_t seed, double relative_margin,
                             double tolerance, const SpectralBounds* enclosure, const SpectralBounds* inside)
{
    TOPOKPM_USER_REQUIRE(max_steps >= 2, "{lanczos_steps} ", max_steps, ": must be >= 2");
    if (enclosure != nullptr && inside != nullptr && inside->upper > inside->lower &&
        enclosure_within_margin(*enclosure, inside->lower, inside->upper, relative_margin)) {
        LanczosBounds out;
        out.lowest_ritz = inside->lower;
        out.highest_ritz = inside->upper;
        out.enclosure_taken = true;
        out.bounds = *enclosure;
        return out;
    }
    // The vectors in the operator's precision: a single-precision operator sweeps its own
    // blocks (rounding double blocks into float ones every step allocated two blocks per step).
    const bool single = op.precision() == Precision::Single;
    // The moment form while the moments determine the coefficients well: up to N / 4 steps
    // (jacobi_from_chebyshev_moments loses digits as the step count nears the number of
    // distinct eigenvalues the start vector sees) and while its sensitivity test passes (a
    // loose enclosure fails it within a few steps: ti after 5, see run_moment_lanczos).
    // Otherwise the three-term recurrence runs from the start; its blocks take the moment
    // form's pages (allocate_pages). A run undecided after max_steps ends so in both forms.
    const global_index n = op.global_rows();
    if (enclosure != nullptr && std::isfinite(enclosure->lower) && std::isfinite(enclosure->upper) &&
        enclosure->upper > enclosure->lower && n >= 16) {
        const bool capped = n / 4 < max_steps + 1;  // max_steps pairs with residuals take max_steps + 1 sweeps
        const int sweeps = capped ? static_cast<int>(n / 4) : max_steps + 1;
        std::optional<LanczosBounds> lb =
            single ? run_moment_lanczos<complex_single>(op, sweeps, !capped, seed, relative_margin, tolerance, *enclosure)
                   : run_moment_lanczos<complex_double>(op, sweeps, !capped, seed, relative_margin, tolerance, *enclosure);
        if (lb) return *lb;
    }
    return single ? run_lanczos<complex_single>(op, max_steps, seed, relative_margin, tolerance, enclosure)
                  : run_lanczos<complex_double>(op, max_steps, seed, relative_margin, tolerance, enclosure);
}

}  // namespace topokpm::numerics
