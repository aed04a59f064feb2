#include "numerics/eigs/thick_restart_lanczos.hpp"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>

#include "numerics/base/counter_rng.hpp"
#include "numerics/eigs/columns.hpp"
#include "numerics/eigs/subspace.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

constexpr complex_double kOne(1.0, 0.0), kZero(0.0, 0.0);

/// The Lanczos machinery of one search, over the local rows of a (possibly distributed)
/// operator, deflated against the locked vectors.
class Search {
public:
    Search(const Operator& op, const Columns& locked, int basis, std::int64_t& matvecs)
        : op_(op), locked_(locked), n_(static_cast<int>(op.num_rows())), m_(basis), matvecs_(matvecs),
          x_(op.num_rows(), 1), y_(op.num_rows(), 1)
    {
        v_.n = n_;
        v_.cols = m_ + 1;
        v_.data.assign(static_cast<std::size_t>(n_) * (m_ + 1), kZero);
        h_.resize(static_cast<std::size_t>(m_ + 1));
    }

    /// Random-phase vector `column` of `stream`, orthogonalized against the locked vectors
    /// and the first `against` basis vectors, normalized into basis column `target`.
    /// Returns false when nothing is left of it (the space is exhausted).
    bool random_into(int target, std::uint64_t stream, std::int64_t column, int against)
    {
        fill_random_phase_vectors(x_, stream, column, op_.global_rows(), op_.row_begin());
        complex_double* t = v_.col(target);
        std::memcpy(t, x_.data(), sizeof(complex_double) * n_);
        orthogonalize(t, against);
        const double norm = global_norm(t);
        if (!(norm > 1e-8)) return false;  // the start had < 1e-8 of its unit norm outside the span
        scale(t, 1.0 / norm);
        return true;
    }

    /// w = H v_j into basis column j + 1 (unnormalized).
    void apply(int j)
    {
        copy(v_.col(j), x_.data());
        op_.apply(x_, y_, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
        ++matvecs_;
        copy(y_.data(), v_.col(j + 1));
    }

    void copy(const complex_double* from, complex_double* to) const
    {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n_; ++i) to[i] = from[i];
    }

    /// w -= L (L^H w) + V_j (V_j^H w) over the locked vectors and basis columns 0..cols-1
    /// (numerics/eigs/subspace.hpp: classical Gram-Schmidt, a second pass when DGKS asks).
    /// Returns the summed coefficients of the basis columns (h_i = <v_i|w> of the
    /// unorthogonalized w, to rounding).
    const std::vector<complex_double>& orthogonalize(complex_double* w, int cols)
    {
        const int nl = locked_.cols;
        project_out(op_, n_, {{locked_.data.data(), nl}, {v_.data.data(), cols}}, w, 1, &coef_);
        std::fill(h_.begin(), h_.end(), kZero);
        for (int i = 0; i < cols; ++i) h_[static_cast<std::size_t>(i)] = coef_[static_cast<std::size_t>(nl + i)];
        return h_;
    }

    // The vector passes run on the kernels' threads: a serial loop between two parallel
    // sweeps leaves the other threads spinning at the barrier.
    double global_norm(const complex_double* w) const
    {
        double s = 0.0;
#pragma omp parallel for reduction(+ : s) schedule(static)
        for (int i = 0; i < n_; ++i) s += std::norm(w[i]);
        op_.sum_over_ranks(&s, 1);
        return std::sqrt(s);
    }

    void scale(complex_double* w, double f) const
    {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n_; ++i) w[i] *= f;
    }

    Columns& basis() { return v_; }
    int n() const { return n_; }

private:
    const Operator& op_;
    const Columns& locked_;
    int n_;
    int m_;
    std::int64_t& matvecs_;
    BlockVector x_, y_;
    Columns v_;
    std::vector<complex_double> h_, coef_;
};

