#include "numerics/dense/tuning.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "numerics/dense/cholesky.hpp"
#include "numerics/dense/dense_kernels.hpp"
#include "numerics/dense/qr.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::numerics::dense {

namespace {

using tasks::Access;
using tasks::TaskContext;

/// Wall time of `reps` dominant kernels per worker of `device`, all at once.
double time_kernels(DenseOp op, int large, const DenseExecution& execution, int device, int reps)
{
    auto runtime = make_runtime(execution);
    const int workers = device == 0 ? execution.host_workers : execution.device_workers;
    const int ib = std::min(execution.inner_block, large);
    const std::size_t tile = std::size_t(large) * large;
    // Per worker: its own A, B, C (and T) so the workers never wait on each other.
    std::vector<std::vector<complex_double>> data(static_cast<std::size_t>(workers) * 4);
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> x(-1.0, 1.0);
    for (int w = 0; w < workers; ++w)
        for (int m = 0; m < 4; ++m) {
            auto& v = data[static_cast<std::size_t>(w) * 4 + m];
            v.resize(tile);
            for (auto& e : v) e = {x(rng), x(rng)};
            runtime->register_data(tile_id(m, w, 0), v.data(), tile * sizeof(complex_double), device);
        }
    if (op == DenseOp::qr)  // valid reflectors for TSMQR: factor each worker's V first
        for (int w = 0; w < workers; ++w)
            runtime->submit({[=](const TaskContext& c) {
                                 auto* r = c.as<complex_double>(tile_id(2, w, 0));
                                 kernels::tile_kernels<complex_double>(c.kind).tpqrt(
                                     c.queue, large, large, 0, ib, r, large, c.as<complex_double>(tile_id(0, w, 0)),
                                     large, c.as<complex_double>(tile_id(3, w, 0)), ib);
                             },
                             {{tile_id(2, w, 0), Access::read_write}, {tile_id(0, w, 0), Access::read_write},
                              {tile_id(3, w, 0), Access::read_write}}});
    auto round = [&] {
        for (int w = 0; w < workers; ++w) {
            const auto a = tile_id(0, w, 0), b = tile_id(1, w, 0), c = tile_id(2, w, 0), t = tile_id(3, w, 0);
            if (op == DenseOp::cholesky)
                runtime->submit({[=](const TaskContext& x) {
                                     kernels::tile_kernels<complex_double>(x.kind).gemm_minus_conj(
                                         x.queue, large, large, large, x.as<complex_double>(a), large,
                                         x.as<complex_double>(b), large, x.as<complex_double>(c), large);
                                 },
                                 {{c, Access::read_write}, {a, Access::read}, {b, Access::read}}});
            else
                runtime->submit({[=](const TaskContext& x) {
                                     kernels::tile_kernels<complex_double>(x.kind).tpmqrt(
                                         x.queue, 'C', large, large, large, 0, ib, x.as<complex_double>(a), large,
                                         x.as<complex_double>(t), ib, x.as<complex_double>(b), large,
                                         x.as<complex_double>(c), large);
                                 },
                                 {{b, Access::read_write}, {c, Access::read_write}, {a, Access::read},
                                  {t, Access::read}}});
        }
    };
    round();  // untimed: stages the tiles on the device and warms the caches
    runtime->wait_all();
    const double start = wall_seconds();
    for (int r = 0; r < reps; ++r) round();
    runtime->wait_all();
    return wall_seconds() - start;
}

/// Bytes/s of staging a B x B tile on the device: an empty device task reads it (its busy
/// time is the copy + completion), then an empty host task writes it, which invalidates the
/// device copy but keeps its buffer; the first round (which allocates) is not counted.
double time_link(int large, const DenseExecution& execution, int reps)
{
    DenseExecution by_owner = execution;
    by_owner.rates = {};
    auto runtime = make_runtime(by_owner);
    const std::size_t bytes = std::size_t(large) * large * sizeof(complex_double);
    std::vector<complex_double> tile(bytes / sizeof(complex_double));
    const tasks::DataId id = tile_id(0, 0, 0);
    runtime->register_data(id, tile.data(), bytes, 0);
    auto device_seconds = [&] {
        const auto st = runtime->stats();
        double seconds = 0.0;
        for (std::size_t w = 0; w < st.busy_seconds.size(); ++w)
            if (st.worker_device[w] == 1) seconds += st.busy_seconds[w];
        return seconds;
    };
    auto round = [&] {
        runtime->submit({[](const TaskContext&) {}, {{id, Access::read}}, 0.0, 1});
        runtime->submit({[](const TaskContext&) {}, {{id, Access::read_write}}, 0.0, 0});
    };
    round();
    runtime->wait_all();
    const double first = device_seconds();
    for (int r = 0; r < reps; ++r) round();
    runtime->wait_all();
    const double seconds = device_seconds() - first;
    return seconds > 0 ? double(bytes) * reps / seconds : 0.0;
}

double kernel_flops(DenseOp op, double b)
{
    // GEMM: b^3 complex multiply-adds (8 real flops); TSMQR with a full b x b V (l = 0):
    // 2 b^3 (W = A + V^H B and B -= V W; the ib x ib T products are lower order).
    return op == DenseOp::cholesky ? 8 * b * b * b : 16 * b * b * b;
}

}  // namespace

