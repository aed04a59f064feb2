#include "numerics/eigs/chebfd.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <limits>
#include <numeric>

#include <cblas.h>
#include <omp.h>

#include "numerics/base/perf_model.hpp"
#include "numerics/eigs/columns.hpp"
#include "numerics/eigs/subspace.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/system.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::numerics {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr complex_double kOne(1.0, 0.0), kZero(0.0, 0.0);
constexpr int kMinBlock = 8;  ///< smallest unlocked block: room for a level the estimate missed

/// g_n c_n of the damped window indicator (file comment of chebfd.hpp).
std::vector<double> filter_coefficients(double theta_l, double theta_r, const std::vector<double>& g)
{
    std::vector<double> c(g.size());
    c[0] = g[0] * (theta_l - theta_r) / kPi;
    for (std::size_t k = 1; k < g.size(); ++k)
        c[k] = g[k] * 2.0 * (std::sin(double(k) * theta_l) - std::sin(double(k) * theta_r)) / (double(k) * kPi);
    return c;
}

/// p(x) = sum_n coef_n T_n(x), x in [-1, 1].
double filter_value(const std::vector<double>& coef, double x)
{
    const double theta = std::acos(std::clamp(x, -1.0, 1.0));
    double p = 0.0;
    for (std::size_t k = 0; k < coef.size(); ++k) p += coef[k] * std::cos(double(k) * theta);
    return p;
}

/// Counts the applies and times them into a phase of the stats.
struct Meter {
    const Operator& op;
    ChebFdStats& stats;
    std::int64_t& matvecs;
    void apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, const char* phase)
    {
        stats.phases.time(phase, [&] { op.apply(x, y, ops, nullptr); });
        matvecs += x.num_cols();
    }
};

/// Y = p(Ht) X by the Chebyshev recurrence, strip by strip (registered widths): one
/// augmented sweep per degree, v_{k+1} = 2 Ht v_k - v_{k-1} overwriting v_{k-1} in place.
/// The accumulation Y += coef_n v_n rides on the sweeps (AugmentedOps::accumulate): the
/// sweep that makes v_k also has v_{k-2} (y's old values) and v_{k-1} (x), so every third
/// sweep adds three terms, acc += c_{k-2} v_{k-2} + c_{k-1} v_{k-1} + c_k v_k, and the last
/// sweep the remaining one or two. On a kernel with Operator::fuses_accumulation (the CPU
/// stencil at R >= 4) that is the accumulator read and written once per three degrees
/// inside the sweep, against 2 vector streams per degree in a pass of its own (the terms
/// in pairs); elsewhere Operator::apply runs the same sums in passes around the sweep.
/// The strips' three blocks, one set per registered width, kept for the whole run: fresh
/// blocks every strip and pass cost a page fault per 4 KiB (measured: ~12 % of a ti
/// 16x16x40 run in page faults and zero fills of temporaries).
struct FilterBlocks {
    std::vector<std::array<BlockVector, 3>> sets;
    std::array<BlockVector, 3>& get(global_index n, int w)
    {
        for (auto& s : sets)
            if (s[0].num_cols() == w) return s;
        sets.push_back({BlockVector(n, w), BlockVector(n, w), BlockVector(n, w)});
        return sets.back();
    }
};

