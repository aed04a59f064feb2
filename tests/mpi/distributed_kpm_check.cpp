// Multi-rank checks of the distributed operator (numerics/distributed), run by
// run_mpi_check.sh under mpiexec with 1, 2, 3 and 4 ranks (mode "distributed").
// Every rank also builds the whole (small) matrix serially: that is the independent
// oracle, the plain single-rank SELL operator and KPM driver of the spine.
//
// For the ti model (x periodic: the first and last slab exchange halos across the wrap,
// with disorder and dots so no two rows are alike) and graphene (periodic in both
// directions), with a SELL local part (rows split by sites) and a matrix-free one (the
// reference stencil of the rank's x-slab, rows split by x-planes), for equal and uneven
// weights (1:2.75:0.5:1.3 cut to P entries), for every --comm-mode and for dots reduced
// once at the end or every sweep:
//   - the halo of each rank equals a brute-force scan of its rows' foreign columns;
//   - y of one augmented sweep equals the serial y on the rank's rows, and the dots
//     (reduced over the ranks) equal the serial dots;
//   - stochastic-trace KPM moments (M = 48, R = 3) equal the serial moments;
//   - Lanczos bounds equal the serial ones;
//   - the 6 lowest eigenvalues by thick-restart Lanczos equal the serial ones (each is
//     within its residual r of an eigenvalue, so two runs agree to r_serial + r_dist), and
//     the dense method's window [-1, 1] equals the serial one to 1e-12 (the same LAPACK
//     call on a matrix that differs by the summation order of its rows: ulps), and
//     ChebFD's window [-1, 1] equals the dense one (each value within its residual) with
//     vectors orthonormal over the ranks to 1e-12;
//   - exact-trace and local-DOS moments (unit vectors owned by one rank) equal serial;
//   - in single precision (check_single), the moments are within the float rounding bound
//     of the serial single run, on CPU ranks and (equal weights) on GPU ranks (the host
//     stand-in: rank 0 alone, every rank) with their float halo;
//   - the halo through the node's shared window equals the message exchange bitwise.
// Tolerances: every entry of y is a sum of at most 13 products of O(1) numbers in a
// different order than serial (local part, then the remote correction), so y differs by
// a few ulp of max|H| max|x| (~10 here): 1e-13 absolute. Dots are sums of N ~ 10^3 such
// terms: N * 1e-15 * 10 = 1e-11 relative bound, we use 1e-12 * N. Moments |mu_n| <= 1 are
// 1 / (N R) times such sums propagated through M = 48 Chebyshev steps, where rounding
// differences grow at most linearly in n (the recurrence is stable in [-1, 1]):
// 1e-12 absolute. Lanczos: 30 steps from the same start vector; Ritz values agree to
// rounding amplified by the loss of orthogonality, bounded here by 1e-9 relative.
// Prints "distributed check on P ranks: ok" when all pass.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/support/block_stencil_reference.hpp"
#include "tests/support/trace_moments.hpp"
#include "analysis/reconstruct.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/base/block_stencil.hpp"
#include "numerics/distributed/distributed_operator.hpp"
#include "numerics/distributed/halo_device.hpp"
#include "numerics/eigs/chebfd.hpp"
#include "numerics/eigs/chebyshev_extremal.hpp"
#include "numerics/eigs/subspace.hpp"
#include "numerics/eigs/thick_restart_lanczos.hpp"
#include "numerics/kpm/block_trace.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/lanczos/lanczos.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "runtime/device/device.hpp"
#include "runtime/hetero/work_split.hpp"
#include "runtime/mpi/communicator.hpp"
#include "runtime/mpi/environment.hpp"
#include "tests/mpi/mpi_check_support.hpp"
#include "tests/support/single_precision.hpp"

using namespace topokpm;
using topokpm::testing::make_block_stencil_reference_operator;