KernelRates measure_kernel_rates(DenseOp op, int large, const DenseExecution& execution, int reps)
{
    TOPOKPM_USER_REQUIRE(execution.device_workers >= 1, "measuring kernel rates needs a device ({device_workers} >= 1)");
    TOPOKPM_USER_REQUIRE(large >= 1 && reps >= 1, "{large_tile} and the repetitions must be >= 1, got ", large,
                         " and ", reps);
    const double flops = kernel_flops(op, large) * reps;
    KernelRates rates;
    rates.host = flops * execution.host_workers / time_kernels(op, large, execution, 0, reps);
    rates.device = flops * execution.device_workers / time_kernels(op, large, execution, 1, reps);
    rates.link = time_link(large, execution, reps);
    return rates;
}

int estimate_host_width(const KernelRates& rate, int large, int slices, int granule)
{
    TOPOKPM_USER_REQUIRE(rate.host > 0 && rate.device > 0, "kernel rates must be > 0, got host ", rate.host,
                         " and device ", rate.device);
    TOPOKPM_USER_REQUIRE(slices >= 2 && granule >= 1, "{slices} must be >= 2 and the granule >= 1, got ", slices,
                         " and ", granule);
    const int step = (slices - 1) * granule;
    const int highest = (large - 1) / step * step;
    TOPOKPM_USER_REQUIRE(highest >= step, "a large tile of ", large, " columns has no host width on the grid of ",
                         step, " ({slices} - 1 = ", slices - 1, " narrow slices of a multiple of ", granule, ")");
    const double ideal = rate.host / (rate.host + rate.device) * large;
    const int nearest = static_cast<int>(std::lround(ideal / step)) * step;
    return std::clamp(nearest, step, highest);
}

HostWidthSearch search_host_width(int start, int step, int lowest, int highest, int max_probes,
                                  const std::function<HostWidthProbe(int)>& probe)
{
    TOPOKPM_USER_REQUIRE(step >= 1 && lowest <= start && start <= highest && max_probes >= 1,
                         "host-width search: need step >= 1, lowest <= start <= highest and >= 1 probe, got step ",
                         step, ", ", lowest, " <= ", start, " <= ", highest, ", ", max_probes, " probes");
    HostWidthSearch search;
    int width = start;
    int direction = 0;  // -1: host slower, shrink B_h; +1: device slower, grow it
    for (int p = 0; p < max_probes; ++p) {
        const HostWidthProbe result = probe(width);
        search.probes.push_back(result);
        const int want = result.host_seconds > result.device_seconds ? -1 : +1;
        if (direction != 0 && want != direction) break;  // crossed the balance point
        direction = want;
        const int next = width + want * step;
        if (next < lowest || next > highest) break;
        width = next;
    }
    const auto best = std::min_element(search.probes.begin(), search.probes.end(),
                                       [](const HostWidthProbe& a, const HostWidthProbe& b) {
                                           return std::abs(a.host_seconds - a.device_seconds) <
                                                  std::abs(b.host_seconds - b.device_seconds);
                                       });
    search.host_width = best->host_width;
    return search;
}

HostWidthSearch tune_host_width(DenseOp op, int large, const DenseExecution& execution, int granule, int max_probes,
                                int* estimate)
{
    const int s = execution.slices;
    DenseExecution by_owner = execution;  // the static layout is what is tuned: no cost model
    by_owner.rates = {};
    const int start = estimate_host_width(measure_kernel_rates(op, large, execution), large, s, granule);
    if (estimate != nullptr) *estimate = start;
    const int step = (s - 1) * granule;
    const int n = 3 * large;  // seed: N = c0 B #GPUs with c0 = 3 (one device here)
    std::mt19937_64 rng(11);
    std::normal_distribution<double> g(0.0, std::sqrt(0.5));
    std::vector<complex_double> a(std::size_t(n) * n);
    for (auto& e : a) e = {g(rng), g(rng)};
    if (op == DenseOp::cholesky) {  // strictly diagonally dominant Hermitian: HPD
        for (int c = 0; c < n; ++c)
            for (int r = 0; r < c; ++r) a[std::size_t(c) * n + r] = std::conj(a[std::size_t(r) * n + c]);
        for (int d = 0; d < n; ++d) a[std::size_t(d) * n + d] = 2.0 * n;
    }
    auto probe = [&](int host_width) {
        TileMatrix<complex_double> t(n, large, hybrid_widths(n, large, s, host_width));
        t.from_column_major(a.data(), n);
        DenseReport report;
        if (op == DenseOp::cholesky) report = cholesky(t, by_owner);
        else qr(std::move(t), by_owner, &report);
        HostWidthProbe p;
        p.host_width = host_width;
        const auto& st = report.stats;
        for (std::size_t w = 0; w < st.busy_seconds.size(); ++w)
            (st.worker_device[w] == 0 ? p.host_seconds : p.device_seconds) += st.busy_seconds[w];
        p.host_seconds /= by_owner.host_workers;
        p.device_seconds /= by_owner.device_workers;
        return p;
    };
    return search_host_width(start, step, step, (large - 1) / step * step, max_probes, probe);
}

}  // namespace topokpm::numerics::dense