void apply_filter(Meter& m, const KpmScaling& s, const std::vector<double>& coef, Columns& x, FilterBlocks& blocks,
                  const std::function<void(int)>& strip_done)
{
    const double t0 = wall_seconds();
    const double spmmv0 = m.stats.phases.get("filter_spmmv");
    const int n = x.n, degree = static_cast<int>(coef.size());
    m.op.for_each_strip(x.cols, [&](int first, int w) {
        auto& set = blocks.get(n, w);
        BlockVector &a = set[0], &b = set[1], &acc = set[2];
        to_block(x, first, a);
        const std::size_t len = static_cast<std::size_t>(n) * w;
        complex_double* dst = acc.data();
        if (degree == 1) {
            const complex_double* src = a.data();
#pragma omp parallel for schedule(static)
            for (std::size_t i = 0; i < len; ++i) dst[i] = coef[0] * src[i];
        } else {
#pragma omp parallel for schedule(static)
            for (std::size_t i = 0; i < len; ++i) dst[i] = complex_double(0.0, 0.0);
            // The sweep making v_k adds the pending terms (from `pending` on) when it holds three
            // of them (pending = k - 2) or is the last one.
            int pending = 0;
            auto ops_for = [&](int k, double scale, double beta) {
                AugmentedOps ops{scale, s.b, beta, false};
                if (k - pending == 2 || k == degree - 1) {
                    ops.accumulate = &acc;
                    ops.acc_old = pending <= k - 2 ? coef[k - 2] : 0.0;
                    ops.acc_x = pending <= k - 1 ? coef[k - 1] : 0.0;
                    ops.acc_new = coef[k];
                    pending = k + 1;
                }
                return ops;
            };
            m.apply(a, b, ops_for(1, 1.0 / s.a, 0.0), "filter_spmmv");  // v_1 = Ht v_0
            // (a, b) = (v_{k-1}, v_k); a <- 2 Ht b - a = v_{k+1}, then swap: (a, b) = (v_k, v_{k+1})
            for (int k = 2; k < degree; ++k) {
                m.apply(b, a, ops_for(k, 2.0 / s.a, -1.0), "filter_spmmv");
                a.swap(b);
            }
        }
        m.stats.filter_matvecs += static_cast<std::int64_t>(degree - 1) * w;
        m.stats.filter_flops += (degree - 1) * perf::sweep_flops(m.op.cost().nonzeros, double(n), w);
        from_block(acc, x, first);
        if (strip_done) strip_done(first + w);
    });
    m.stats.phases.add("filter_accumulate", wall_seconds() - t0 - (m.stats.phases.get("filter_spmmv") - spmmv0));
}

/// H applied to the first `cols` columns of x in strips of registered widths: for each,
/// blocks.get(n, w)[0] holds the strip x[:, first, first + w) (row-major) and [1] its
/// image under H when visit(first, w) runs.
template <class Visit>
void for_each_strip(Meter& m, const Columns& x, int cols, FilterBlocks& blocks, Visit&& visit)
{
    m.op.for_each_strip(cols, [&](int first, int w) {
        auto& set = blocks.get(x.n, w);
        m.stats.phases.time("rayleigh_ritz", [&] { to_block(x, first, set[0]); });
        m.apply(set[0], set[1], AugmentedOps{1.0, 0.0, 0.0, false}, "rr_spmmv");
        visit(first, w);
    });
}

/// Stochastic trace moments N mu_n = (1/R) sum_r <r|T_n(Ht)|r>, n < num_moments, from
/// `vectors` random-phase vectors (models.md §4, <r|r> = N), summed over the ranks.
std::vector<double> trace_moments(Meter& m, const KpmScaling& s, int num_moments, int vectors, std::uint64_t seed)
{
    BlockVector start(m.op.num_rows(), vectors);
    fill_random_phase_vectors(start, seed, std::int64_t(1) << 21, m.op.global_rows(), m.op.row_begin());
    ChebyshevRecurrence rec(m.op, std::move(start), num_moments, s);
    m.stats.phases.time("estimate", [&] {
        while (!rec.done()) rec.step();
    });
    m.matvecs += static_cast<std::int64_t>(kpm_num_sweeps(num_moments)) * vectors;
    std::vector<double> raw = rec.take_raw();
    if (!m.op.dots_reduced()) m.op.sum_over_ranks(raw.data(), raw.size());
    std::vector<double> mu(static_cast<std::size_t>(num_moments), 0.0);
    for (int r = 0; r < vectors; ++r)
        for (int k = 0; k < num_moments; ++k) mu[k] += raw[static_cast<std::size_t>(r) * num_moments + k] / vectors;
    return mu;
}

/// The expected count tr p(Ht) = sum_n coef_n N mu_n (coef no longer than mu).
double expected_count(const std::vector<double>& coef, const std::vector<double>& mu)
{
    double c = 0.0;
    for (std::size_t k = 0; k < coef.size(); ++k) c += coef[k] * mu[k];
    return std::max(0.0, c);
}

}  // namespace

double chebfd_space_bytes(double rows, double k, int threads)
{
    return 16.0 * (rows * (k + kMinBlock + std::max(k, std::min(3.0 * k, 3.0 * 63))) + 4.0 * k * k +
                   2048.0 * k * std::max(1, threads));
}

