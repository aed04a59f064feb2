#include "numerics/sparse_direct/shift_invert.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "numerics/eigs/columns.hpp"
#include "numerics/eigs/subspace.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::sparse_direct {
namespace {

using numerics::Columns;
constexpr double kEps = std::numeric_limits<double>::epsilon();

/// Orthonormalizes the columns in place (numerics::orthonormalize_by_columns); a column
/// that keeps less than 1e-8 of its norm lies in the span of the earlier ones and is
/// dropped (the two Lanczos runs may share vectors when one side of sigma has fewer than k).
void orthonormalize_dropping(const Operator& h, Columns& u)
{
    const std::vector<int> dependent = numerics::orthonormalize_by_columns(h, u.n, u.data.data(), u.cols, 1e-8);
    int kept = 0;
    for (int j = 0, d = 0; j < u.cols; ++j) {
        if (d < static_cast<int>(dependent.size()) && dependent[d] == j) {
            ++d;
            continue;
        }
        if (kept != j) std::copy_n(u.col(j), u.n, u.col(kept));
        ++kept;
    }
    u.cols = kept;
    u.data.resize(static_cast<std::size_t>(u.n) * kept);
}

/// Rayleigh-Ritz of H on span(u) (u orthonormal): u becomes the Ritz vectors, ascending
/// Ritz values returned. Applies h to u.cols vectors (counted in matvecs).
std::vector<double> rayleigh_ritz(const Operator& h, Columns& u, std::int64_t& matvecs)
{
    Columns hu(u.n, u.cols);
    numerics::apply_columns(h, u, hu);
    matvecs += u.cols;
    numerics::RitzPairs ritz = numerics::rayleigh_ritz(h, u, hu, false);
    u = std::move(ritz.vectors);
    return ritz.values;
}

/// Backward error of one solve with a fixed pseudo-random right-hand side: small when the
/// factors (with any replaced pivots) still solve the system after refinement.
double probe_backward_error(const ShiftInvertSolver& lu)
{
    const global_index n = lu.size;
    std::vector<complex_double> b(static_cast<std::size_t>(n)), x(b.size());
    for (global_index i = 0; i < n; ++i) b[i] = std::polar(1.0, 2.0 * M_PI * std::fmod(0.6180339887 * (i + 1), 1.0));
    return lu.solve(b.data(), x.data(), 1).backward_error;
}

/// Global row index of each of h's local rows.
std::vector<global_index> global_rows_of(const Operator& h)
{
    std::vector<global_index> g;
    g.reserve(static_cast<std::size_t>(h.num_rows()));
    for (const auto& [b, e] : h.row_runs())
        for (global_index i = b; i < e; ++i) g.push_back(i);
    TOPOKPM_REQUIRE(static_cast<global_index>(g.size()) == h.num_rows(), "row runs of ", g.size(), " rows for ",
                    h.num_rows());
    return g;
}

}  // namespace

ShiftInvertSolver solver_of(SparseLU& lu)
{
    ShiftInvertSolver s;
    s.size = lu.size();
    s.factorize = [&lu](complex_double z, const FactorOptions& o) { return lu.factorize(z, o); };
    s.solve = [&lu](const complex_double* b, complex_double* x, int nrhs) { return lu.solve(b, x, nrhs); };
    s.factor_nonzeros = static_cast<double>(lu.factor_nonzeros());
    s.factor_memory_bytes = lu.factor_memory_bytes();
    return s;
}

OperatorCost ShiftInvertOperator::cost() const
{
    OperatorCost c;
    c.nonzeros = solver_.factor_nonzeros;
    c.storage_bytes = solver_.factor_memory_bytes;
    c.matrix_bytes = 16.0 * c.nonzeros;
    return c;
}