namespace {

using namespace topokpm::testing::mpi_check;


void check_halo(const hamiltonians::Model& model, const numerics::DistributedOperator& op, const std::string& tag)
{
    std::set<global_index> foreign;
    std::vector<global_index> cols(model.max_row_length());
    std::vector<complex_type> vals(model.max_row_length());
    const global_index b = op.row_begin(), e = b + op.num_rows();
    for (global_index i = b; i < e; ++i) {
        const int len = model.row(i, cols.data(), vals.data());
        for (int k = 0; k < len; ++k)
            if (cols[k] < b || cols[k] >= e) foreign.insert(cols[k]);
    }
    const std::vector<global_index> expected(foreign.begin(), foreign.end());
    expect(op.halo_columns() == expected, tag + ": halo columns differ from the brute-force scan");
    // Halo and send volumes balance over the job.
    const auto halo = mpi::allreduce_sum(static_cast<std::int64_t>(op.halo_rows()));
    const auto sent = mpi::allreduce_sum(static_cast<std::int64_t>(op.send_rows()));
    expect(halo == sent, tag + ": rows received != rows sent over all ranks");
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b)
{
    if (a.size() != b.size()) return 1e300;
    double d = 0.0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
    return d;
}

/// ChebFD and the extremal Chebyshev filter (a few seconds per run) in one comm mode per
/// model, split and weights only.
bool with_chebfd = false;

void check_eigs(const Operator& serial, const Operator& dist, const std::string& tag)
{
    numerics::ThickRestartOptions o;
    o.count = 6;
    o.tolerance = 1e-9;
    o.basis_size = 20;
    const auto ref = numerics::thick_restart_lanczos(serial, o);
    const auto got = numerics::thick_restart_lanczos(dist, o);
    expect(got.values.size() == ref.values.size(), tag + ": eigenpair counts differ");
    for (std::size_t i = 0; i < std::min(got.values.size(), ref.values.size()); ++i) {
        expect(got.residuals[i] <= o.tolerance, tag + ": eigenpair residual above the tolerance");
        expect(std::abs(got.values[i] - ref.values[i]) <= got.residuals[i] + ref.residuals[i] + 1e-12,
               tag + ": eigenvalue " + std::to_string(i) + " differs");
    }
    numerics::EigenRequest window;
    window.kind = numerics::EigenRequest::Kind::Window;
    window.window_min = -1.0;
    window.window_max = 1.0;
    const auto dense_ref = numerics::dense_eigenpairs(serial, window);
    const auto dense_got = numerics::dense_eigenpairs(dist, window);
    expect(dense_got.values.size() == dense_ref.values.size() &&
               max_diff(dense_got.values, dense_ref.values) < 1e-12,
           tag + ": dense window eigenvalues differ");
    if (!with_chebfd) return;
    // The block Chebyshev filter on the Lanczos request: the same pairs as one rank.
    numerics::ChebyshevExtremalOptions x;
    x.count = o.count;
    x.tolerance = o.tolerance;
    const auto xref = numerics::chebyshev_extremal(serial, x);
    const auto xgot = numerics::chebyshev_extremal(dist, x);
    expect(xgot.values.size() == xref.values.size() && xref.values.size() == ref.values.size(),
           tag + ": Chebyshev extremal counts differ");
    for (std::size_t i = 0; i < std::min(xgot.values.size(), xref.values.size()); ++i) {
        expect(xgot.residuals[i] <= x.tolerance, tag + ": Chebyshev extremal residual above the tolerance");
        expect(std::abs(xgot.values[i] - xref.values[i]) <= xgot.residuals[i] + xref.residuals[i] + 1e-12,
               tag + ": Chebyshev extremal eigenvalue " + std::to_string(i) + " differs");
    }
    // ChebFD on the same window: the dense values (each within its residual), residuals
    // below the tolerance, the vectors orthonormal over all ranks; the distributed
    // orthonormalization's TSQR fallback (stacked R factors) is taken at least once.
    numerics::ChebFdOptions c;
    c.window_min = window.window_min;
    c.window_max = window.window_max;
    c.tolerance = 1e-9;
    c.bounds = numerics::lanczos_bounds(serial, 40, 4, 0.01, 1e-4).bounds;
    c.damping = [](int m) { return analysis::damping_factors(analysis::DampingKernel::Jackson, m, 4.0); };
    numerics::ChebFdStats stats;
    const auto cheb = numerics::chebfd_eigenpairs(dist, c, &stats);
    expect(cheb.values.size() == dense_ref.values.size(), tag + ": chebfd count " + std::to_string(cheb.values.size()) +
                                                              " != dense " + std::to_string(dense_ref.values.size()));
    for (std::size_t i = 0; i < std::min(cheb.values.size(), dense_ref.values.size()); ++i) {
        expect(cheb.residuals[i] <= c.tolerance, tag + ": chebfd residual above the tolerance");
        expect(std::abs(cheb.values[i] - dense_ref.values[i]) <= cheb.residuals[i] + 1e-12,
               tag + ": chebfd eigenvalue " + std::to_string(i) + " differs");
    }
    const std::size_t k = cheb.values.size();
    const global_index nl = cheb.local_rows;
    std::vector<double> gram(2 * k * k, 0.0);
    for (std::size_t a = 0; a < k; ++a)
        for (std::size_t b = 0; b < k; ++b) {
            complex_type d = 0.0;
            for (global_index r = 0; r < nl; ++r) d += std::conj(cheb.vectors[r + a * nl]) * cheb.vectors[r + b * nl];
            gram[2 * (a * k + b)] = d.real();
            gram[2 * (a * k + b) + 1] = d.imag();
        }
    dist.sum_over_ranks(gram.data(), gram.size());
    for (std::size_t a = 0; a < k; ++a) gram[2 * (a * k + a)] -= 1.0;
    double worst = 0.0;
    for (double v : gram) worst = std::max(worst, std::abs(v));
    expect(worst < 1e-12, tag + ": chebfd vectors not orthonormal over the ranks: " + std::to_string(worst));
}

/// The distributed orthonormalization on a block of condition ~1e10 with a zero column
/// (CholQR must fall back to the local TSQR + stacked R factors): Q^H Q = I to
/// 1e-12 over the ranks and A in the span of Q (||A - Q Q^H A|| <= 1e-10 ||A||; TSQR is backward stable).
void check_orthonormalize(const Operator& dist, const std::string& tag)
{
    const int k = 12;
    const global_index n = dist.num_rows(), big_n = dist.global_rows();
    BlockVector r(n, k);
    numerics::fill_random_phase_vectors(r, 17, 0, big_n, dist.row_begin());
    std::vector<complex_type> a(static_cast<std::size_t>(n) * k);
    // Column c = r_0 + 10^(-10 c / (k - 1)) r_c (c >= 1; condition ~1e10 that no column
    // scaling improves), and column k/2 zero: no CholQR pass, shifted or not, takes a zero
    // column, so the fallback is certain.
    for (global_index i = 0; i < n; ++i)
        for (int c = 0; c < k; ++c)
            a[i + c * n] = c == k / 2 ? complex_type(0.0)
                                      : (r(i, c) * std::pow(10.0, -10.0 * c / (k - 1)) + (c > 0 ? r(i, 0) : complex_type(0.0))) /
                                            std::sqrt(double(big_n));
    numerics::Columns qc(static_cast<int>(n), k);
    qc.data = a;
    const bool tsqr = numerics::orthonormalize(dist, qc);
    const std::vector<complex_type>& q = qc.data;
    expect(tsqr, tag + ": a block with a zero column did not take the TSQR fallback");
    std::vector<double> g(2 * k * k + 2 * k * k, 0.0);  // Q^H Q, then Q^H A
    for (int x = 0; x < k; ++x)
        for (int y = 0; y < k; ++y) {
            complex_type qq = 0.0, qa = 0.0;
            for (global_index i = 0; i < n; ++i) {
                qq += std::conj(q[i + x * n]) * q[i + y * n];
                qa += std::conj(q[i + x * n]) * a[i + y * n];
            }
            g[2 * (x * k + y)] = qq.real();
            g[2 * (x * k + y) + 1] = qq.imag();
            g[2 * k * k + 2 * (x * k + y)] = qa.real();
            g[2 * k * k + 2 * (x * k + y) + 1] = qa.imag();
        }
    dist.sum_over_ranks(g.data(), g.size());
    double orth = 0.0;
    for (int x = 0; x < k; ++x)
        for (int y = 0; y < k; ++y)
            orth = std::max(orth, std::abs(complex_type(g[2 * (x * k + y)] - (x == y ? 1.0 : 0.0), g[2 * (x * k + y) + 1])));
    expect(orth < 1e-12, tag + ": distributed TSQR: Q^H Q - I = " + std::to_string(orth));
    std::vector<double> res(1, 0.0);  // ||A - Q (Q^H A)||_F^2, A's columns have norm <= 2
    for (global_index i = 0; i < n; ++i)
        for (int y = 0; y < k; ++y) {
            complex_type v = a[i + y * n];
            for (int x = 0; x < k; ++x)
                v -= q[i + x * n] * complex_type(g[2 * k * k + 2 * (x * k + y)], g[2 * k * k + 2 * (x * k + y) + 1]);
            res[0] += std::norm(v);
        }
    dist.sum_over_ranks(res.data(), 1);
    expect(std::sqrt(res[0]) < 1e-10, tag + ": distributed TSQR: A not in the span of Q: " + std::to_string(std::sqrt(res[0])));
}

void check_kpm(const hamiltonians::Model& model, const Operator& serial, const Operator& dist, const std::string& tag)
{
    const int m = 48;
    const numerics::KpmScaling scaling{8.0, 0.1};
    const auto ref = topokpm::testing::stochastic_trace(serial, m, 3, 99, scaling);
    const auto got = topokpm::testing::stochastic_trace(dist, m, 3, 99, scaling);
    const double d = max_diff(got.per_vector, ref.per_vector);
    expect(d < 1e-12, tag + ": stochastic moments differ by " + std::to_string(d));

    const int m_small = 12;
    const auto ref_exact = topokpm::testing::exact_trace(serial, m_small, 16, scaling);
    const auto got_exact = topokpm::testing::exact_trace(dist, m_small, 16, scaling);
    expect(max_diff(got_exact.moments, ref_exact.moments) < 1e-12, tag + ": exact-trace moments differ");

    const global_index n = model.num_rows();
    const std::vector<global_index> rows{0, n / 3, n / 2 + 1, n - 1};
    const auto plan = numerics::unit_vector_plan(n, rows);
    const auto ref_ldos = topokpm::testing::run_block_trace(serial, *plan, m_small, 2, scaling);
    const auto got_ldos = topokpm::testing::run_block_trace(dist, *plan, m_small, 2, scaling);
    expect(max_diff(got_ldos, ref_ldos) < 1e-12, tag + ": local-DOS moments differ");

    const auto lref = numerics::lanczos_bounds(serial, 30, 4, 0.005, 1e-4);
    const auto lgot = numerics::lanczos_bounds(dist, 30, 4, 0.005, 1e-4);
    const double width = lref.bounds.upper - lref.bounds.lower;
    expect(lgot.iterations == lref.iterations, tag + ": Lanczos iteration counts differ");
    expect(std::abs(lgot.bounds.lower - lref.bounds.lower) < 1e-9 * width &&
               std::abs(lgot.bounds.upper - lref.bounds.upper) < 1e-9 * width,
           tag + ": Lanczos bounds differ");
    check_eigs(serial, dist, tag);
}

/// --precision single under mpirun (issue 35): the distributed operator over a single SELL
/// or matrix-free part of the factory, equal and uneven weights, overlap and task modes,
/// against the serial single operator of the same kind. Both single runs are within the
/// random-walk rounding bound of double (tests/support/single_precision.hpp: |mu_n(single) -
/// mu_n(double)| <= 4 kappa c eps_f sqrt(n/2 + 1), c = (m + 3)(2||Ht|| + 1), m entries per
/// row); the distributed one rounds the remote rows' y once more (local epilogue, then the
/// correction): m + 1 for it. So the two differ by at most the sum of the two bounds; and
/// they must differ from each other by less than from double by much (a float halo sent as
/// double, or a stale halo, misses by orders of magnitude: checked against the double run).
void check_single(const hamiltonians::Model& model, const std::vector<double>& weights, bool free,
                  bool device_ranks, const std::string& tag)
{
    const double epsilon = 0.01;
    const numerics::KpmScaling scaling = numerics::kpm_scaling(gershgorin_bounds(model), epsilon);
    const int m = 256, r = 3;
    const auto bounds = bounds_for(model, weights, free);
    numerics::OperatorSpec spec;
    spec.kind = free ? numerics::OperatorKind::Free : numerics::OperatorKind::Sell;
    spec.sell = {4, 8};
    spec.precision = Precision::Single;
    const numerics::OperatorSource source = hamiltonians::operator_source(model);
    const auto serial = numerics::make_operator(spec, source).op;
    spec.rows = {bounds[my_rank], bounds[my_rank + 1]};
    const std::shared_ptr<const Operator> local = numerics::make_operator(spec, source).op;
    spec.precision = Precision::Double;
    spec.rows = {};
    const auto serial_double = numerics::make_operator(spec, source).op;
    const auto ref = topokpm::testing::stochastic_trace(*serial, m, r, 99, scaling);
    const auto dbl = topokpm::testing::stochastic_trace(*serial_double, m, r, 99, scaling);
    // One sweep first: each y entry of either single sweep is within (m + 1) u_f S_i + 2 u_f
    // |y_i| of the exact one (a float sum of <= m products, one rounding of the double
    // epilogue, one more for the remote correction), S_i = scale (sum_j |H_ij||x_j| +
    // |shift||x_i|) + |beta||y_i|: the two differ by <= 2 (m + 3) u_f (S_i + |y_i|).
    const global_index n = model.num_rows();
    const int width = 3;
    BlockVector xd(n, width), yd(n, width);
    numerics::fill_random_phase_vectors(xd, 11, 0, n);
    numerics::fill_random_phase_vectors(yd, 12, 0, n);
    const auto xs = convert_block<complex_single>(xd);
    auto ys = convert_block<complex_single>(yd);
    const auto y0 = ys;
    const AugmentedOps ops{0.37, 0.2, -1.0, true};
    DotSums ref_dots;
    serial->apply(xs, ys, ops, &ref_dots);
    const int max_row = model.max_row_length();
    const double u = std::numeric_limits<float>::epsilon() / 2;
    std::vector<global_index> cols(max_row);
    std::vector<complex_type> vals(max_row);
    // CPU ranks, then (device_ranks) GPU ranks in single on the host stand-in (rank 0
    // alone, every rank): the device path of the distributed operator with a float halo.
    std::vector<int> layouts{0};
    if (device_ranks) layouts.insert(layouts.end(), {1, mpi::size()});
    for (const int devices : layouts)
    for (const auto mode : {numerics::CommMode::Overlap, numerics::CommMode::Task}) {
        const bool on_device = my_rank < devices;
        numerics::DistributedOptions opts;
        opts.mode = mode;
        opts.device = on_device ? device::host_standin : device::no_device;
        const numerics::DistributedOperator dist(model, bounds, opts,
                                                 on_device ? numerics::make_host_standin_operator(local) : local);
        const std::string t = tag + " single " + numerics::comm_mode_name(mode) +
                              (devices == 0 ? "" : devices == 1 ? " rank 0 on the stand-in" : " every rank on the stand-in");
        expect(dist.precision() == Precision::Single, t + ": not single");
        expect(dist.halo_device() == (on_device ? "host-standin" : "host"), t + ": halo on " + dist.halo_device());
        const global_index b = bounds[my_rank], nl = dist.num_rows();
        BasicBlockVector<complex_single> xl = rows_of(xs, b, nl), yl = rows_of(y0, b, nl);
        DotSums dots;
        dist.apply(xl, yl, ops, &dots);
        double worst_sweep = 0.0;
        for (global_index i = 0; i < nl; ++i) {
            const int len = model.row(b + i, cols.data(), vals.data());
            for (int c = 0; c < width; ++c) {
                double s_i = std::abs(ops.shift) * std::abs(xs(b + i, c)) ;
                for (int k = 0; k < len; ++k) s_i += std::abs(vals[k]) * std::abs(xs(cols[k], c));
                s_i = std::abs(ops.scale) * s_i + std::abs(ops.beta) * std::abs(y0(b + i, c));
                const double tol = 2.0 * (max_row + 3) * u * (s_i + std::abs(ys(b + i, c)));
                worst_sweep = std::max(worst_sweep, std::abs(std::complex<double>(yl(i, c) - ys(b + i, c))) / tol);
            }
        }
        expect(mpi::allreduce_max(worst_sweep) <= 1.0,
               t + ": one sweep's y beyond the float rounding bound (" + std::to_string(worst_sweep) + " of it)");
        const auto got = topokpm::testing::stochastic_trace(dist, m, r, 99, scaling);
        double worst = 0.0, worst_double = 0.0;
        for (int c = 0; c < r; ++c)
            for (int k = 0; k < m; ++k) {
                const size_t i = static_cast<size_t>(c) * m + k;
                const double bound = topokpm::testing::single_moment_bound(k, max_row + 1, epsilon) +
                                     topokpm::testing::single_moment_bound(k, max_row, epsilon);
                worst = std::max(worst, std::abs(got.per_vector[i] - ref.per_vector[i]) / bound);
                worst_double = std::max(worst_double, std::abs(got.per_vector[i] - dbl.per_vector[i]));
            }
        expect(worst <= 1.0, t + ": moments beyond the single-precision rounding bound (" + std::to_string(worst) +
                                 " of it)");
        expect(worst_double > 0.0, t + ": moments equal to double's bitwise: not a float sweep");
    }
}

/// The halo through the node's shared window (the default; every rank of these tests is on
/// one node) against messages only: the same values reach the same remote correction, so
/// the moments (48 sweeps: both alternating buffers, widths 3 and 1) are bitwise equal.
void check_transports(const hamiltonians::Model& model, const std::vector<global_index>& bounds,
                      const std::shared_ptr<const Operator>& local, const std::string& tag)
{
    const numerics::KpmScaling scaling{8.0, 0.1};
    for (const auto mode : {numerics::CommMode::Overlap, numerics::CommMode::Task}) {
        numerics::DistributedOptions opts;
        opts.mode = mode;
        const numerics::DistributedOperator shared(model, bounds, opts, local);
        opts.shared_memory_halo = false;
        const numerics::DistributedOperator messages(model, bounds, opts, local);
        const std::string t = tag + " " + numerics::comm_mode_name(mode) + " shared window";
        expect(messages.shared_peers() == 0, t + ": messages-only operator has shared peers");
        if (mpi::size() > 1)
            expect(mpi::allreduce_sum(static_cast<std::int64_t>(shared.shared_peers())) > 0,
                   t + ": no rank exchanges through the shared window on one node");
        for (const int r : {3, 1}) {
            const auto a = topokpm::testing::stochastic_trace(shared, 48, r, 7, scaling);
            const auto b = topokpm::testing::stochastic_trace(messages, 48, r, 7, scaling);
            expect(a.per_vector == b.per_vector, t + ": moments differ from the message exchange (width " +
                                                     std::to_string(r) + ")");
        }
    }
}

int run()
{
    my_rank = mpi::rank();
    const int p = mpi::size();
    const std::vector<double> uneven_all{1.0, 2.75, 0.5, 1.3};
    for (const auto& params : {ti_params(), graphene_params()}) {
        const auto model = hamiltonians::make_model(params);
        const numerics::SellParams sp{4, 8};
        const auto serial_matrix =
            std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, model->num_rows(), sp));
        const auto serial = numerics::make_sell_operator(serial_matrix);
        for (const bool uneven : {false, true}) {
            std::vector<double> w(p, 1.0);
            if (uneven)
                for (int q = 0; q < p; ++q) w[q] = uneven_all[q % uneven_all.size()];
            for (const bool free : {false, true}) {
            const auto bounds = bounds_for(*model, w, free);
            // Matrix-free local part: the reference stencil of the rank's x-slab (x open; the
            // faces and the periodic wrap go through the halo); one rank keeps the whole box.
            // SELL local part: the factory's part of the rank's rows (numerics::RowRange).
            std::shared_ptr<const Operator> local;
            if (!free) {
                numerics::OperatorSpec spec;
                spec.sell = sp;
                spec.rows = {bounds[my_rank], bounds[my_rank + 1]};
                local = numerics::make_operator(spec, hamiltonians::operator_source(*model)).op;
            } else {
                const global_index plane = global_index(model->orbitals_per_site()) * params.ny * params.nz;
                const BlockStencil whole = model->block_stencil();
                local = make_block_stencil_reference_operator(
                    p == 1 ? whole
                           : x_slab(whole, static_cast<int>(bounds[my_rank] / plane),
                                    static_cast<int>(bounds[my_rank + 1] / plane)));
            }
            check_single(*model, w, free, !uneven, params.name + (free ? " free" : " sell") + (uneven ? " uneven" : " equal"));
            check_transports(*model, bounds, local, params.name + (free ? " free" : " sell") + (uneven ? " uneven" : " equal"));
            for (const auto mode : {numerics::CommMode::Vector, numerics::CommMode::Overlap, numerics::CommMode::Task})
                for (const bool every : {false, true}) {
                    numerics::DistributedOptions opts;
                    opts.mode = mode;
                    opts.reduce_every_sweep = every;
                    const numerics::DistributedOperator dist(*model, bounds, opts, local);
                    const std::string tag = params.name + (free ? " free" : " sell") + (uneven ? " uneven " : " equal ") +
                                            numerics::comm_mode_name(mode) + (every ? " reduce-every-sweep" : "");
                    check_halo(*model, dist, tag);
                    check_sweep(*model, *serial, dist, tag);
                    with_chebfd = mode == numerics::CommMode::Vector && !every;
                    check_kpm(*model, *serial, dist, tag);
                    if (with_chebfd) check_orthonormalize(dist, tag);
                }
            }
        }
    }
    return verdict("distributed check");
}

}  // namespace

int main(int argc, char** argv)
{
    return topokpm::testing::mpi_check::run_check(argc, argv, topokpm::mpi::ThreadLevel::multiple, run);
}