/// Eigen-decomposition of the leading m x m of the symmetric t (column-major, ld = ld).
void symmetric_eigen(const std::vector<double>& t, int ld, int m, std::vector<double>& theta, std::vector<double>& y)
{
    y.assign(static_cast<std::size_t>(m) * m, 0.0);
    for (int c = 0; c < m; ++c)
        for (int r = 0; r < m; ++r) y[static_cast<std::size_t>(r + c * m)] = t[static_cast<std::size_t>(r + c * ld)];
    theta.assign(static_cast<std::size_t>(m), 0.0);
    const lapack_int info = LAPACKE_dsyev(LAPACK_COL_MAJOR, 'V', 'U', m, y.data(), m, theta.data());
    if (info != 0) throw NumericalError(detail::concat("LAPACKE_dsyev failed in thick-restart Lanczos, info = ", info));
}

struct Found {
    std::vector<double> values;
    Columns vectors;
};

struct SearchSettings {
    SpectrumEnd end;
    int nev;
    int basis;
    double converge_at;                 ///< residual estimate that counts as converged
    int max_restarts;
    std::uint64_t stream;
    std::int64_t column;                ///< start vector column of the stream
    std::optional<double> give_up_beyond;  ///< stop with nothing once the first wanted value converged beyond it
    std::function<void(int converged, int wanted, double next_residual)> on_cycle;  ///< after every cycle
};