SolveReport ShiftInvertOperator::solve_rows(const complex_double* x, complex_double* y, int r) const
{
    const global_index n = solver_.size, nl = h_.num_rows();
    const std::vector<global_index> rows = global_rows_of(h_);
    // This rank's rows into full vectors, summed over the ranks (disjoint rows: exact).
    std::vector<complex_double> b(static_cast<std::size_t>(n) * r, complex_double(0.0, 0.0)), t(b.size());
    for (int c = 0; c < r; ++c)
        for (global_index i = 0; i < nl; ++i) b[rows[i] + c * n] = x[i + c * nl];
    if (h_.num_ranks() > 1) h_.sum_over_ranks(reinterpret_cast<double*>(b.data()), 2 * b.size());
    const SolveReport s = solver_.solve(b.data(), t.data(), r);
    for (int c = 0; c < r; ++c)
        for (global_index i = 0; i < nl; ++i) y[i + c * nl] = t[rows[i] + c * n];
    worst_backward_error_ = std::max(worst_backward_error_, s.backward_error);
    solves_ += r;
    return s;
}

void ShiftInvertOperator::do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const
{
    const global_index nl = h_.num_rows();
    const int r = x.num_cols();
    std::vector<complex_double> b(static_cast<std::size_t>(nl) * r), t(b.size());
    for (global_index i = 0; i < nl; ++i)
        for (int c = 0; c < r; ++c) b[static_cast<std::size_t>(i + c * nl)] = x(i, c);
    solve_rows(b.data(), t.data(), r);
    if (dots) dots->reset(r);
    for (global_index i = 0; i < nl; ++i)
        for (int c = 0; c < r; ++c) {
            complex_double v = ops.scale * (t[static_cast<std::size_t>(i + c * nl)] - ops.shift * x(i, c));
            if (ops.beta != 0.0) v += ops.beta * y(i, c);
            y(i, c) = v;
            if (dots) {
                dots->xx[c] += std::norm(x(i, c));
                dots->yx[c] += std::conj(v) * x(i, c);
            }
        }
}

numerics::EigenPairs shift_invert_eigenpairs(const Operator& h, SparseLU& lu, const numerics::EigenRequest& request,
                                             const ShiftInvertOptions& options, ShiftInvertReport& report)
{
    return shift_invert_eigenpairs(h, solver_of(lu), request, options, report);
}

