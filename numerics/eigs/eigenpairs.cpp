#include "numerics/eigs/eigenpairs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "numerics/base/dense_eigen.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {

void validate(const EigenRequest& request, global_index n)
{
    using Kind = EigenRequest::Kind;
    if (request.kind == Kind::Window) {
        TOPOKPM_USER_REQUIRE(std::isfinite(request.window_min) && std::isfinite(request.window_max) &&
                                 request.window_min < request.window_max,
                             "{eig_window} ", request.window_min, ":", request.window_max,
                             ": must be Emin:Emax with Emin < Emax (energies in t)");
    } else {
        TOPOKPM_USER_REQUIRE(request.count >= 1 && request.count <= n, "{eig_count} ", request.count,
                             ": must be in 1..", n, " (the matrix dimension)");
    }
    if (request.kind == Kind::Shift)
        TOPOKPM_USER_REQUIRE(std::isfinite(request.shift), "{eig_shift} ", request.shift, ": must be finite");
    TOPOKPM_USER_REQUIRE(request.tolerance > 0.0 && std::isfinite(request.tolerance), "{eig_tolerance} ",
                         request.tolerance, ": must be > 0");
}

std::vector<int> select_eigenvalues(const std::vector<double>& values, const EigenRequest& request)
{
    using Kind = EigenRequest::Kind;
    const int n = static_cast<int>(values.size());
    const int k = std::clamp(request.count, 0, n);
    std::vector<int> order(values.size());  // selection order: the first k are chosen
    std::iota(order.begin(), order.end(), 0);
    switch (request.kind) {
    case Kind::Window: {
        std::vector<int> pick;
        for (int i = 0; i < n; ++i)
            if (values[i] >= request.window_min && values[i] <= request.window_max) pick.push_back(i);
        return pick;
    }
    case Kind::Lowest:
        break;
    case Kind::Highest:
        std::reverse(order.begin(), order.end());
        break;
    case Kind::Shift:
        // Nearest first; at equal distance the lower value (models.md §6).
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
            const double da = std::abs(values[a] - request.shift), db = std::abs(values[b] - request.shift);
            return da != db ? da < db : values[a] < values[b];
        });
        // Distances equal to rounding are ties too (E0 -/+ d of a symmetric spectrum, e.g.
        // graphene's): within each run of distances within 2 tolerance of its first, the
        // lower value first.
        for (int i = 0; i < n;) {
            const double d0 = std::abs(values[order[i]] - request.shift);
            int j = i + 1;
            while (j < n && std::abs(values[order[j]] - request.shift) - d0 <= 2.0 * request.tolerance) ++j;
            std::sort(order.begin() + i, order.begin() + j, [&](int a, int b) { return values[a] < values[b]; });
            i = j;
        }
        break;
    }
    std::vector<int> pick(order.begin(), order.begin() + k);
    // Every vector of a degenerate level is returned (models.md §6): the partners of the
    // last chosen value, equal to it within 2 tolerance.
    if (k > 0) {
        const double last = values[order[k - 1]];
        for (int j = k; j < n; ++j)
            if (std::abs(values[order[j]] - last) <= 2.0 * request.tolerance) pick.push_back(order[j]);
    }
    std::sort(pick.begin(), pick.end());
    return pick;
}

double reachable_tolerance(double row_sum, double nonzeros_per_row)
{
    return 4.0 * std::max(nonzeros_per_row, 1.0) * std::numeric_limits<double>::epsilon() * row_sum;
}

EigenRequest extremal_request(bool lowest, int count, double tolerance)
{
    EigenRequest request;
    request.kind = lowest ? EigenRequest::Kind::Lowest : EigenRequest::Kind::Highest;
    request.count = count;
    request.tolerance = tolerance;
    return request;
}