/// One thick-restart search for `nev` pairs at the wanted end of H deflated by `locked`.
Found run_search(const Operator& op, const Columns& locked, const SearchSettings& s, std::int64_t& matvecs,
                 int& restarts)
{
    const global_index free_dim = op.global_rows() - locked.cols;
    const int m = static_cast<int>(std::min<global_index>(s.basis, free_dim));
    const int nev = std::min(s.nev, m);
    Search search(op, locked, m, matvecs);
    Columns& v = search.basis();
    const int n = search.n();
    Found found;
    found.vectors.n = n;
    if (m <= 0 || !search.random_into(0, s.stream, s.column, 0)) return found;

    // T = V^H H V, column-major m x m; its structure: arrow (after a restart) + tridiagonal.
    std::vector<double> t(static_cast<std::size_t>(m) * m, 0.0);
    auto at = [&](int r, int c) -> double& { return t[static_cast<std::size_t>(r + c * m)]; };
    std::vector<double> theta, y;
    std::int64_t fresh = 0;  // fresh random vectors after a breakdown
    double hnorm = 0.0;      // largest |alpha|, |beta|, |theta| seen: the scale of H
    int kept = 0;
    for (int cycle = 0;; ++cycle) {
        double beta_last = 0.0;
        for (int j = kept; j < m; ++j) {
            search.apply(j);
            complex_double* w = v.col(j + 1);
            const std::vector<complex_double>& h = search.orthogonalize(w, j + 1);
            const double alpha = h[static_cast<std::size_t>(j)].real();
            at(j, j) = alpha;
            const double beta = search.global_norm(w);
            hnorm = std::max({hnorm, std::abs(alpha), beta});
            if (j + 1 == m) {
                beta_last = beta;
                if (beta > 0.0) search.scale(w, 1.0 / beta);
                break;
            }
            if (beta > 1e-12 * hnorm) {
                search.scale(w, 1.0 / beta);
                at(j, j + 1) = at(j + 1, j) = beta;
            } else if (!search.random_into(j + 1, splitmix64(s.stream, 5), fresh++, j + 1)) {
                throw NumericalError("thick-restart Lanczos: no new direction after an invariant subspace");
            }  // an invariant subspace: T decouples (beta = 0) and the search goes on elsewhere
        }
        symmetric_eigen(t, m, m, theta, y);
        for (double th : theta) hnorm = std::max(hnorm, std::abs(th));
        // Index of the i-th wanted Ritz value (theta ascending).
        auto wanted = [&](int i) { return s.end == SpectrumEnd::Lowest ? i : m - 1 - i; };
        auto estimate = [&](int idx) { return std::abs(beta_last * y[static_cast<std::size_t>(m - 1 + idx * m)]); };
        const bool exhausted = m == free_dim;  // T is the whole deflated operator: exact
        // Converged: the first nev wanted estimates within converge_at; with give_up_beyond,
        // the wanted values up to the first converged one beyond it (the rest cannot matter).
        int take = nev;
        bool converged = true;
        int converged_count = 0;
        double next_residual = 0.0;
        for (int i = 0; i < nev; ++i) {
            const bool done = exhausted || estimate(wanted(i)) <= s.converge_at;
            const double value = theta[static_cast<std::size_t>(wanted(i))];
            if (done && s.give_up_beyond &&
                (s.end == SpectrumEnd::Lowest ? value > *s.give_up_beyond : value < *s.give_up_beyond)) {
                take = i;
                break;
            }
            if (!done) {
                converged = false;
                next_residual = estimate(wanted(i));
                break;
            }
            ++converged_count;
        }
        if (s.on_cycle) s.on_cycle(converged_count, nev, next_residual);
        if (converged) {
            found.vectors.cols = take;
            found.vectors.data.assign(static_cast<std::size_t>(n) * take, kZero);
            std::vector<complex_double> yc(static_cast<std::size_t>(m) * take);
            for (int i = 0; i < take; ++i) {
                const int idx = wanted(i);
                found.values.push_back(theta[static_cast<std::size_t>(idx)]);
                for (int r = 0; r < m; ++r) yc[static_cast<std::size_t>(r + i * m)] = y[static_cast<std::size_t>(r + idx * m)];
            }
            if (n > 0 && take > 0)
                cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, take, m, &kOne, v.data.data(), n, yc.data(), m,
                            &kZero, found.vectors.data.data(), n);
            return found;
        }
        if (cycle == s.max_restarts)
            throw NumericalError(detail::concat("thick-restart Lanczos did not converge in ", s.max_restarts,
                                                " restarts (basis ", m, ", wanted ", nev, ")"));
        // Thick restart: keep the Ritz vectors of the wanted end (about half the basis beyond
        // the wanted ones, Wu & Simon's choice) and the last basis vector v_m.
        const int keep = std::clamp(nev + (m - nev) / 2, 1, m - 2);
        std::vector<complex_double> yc(static_cast<std::size_t>(m) * keep);
        std::vector<double> arrow(static_cast<std::size_t>(keep));
        std::vector<double> kept_theta(static_cast<std::size_t>(keep));
        for (int i = 0; i < keep; ++i) {
            const int idx = wanted(i);
            kept_theta[static_cast<std::size_t>(i)] = theta[static_cast<std::size_t>(idx)];
            arrow[static_cast<std::size_t>(i)] = beta_last * y[static_cast<std::size_t>(m - 1 + idx * m)];
            for (int r = 0; r < m; ++r) yc[static_cast<std::size_t>(r + i * m)] = y[static_cast<std::size_t>(r + idx * m)];
        }
        std::vector<complex_double> u(static_cast<std::size_t>(n) * keep);
        if (n > 0) {
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, keep, m, &kOne, v.data.data(), n, yc.data(), m,
                        &kZero, u.data(), n);
            std::memcpy(v.col(0), u.data(), sizeof(complex_double) * u.size());
            std::memcpy(v.col(keep), v.col(m), sizeof(complex_double) * n);
        }
        std::fill(t.begin(), t.end(), 0.0);
        for (int i = 0; i < keep; ++i) {
            at(i, i) = kept_theta[static_cast<std::size_t>(i)];
            at(i, keep) = at(keep, i) = arrow[static_cast<std::size_t>(i)];
        }
        kept = keep;
        ++restarts;
    }
}

}  // namespace