numerics::EigenPairs shift_invert_eigenpairs(const Operator& h, const ShiftInvertSolver& lu,
                                             const numerics::EigenRequest& request, const ShiftInvertOptions& options,
                                             ShiftInvertReport& report)
{
    using numerics::EigenRequest;
    const global_index n = h.global_rows();
    numerics::validate(request, n);
    TOPOKPM_USER_REQUIRE(request.kind == EigenRequest::Kind::Shift,
                         "{eig_method} shift-invert finds the eigenvalues nearest a shift ({eig_shift} with {eig_count})");
    TOPOKPM_USER_REQUIRE(lu.size == n, "{eig_method} shift-invert: a factorization of ", lu.size,
                         " rows for an operator of ", n);
    const global_index nl = h.num_rows();
    const std::vector<global_index> grow = global_rows_of(h);
    const double sigma = request.shift, tol = request.tolerance;
    report = {};

    // One factorization; a singular one (sigma an eigenvalue to rounding: pivots replaced and
    // refinement cannot recover the solution) is reported and moved off by delta.
    FactorReport f = lu.factorize(sigma, options.factor);
    report.tiny_pivots = f.tiny_pivots;
    report.norm1 = f.norm1;
    report.factor_seconds = f.seconds;
    report.factored_shift = sigma;
    const double s_norm = std::max(f.norm1, std::numeric_limits<double>::min());
    if (f.tiny_pivots > 0 && !(probe_backward_error(lu) <= std::sqrt(kEps))) {
        report.factored_shift = sigma + 1e-6 * s_norm;
        f = lu.factorize(report.factored_shift, options.factor);
        report.factor_seconds += f.seconds;
    }
    const ShiftInvertOperator op(h, lu);

    // |theta_max| from a few power steps, for the rounding floor of the Lanczos tolerance.
    double theta_max = 0.0;
    {
        BlockVector x(nl, 1), y(nl, 1);
        for (global_index i = 0; i < nl; ++i)
            x(i, 0) = std::polar(1.0, 2.0 * M_PI * std::fmod(0.7548776662 * (grow[i] + 1), 1.0));
        for (int step = 0; step < 6; ++step) {
            op.apply(x, y, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
            double sums[2] = {0.0, 0.0};  // xx, yy
            for (global_index i = 0; i < nl; ++i) {
                sums[0] += std::norm(x(i, 0));
                sums[1] += std::norm(y(i, 0));
            }
            h.sum_over_ranks(sums, 2);
            theta_max = std::sqrt(sums[1] / sums[0]);
            const double inv = 1.0 / std::sqrt(sums[1]);
            for (global_index i = 0; i < nl; ++i) x(i, 0) = y(i, 0) * inv;
        }
    }
    const double tol_theta = std::max(tol / (s_norm * s_norm), 1e3 * kEps * theta_max);

    // Both ends of theta: nearest above sigma (largest theta > 0), nearest below (smallest < 0).
    Columns u;
    u.n = static_cast<int>(nl);
    std::int64_t matvecs = 0;
    int restarts = 0, searches = 0;
    for (const numerics::SpectrumEnd end : {numerics::SpectrumEnd::Highest, numerics::SpectrumEnd::Lowest}) {
        numerics::ThickRestartOptions o;
        o.end = end;
        o.count = request.count;
        o.tolerance = tol_theta;
        // The partners within 2 tol in E of the edge value theta_b lie within about
        // 2 tol theta_b^2 in theta (|d theta / dE| = theta^2): searched for with a margin, at
        // most half of |theta_b| (a shift within tol of a level would otherwise ask for every
        // theta of that sign); the selection below keeps those within 2 tol in E.
        o.level_width = [tol, tol_theta](double theta_b) {
            return std::max(2.0 * tol_theta, std::min(4.0 * tol * theta_b * theta_b, 0.5 * std::abs(theta_b)));
        };
        o.seed = options.seed;
        o.progress = options.progress;
        const numerics::EigenPairs side = numerics::thick_restart_lanczos(op, o);
        restarts += side.restarts;
        searches += side.searches;
        for (std::size_t i = 0; i < side.values.size(); ++i) {
            const double theta = side.values[i];
            if (end == numerics::SpectrumEnd::Highest ? theta <= 0.0 : theta >= 0.0) continue;
            u.data.insert(u.data.end(), side.vectors.begin() + static_cast<std::ptrdiff_t>(i * nl),
                          side.vectors.begin() + static_cast<std::ptrdiff_t>((i + 1) * nl));
            ++u.cols;
        }
    }

    numerics::EigenPairs out;
    for (int round = 0;; ++round) {
        orthonormalize_dropping(h, u);
        const std::vector<double> ritz = rayleigh_ritz(h, u, matvecs);
        const std::vector<int> pick = numerics::select_eigenvalues(ritz, request);
        const int k = static_cast<int>(pick.size());
        std::vector<complex_double> chosen(static_cast<std::size_t>(nl) * k);
        for (int c = 0; c < k; ++c) std::copy_n(u.col(pick[c]), nl, chosen.begin() + static_cast<std::ptrdiff_t>(c) * nl);
        out = numerics::measured_pairs(h, chosen, k);
        const double worst = out.residuals.empty() ? 0.0 : *std::max_element(out.residuals.begin(), out.residuals.end());
        if (worst <= tol || round == options.refinement_rounds) break;
        // Subspace iteration: u <- (H - sigma)^-1 u, one blocked solve of every column.
        Columns w(u.n, u.cols);
        op.solve_rows(u.data.data(), w.data.data(), u.cols);  // counted in op.solves()
        u = std::move(w);
        ++report.refinement_rounds;
    }
    out.matvecs += matvecs;
    out.restarts = restarts;
    out.searches = searches;
    report.solves += op.solves();
    report.worst_backward_error = std::max(report.worst_backward_error, op.worst_backward_error());
    return out;
}

}  // namespace topokpm::sparse_direct