int chebfd_degree(double x_left, double x_right)
{
    const double width = std::acos(std::clamp(x_left, -1.0, 1.0)) - std::acos(std::clamp(x_right, -1.0, 1.0));
    const double m = std::ceil(4.0 * kPi / std::max(width, 1e-12));
    return static_cast<int>(std::clamp(m, 16.0, 1e7));
}

EigenPairs chebfd_eigenpairs(const Operator& op, const ChebFdOptions& o, ChebFdStats* stats_out)
{
    const double t_start = wall_seconds();
    const global_index big_n = op.global_rows();
    EigenRequest request;
    request.kind = EigenRequest::Kind::Window;
    request.window_min = o.window_min;
    request.window_max = o.window_max;
    request.tolerance = o.tolerance;
    validate(request, big_n);
    TOPOKPM_USER_REQUIRE(o.safety > 1.0, "{eig_safety} ", o.safety, ": must be > 1");
    TOPOKPM_USER_REQUIRE(o.dos_vectors >= 1, "{eig_dos_vectors} ", o.dos_vectors, ": must be >= 1");
    TOPOKPM_USER_REQUIRE(o.degree == 0 || o.degree >= 16, "{eig_filter_degree} ", o.degree, ": must be 0 (automatic) or >= 16");
    TOPOKPM_USER_REQUIRE(static_cast<bool>(o.damping), "ChebFD needs the damping factors of a kernel");
    TOPOKPM_REQUIRE(op.num_rows() < std::numeric_limits<int>::max(), "local rows ", op.num_rows(),
                    " beyond the BLAS index range");
    const int n = static_cast<int>(op.num_rows());
    const int max_space = static_cast<int>(std::min<global_index>(big_n, std::numeric_limits<int>::max()));

    ChebFdStats stats;
    EigenPairs counters;
    Meter meter{op, stats, counters.matvecs};
    const KpmScaling s = kpm_scaling(o.bounds, o.epsilon);
    const double xl = std::clamp((o.window_min - s.b) / s.a, -1.0, 1.0);
    const double xr = std::clamp((o.window_max - s.b) / s.a, -1.0, 1.0);
    const double theta_l = std::acos(xl), theta_r = std::acos(xr);  // theta_l >= theta_r
    // Degree and search space from one KPM trace: the smallest degree of the sequence
    // M0 (the rule), 1.5 M0, ... 4 M0 whose guard interval (window + 3 sigma_theta each side,
    // sigma_theta = pi / M) holds at most twice the window's expected count plus kMinBlock
    // (Pieper et al.: a search space about twice the target count is the cheapest); the
    // search space is safety x the guard's count + kMinBlock.
    const int m0 = o.degree > 0 ? o.degree : chebfd_degree(xl, xr);
    const int m_max = o.degree > 0 ? o.degree : 4 * m0;
    const std::vector<double> mu = trace_moments(meter, s, m_max, o.dos_vectors, o.seed);
    int degree = m0;
    std::vector<double> g, coef;
    for (double f = 1.0;; f *= 1.5) {
        degree = std::min(m_max, static_cast<int>(std::ceil(f * m0)));
        g = o.damping(degree);
        TOPOKPM_REQUIRE(static_cast<int>(g.size()) == degree, "damping gave ", g.size(), " factors for ", degree);
        coef = filter_coefficients(theta_l, theta_r, g);
        const double sigma = kPi / degree;
        stats.expected_count = expected_count(coef, mu);
        stats.expected_guard = expected_count(
            filter_coefficients(std::min(kPi, theta_l + 3 * sigma), std::max(0.0, theta_r - 3 * sigma), g), mu);
        if (degree == m_max || stats.expected_guard <= 2.0 * stats.expected_count + kMinBlock) break;
    }
    stats.filter_degree = degree - 1;
    const double guard_ratio = std::max(1.0, stats.expected_guard / std::max(1.0, stats.expected_count));
    int space = o.search_size > 0 ? o.search_size
                                  : static_cast<int>(std::ceil(o.safety * stats.expected_guard)) + kMinBlock;
    space = std::min(space, max_space);
    const auto check_space = [&](int cols) {
        if (o.memory.bytes <= 0.0) return;
        require_memory(chebfd_space_bytes(n, cols, omp_get_max_threads()), o.memory,
                       topokpm::detail::concat("the ChebFD search space of ", cols, " vectors (",
                                               static_cast<int>(std::ceil(stats.expected_count)),
                                               " pairs expected in the window) on this rank"));
    };
    check_space(space);

    Columns locked(n, 0);
    Columns x(n, space);
    std::int64_t next_column = std::int64_t(1) << 20;
    auto random_columns = [&](Columns& into, int first) {
        for (int c = first; c < into.cols; c += 32) {
            const int w = std::min(32, into.cols - c);
            BlockVector b(n, w);
            fill_random_phase_vectors(b, o.seed, next_column, big_n, op.row_begin());
            next_column += w;
            from_block(b, into, c);
        }
    };
    random_columns(x, 0);

    // Progress with the timers so far (the SpMMV share of a run cut short is in its lines).
    const auto report = [&](ChebFdProgress p) {
        if (!o.progress) return;
        p.seconds = wall_seconds() - t_start;
        p.seconds_spmmv = stats.seconds_spmmv();
        p.seconds_filter_spmmv = stats.phases.get("filter_spmmv");
        p.filter_flops = stats.filter_flops;
        o.progress(p);
    };
    int iteration = 0;
    int previous_certain = -1;    report({0, 0, 0, stats.expected_count, space, counters.matvecs, 0.0, degree - 1});

    FilterBlocks filter_blocks;
    for (;; ++iteration) {
        if (iteration == o.max_iterations)
            throw NumericalError(topokpm::detail::concat("ChebFD did not converge in ", o.max_iterations, " filter passes (",
                                                locked.cols, " pairs locked, search space ", space, ", degree ",
                                                degree - 1, ")"));
        apply_filter(meter, s, coef, x, filter_blocks, [&](int done) {
            ChebFdProgress p{iteration, locked.cols, 0, stats.expected_count, space, counters.matvecs, 0.0, degree - 1};
            p.filter_columns_done = done;
            p.filter_columns = x.cols;
            report(p);
        });
        // The strips' blocks go back while the block is orthonormalized (the TSQR fallback
        // copies it: the peak of a pass); the next strips fault their pages in once per pass.
        filter_blocks.sets.clear();
        // Orthonormalizing the ill-conditioned filtered block can bring back components along
        // the locked vectors (up to eps times its condition): a second round removes them.
        // The block is orthonormal by then, so the second round is one projection (its
        // coefficients are O(eps kappa): no cancellation to repeat it for) and one CholQR
        // pass of a block whose condition is 1 + O(eps kappa) (reorthonormalize).
        // Without locked vectors one round leaves the block orthonormal.
        stats.phases.time("project", [&] { project_out_twice(op, locked, x); });
        stats.phases.time("orthonormalize", [&] { stats.tsqr_fallbacks += orthonormalize(op, x) ? 1 : 0; });
        if (locked.cols > 0) {
            stats.phases.time("project", [&] { project_out_once(op, locked, x); });
            stats.phases.time("orthonormalize", [&] { stats.tsqr_fallbacks += reorthonormalize(op, x) ? 1 : 0; });
        }
        // Rayleigh-Ritz with H Q in strips (G's columns from each strip: no n x k copy of
        // H Q), the Ritz vectors formed in x's own storage (rotate_in_place: no second
        // n x k block), ordered so that the pairs inside the window come first (their
        // residuals next) and the rest follow by |p(theta)|, largest first (the next block).
        // G is Hermitian: a strip's columns need only the rows up to the strip's last
        // column (Q[:, 0, first + w)^H H Q_strip), the rest is mirrored from the rows above:
        // 8 n k (k + w) / 2 flop instead of 8 n k^2.
        std::vector<complex_double> g(static_cast<std::size_t>(x.cols) * x.cols, complex_double(0.0, 0.0));
        std::vector<int> computed_rows(static_cast<std::size_t>(x.cols), 0);  // per column of G
        std::vector<std::vector<complex_double>> g_parts(static_cast<std::size_t>(omp_get_max_threads()));
        for_each_strip(meter, x, x.cols, filter_blocks, [&](int first, int w) {
            // G[0, first + w)[:, first, first + w) = Q^H (H Q_strip): the row-major strip is,
            // column-major, its transpose (w x n, ld w), which zgemm transposes back.
            // Each thread multiplies its rows (for_thread_rows), the parts summed in order.
            stats.phases.time("rayleigh_ritz", [&] {
                const int m = first + w;
                const complex_double* hq = filter_blocks.get(n, w)[1].data();
                for_thread_rows(n, [&](int t, int r0, int rows) {
                    g_parts[t].assign(static_cast<std::size_t>(m) * w, complex_double(0.0, 0.0));
                    cblas_zgemm(CblasColMajor, CblasConjTrans, CblasTrans, m, w, rows, &kOne, x.data.data() + r0, n,
                                hq + static_cast<std::size_t>(r0) * w, w, &kZero, g_parts[t].data(), m);
                });
                for (const auto& part : g_parts)
                    if (!part.empty())
                        for (int c = 0; c < w; ++c)
                            for (int r = 0; r < m; ++r)
                                g[r + static_cast<std::size_t>(first + c) * x.cols] += part[r + static_cast<std::size_t>(c) * m];
                for (auto& part : g_parts) part.clear();
                for (int c = first; c < first + w; ++c) computed_rows[c] = m;
            });
        });
        const int k = x.cols;
        for (int c = 0; c < k; ++c)
            for (int r = computed_rows[c]; r < k; ++r)
                g[r + static_cast<std::size_t>(c) * k] = std::conj(g[c + static_cast<std::size_t>(r) * k]);
        std::vector<double> values;
        std::vector<int> order;  // columns of the next x: inside the window (ascending), then the rest
        int inside = 0;
        stats.phases.time("rayleigh_ritz", [&] {
            op.sum_over_ranks(reinterpret_cast<double*>(g.data()), 2 * g.size());
            HermitianEigensystem eig = projected_eigensystem(std::move(g), k);
            std::vector<int> rest;
            for (int i = 0; i < k; ++i)
                (eig.values[i] >= o.window_min && eig.values[i] <= o.window_max ? order : rest).push_back(i);
            inside = static_cast<int>(order.size());
            auto p_abs = [&](int i) { return std::abs(filter_value(coef, (eig.values[i] - s.b) / s.a)); };
            std::stable_sort(rest.begin(), rest.end(), [&](int a, int b) { return p_abs(a) > p_abs(b); });
            order.insert(order.end(), rest.begin(), rest.end());
            std::vector<complex_double> y(static_cast<std::size_t>(k) * k);
            values.resize(static_cast<std::size_t>(k));
            for (int c = 0; c < k; ++c) {
                std::copy_n(eig.vectors.data() + static_cast<std::size_t>(order[c]) * k, k,
                            y.data() + static_cast<std::size_t>(c) * k);
                values[c] = eig.values[order[c]];
            }
            rotate_in_place(x, y.data(), k);
        });
        // Residuals ||H x_i - theta_i x_i|| of the pairs inside the window (columns
        // 0..inside-1), one strip-wise apply of those columns.
        std::vector<double> residuals(static_cast<std::size_t>(k), std::numeric_limits<double>::infinity());
        for_each_strip(meter, x, inside, filter_blocks, [&](int first, int w) {
            stats.phases.time("rayleigh_ritz", [&] {
                auto& set = filter_blocks.get(n, w);
                const complex_double* xv = set[0].data();
                const complex_double* hv = set[1].data();
                // One pass over the strip's rows (a pass per column read every row's cache
                // lines w times).
                // The threads' parts are summed in thread order, so a residual (and the locking
                // decision taken from it) is the same in every run with this thread count.
                std::vector<double> res2(static_cast<std::size_t>(w), 0.0);
                std::vector<std::vector<double>> parts(static_cast<std::size_t>(omp_get_max_threads()));
#pragma omp parallel
                {
                    std::vector<double>& part = parts[static_cast<std::size_t>(omp_get_thread_num())];
                    part.assign(static_cast<std::size_t>(w), 0.0);
#pragma omp for schedule(static)
                    for (int r = 0; r < n; ++r) {
                        const std::size_t at = static_cast<std::size_t>(r) * w;
                        for (int c = 0; c < w; ++c) part[c] += std::norm(hv[at + c] - values[first + c] * xv[at + c]);
                    }
                }
                sum_parts(parts, res2);
                op.sum_over_ranks(res2.data(), res2.size());
                for (int c = 0; c < w; ++c) residuals[first + c] = std::sqrt(res2[c]);
            });
        });
        const double t_lock = wall_seconds();

        // Lock the converged pairs inside the window. An unlocked pair inside is "certain"
        // when its residual is below its distance to the window's edges: [theta - r,
        // theta + r] then holds an eigenvalue, inside. An unlocked pair that is not certain
        // may be spurious: a mixture of eigenvectors on both sides of the window (its Ritz
        // value falls in between; its residual is then at least the distance to the edge).
        // Those never converge and are not waited for.
        std::vector<int> lock_now;
        int certain = 0;
        double worst = 0.0;
        for (int i = 0; i < inside; ++i) {
            const double v = values[i], r = residuals[i];
            if (r <= 0.5 * o.tolerance) {
                lock_now.push_back(i);
            } else if (r < std::min(v - o.window_min, o.window_max - v)) {
                ++certain;
                worst = std::max(worst, r);
            }
        }
        if (!lock_now.empty()) {
            locked.data.resize(static_cast<std::size_t>(n) * (locked.cols + lock_now.size()));
            for (const int i : lock_now) {
                std::copy_n(x.col(i), n, locked.col(locked.cols));
                ++locked.cols;
            }
            // The unlocked columns close up in order (x's own storage, moving left only).
            int to = 0;
            for (int c = 0, l = 0; c < k; ++c) {
                if (l < static_cast<int>(lock_now.size()) && lock_now[l] == c) {
                    ++l;
                    continue;
                }
                if (to != c) std::copy_n(x.col(c), n, x.col(to));
                ++to;
            }
            x.cols = to;
        }
        const int in_window = locked.cols + certain;
        report({iteration + 1, locked.cols, in_window, stats.expected_count, space, counters.matvecs, worst, degree - 1});
        // Stop after >= 3 passes when this pass locked nothing and neither it nor the one
        // before left a certain pair: an eigenvector of the window that is still missing has been amplified over
        // everything outside the search space by the filter ratio (>= 300 per pass), cubed,
        // and would show up as a certain pair.
        // Or, sooner (Pieper et al.'s stop: every Ritz value in the window converged), once
        // pairs are locked, after >= 2 passes, when the unlocked Ritz values left inside the
        // window are all spurious beyond doubt: residual >= half the window's width, so that
        // [theta - r, theta + r] covers the window. A real eigenvector of the window has, after
        // two filter passes, been amplified over everything outside the guard by the filter
        // ratio twice (>= 1e4; measured residuals 1e-6 to 1e-12 by then, spurious ones 0.8-0.95 t
        // on ti 16x16x40 with the window +-0.5): it is locked or certain, never that far off.
        bool all_spurious = true;
        for (int i = 0; i < inside; ++i)
            if (residuals[i] > 0.5 * o.tolerance && residuals[i] < 0.5 * (o.window_max - o.window_min)) all_spurious = false;
        const bool all_locked = iteration >= 1 && locked.cols > 0 && all_spurious;
        if (all_locked || (iteration >= 2 && lock_now.empty() && certain == 0 && previous_certain == 0)) {
            stats.phases.add("lock", wall_seconds() - t_lock);
            break;
        }
        previous_certain = certain;

        // Grow when the window holds more than space / safety Ritz values.
        if (in_window > space / o.safety)
            space = std::min(max_space, std::max(space + kMinBlock, static_cast<int>(std::ceil(
                                                                         o.safety * guard_ratio * in_window)) + kMinBlock));
        check_space(space);
        const int free_dim = static_cast<int>(std::min<global_index>(max_space, big_n - locked.cols));
        const int next = std::min(free_dim, std::max(space - locked.cols, kMinBlock));
        if (next <= 0) {  // the window's pairs fill the whole space: nothing left to find
            stats.phases.add("lock", wall_seconds() - t_lock);
            break;
        }
        // The next block: the first unlocked Ritz vectors (already in x), fresh random
        // columns when the space grew beyond them.
        const int kept = std::min(next, x.cols);
        x.cols = next;
        x.data.resize(static_cast<std::size_t>(n) * next);
        if (kept < next) random_columns(x, kept);
        stats.phases.add("lock", wall_seconds() - t_lock);
    }

    // The search space and the strips are done with: their memory goes back before the
    // measurement's blocks are allocated.
    Columns().data.swap(x.data);
    FilterBlocks().sets.swap(filter_blocks.sets);
    EigenPairs out = stats.phases.time("measure", [&] { return measured_pairs(op, locked.data, locked.cols); });
    out.matvecs += counters.matvecs;
    out.restarts = iteration + 1;
    stats.search_size = space;
    stats.seconds_total = wall_seconds() - t_start;
    if (stats_out) *stats_out = stats;
    return out;
}

}  // namespace topokpm::numerics