EigenPairs measured_pairs(const Operator& op, const std::vector<complex_double>& vectors, int k)
{
    const global_index n = op.num_rows();
    TOPOKPM_REQUIRE(vectors.size() == static_cast<std::size_t>(n) * k, "vectors of ", vectors.size(),
                    " entries for ", n, " x ", k);
    EigenPairs out;
    out.local_rows = n;
    if (k == 0) return out;
    // x and H x in strips of registered widths (no generic-kernel fallback for, e.g., k = 12).
    BlockVector x(n, k), hx(n, k);
    op.for_each_strip(k, [&](int first, int w) {
        BlockVector xs(n, w), ys(n, w);
        for (global_index r = 0; r < n; ++r)
            for (int c = 0; c < w; ++c) xs(r, c) = vectors[static_cast<std::size_t>(r + (first + c) * n)];
        op.apply(xs, ys, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
        for (global_index r = 0; r < n; ++r)
            for (int c = 0; c < w; ++c) {
                x(r, first + c) = xs(r, c);
                hx(r, first + c) = ys(r, c);
            }
    });
    out.matvecs = k;
    std::vector<double> sums(2 * static_cast<std::size_t>(k), 0.0);  // <v|Hv> (real: H Hermitian), |v|^2
    for (global_index r = 0; r < n; ++r)
        for (int c = 0; c < k; ++c) {
            sums[2 * c] += (std::conj(x(r, c)) * hx(r, c)).real();
            sums[2 * c + 1] += std::norm(x(r, c));
        }
    op.sum_over_ranks(sums.data(), sums.size());
    std::vector<double> lambda(static_cast<std::size_t>(k)), res2(static_cast<std::size_t>(k), 0.0);
    for (int c = 0; c < k; ++c) lambda[c] = sums[2 * c] / sums[2 * c + 1];
    for (global_index r = 0; r < n; ++r)
        for (int c = 0; c < k; ++c) res2[c] += std::norm(hx(r, c) - lambda[c] * x(r, c));
    op.sum_over_ranks(res2.data(), res2.size());
    // Ascending by the Rayleigh quotient (degenerate partners may come in either order).
    std::vector<int> by_value(static_cast<std::size_t>(k));
    std::iota(by_value.begin(), by_value.end(), 0);
    std::stable_sort(by_value.begin(), by_value.end(), [&](int a, int b) { return lambda[a] < lambda[b]; });
    out.vectors.resize(static_cast<std::size_t>(n) * k);
    for (int i = 0; i < k; ++i) {
        const int c = by_value[i];
        out.values.push_back(lambda[c]);
        out.residuals.push_back(std::sqrt(res2[c]));
        std::copy_n(vectors.begin() + static_cast<std::ptrdiff_t>(c) * n, n,
                    out.vectors.begin() + static_cast<std::ptrdiff_t>(i) * n);
    }
    return out;
}

EigenPairs dense_eigenpairs(const Operator& op, const EigenRequest& request)
{
    const global_index big_n = op.global_rows();
    validate(request, big_n);
    TOPOKPM_USER_REQUIRE(big_n <= kDenseMaxRows, "{eig_method} dense: the matrix has ", big_n,
                         " rows, the dense method takes at most ", kDenseMaxRows, " (it needs about ",
                         5.0 * 16.0 * double(big_n) * double(big_n) / double(1 << 30), " GiB)");
    const int nn = static_cast<int>(big_n);
    const global_index n = op.num_rows(), first = op.row_begin();
    // H column block by column block: this rank's rows of H e_j, summed over the ranks.
    std::vector<complex_type> a(static_cast<std::size_t>(nn) * nn, complex_type(0.0, 0.0));
    op.for_each_strip(nn, [&](int j0, int w) {  // H e_j: each entry exact, whatever the strip
        BlockVector e(n, w), he(n, w);
        fill_unit_vectors(e, j0 - first);
        op.apply(e, he, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
        for (global_index r = 0; r < n; ++r)
            for (int c = 0; c < w; ++c) a[static_cast<std::size_t>(first + r + (j0 + c) * big_n)] = he(r, c);
    });
    op.sum_over_ranks(reinterpret_cast<double*>(a.data()), 2 * a.size());
    const HermitianEigensystem all = hermitian_eigensystem(a, nn, 'L');
    a = {};
    const std::vector<int> pick = select_eigenvalues(all.values, request);
    const int k = static_cast<int>(pick.size());
    std::vector<complex_double> mine(static_cast<std::size_t>(n) * k);
    for (int c = 0; c < k; ++c)
        for (global_index r = 0; r < n; ++r)
            mine[static_cast<std::size_t>(r + c * n)] = all.vectors[static_cast<std::size_t>(first + r + pick[c] * big_n)];
    EigenPairs out = measured_pairs(op, mine, k);
    out.matvecs += big_n;
    return out;
}

}  // namespace topokpm::numerics