EigenPairs thick_restart_lanczos(const Operator& op, const ThickRestartOptions& options)
{
    const global_index big_n = op.global_rows();
    validate(extremal_request(options.end == SpectrumEnd::Lowest, options.count, options.tolerance), big_n);
    TOPOKPM_USER_REQUIRE(options.basis_size == 0 || options.basis_size >= options.count + 2, "{eig_basis} ",
                         options.basis_size, ": must be 0 (automatic) or >= count + 2 = ", options.count + 2);
    TOPOKPM_REQUIRE(op.num_rows() < std::numeric_limits<int>::max(), "local rows ", op.num_rows(),
                    " beyond the BLAS index range");
    const int n = static_cast<int>(op.num_rows());
    const int basis = options.basis_size > 0 ? options.basis_size : std::max(2 * options.count + 20, 40);
    const bool lowest = options.end == SpectrumEnd::Lowest;

    EigenPairs out;  // counters; the pairs come from measured_pairs()
    Columns locked;
    locked.n = n;
    std::vector<double> locked_values;
    auto lock = [&](const Found& f) {
        locked.data.insert(locked.data.end(), f.vectors.data.begin(), f.vectors.data.end());
        locked.cols += f.vectors.cols;
        locked_values.insert(locked_values.end(), f.values.begin(), f.values.end());
    };
    // The order of locked values from the wanted end: the count-th one is the boundary.
    auto boundary = [&]() {
        std::vector<double> v = locked_values;
        std::sort(v.begin(), v.end());
        if (!lowest) std::reverse(v.begin(), v.end());
        return v[static_cast<std::size_t>(options.count - 1)];
    };
    // The residual estimate and the measured residual differ by the rounding of the basis
    // relation H V = V T + r e^T (of order eps ||H|| sqrt(m)); half the tolerance leaves that room.
    SearchSettings s{options.end, options.count, basis, 0.5 * options.tolerance, options.max_restarts,
                     splitmix64(options.seed, 4), 0, std::nullopt, nullptr};
    if (options.progress)
        s.on_cycle = [&](int converged, int wanted, double next_residual) {
            options.progress({locked.cols, converged, wanted, out.searches, out.matvecs, next_residual});
        };
    lock(run_search(op, locked, s, out.matvecs, out.restarts));
    out.searches = 1;
    TOPOKPM_REQUIRE(static_cast<int>(locked_values.size()) >= std::min<global_index>(options.count, big_n),
                    "first search found ", locked_values.size(), " of ", options.count, " pairs");
    const auto edge = [&] {  // the boundary and its level's partners: the limit of what is returned
        const double b = boundary();
        const double width = options.level_width ? options.level_width(b) : 2.0 * options.tolerance;
        return b + (lowest ? width : -width);
    };
    // Searches from fresh vectors orthogonal to everything locked: what they find at the
    // wanted end up to the boundary (+ 2 tolerance: degenerate partners of the last value)
    // was missed, typically the second vector of a degenerate eigenvalue.
    while (locked.cols < big_n) {
        const double limit = edge();
        s.column = out.searches;
        s.give_up_beyond = limit;
        const Found f = run_search(op, locked, s, out.matvecs, out.restarts);
        ++out.searches;
        Found inside;
        inside.vectors.n = n;
        for (std::size_t i = 0; i < f.values.size(); ++i) {
            const bool within = lowest ? f.values[i] <= limit : f.values[i] >= limit;
            if (!within) break;  // values come from the wanted end inwards
            inside.values.push_back(f.values[i]);
            inside.vectors.data.insert(inside.vectors.data.end(), f.vectors.col(static_cast<int>(i)),
                                       f.vectors.col(static_cast<int>(i)) + n);
            ++inside.vectors.cols;
        }
        if (inside.values.empty()) break;
        lock(inside);
    }

    // The answer: the count values of the wanted end plus partners within 2 tolerance of the
    // count-th; Rayleigh quotients and residuals measured with one block apply.
    const double limit = edge();
    std::vector<int> pick;
    for (int i = 0; i < static_cast<int>(locked_values.size()); ++i)
        if (lowest ? locked_values[i] <= limit : locked_values[i] >= limit) pick.push_back(i);
    const int k = static_cast<int>(pick.size());
    std::vector<complex_double> vectors(static_cast<std::size_t>(n) * k);
    for (int c = 0; c < k; ++c) std::copy_n(locked.col(pick[c]), n, vectors.begin() + static_cast<std::ptrdiff_t>(c) * n);
    EigenPairs pairs = measured_pairs(op, vectors, k);
    pairs.matvecs += out.matvecs;
    pairs.restarts = out.restarts;
    pairs.searches = out.searches;
    return pairs;
}

}  // namespace topokpm::numerics
