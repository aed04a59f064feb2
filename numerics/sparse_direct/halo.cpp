// HALO (seed 003): the Schur-complement update of every step split between the host and an
// accelerator that keeps a zero-initialized structural shadow of the panels, with lazy
// reduction of the shadow into each panel before its step (sparse_lu.hpp, docs/sparse_direct.md).
// The steps become tasks of the dataflow runtime (runtime/tasks): per step k
//   P_k (host)        panel(k) += shadow(k) (lazy reduction), factor panel k
//   H_k (host)        columns R_k[0, n_g) into the host's panels
//   D_k (accelerator) columns R_k[n_g, m) into the shadow; reads panel(k), which the runtime
//                     copies to the accelerator
//   Z_k (accelerator) before the first D that touches shadow(t): fills it with -0.0 there
//                     (Access::overwrite: allocated on the accelerator, never uploaded)
// and the runtime orders them by their data (panel(t), shadow(t) per supernode t). Every task
// body calls the update kernels of its worker's device kind (update_kernels.hpp): the CPU's
// for the host and the host-memory device, cuBLAS and the scatter kernel for a GPU.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <numeric>
#include <vector>

#include <omp.h>

#include "numerics/sparse_direct/sparse_lu.hpp"
#include "numerics/sparse_direct/update_kernels.hpp"
#include "runtime/base/error.hpp"
#include "runtime/device/cuda_memory_space.hpp"
#include "runtime/tasks/dataflow.hpp"

namespace topokpm::sparse_direct {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr int kSplitSteps = 16;  // split points step the accelerator's flop share by about 1/16

// Rates of one worker on its own memory, measured on update-like shapes.
struct Rates {
    double gemm_flops = 0.0;      // real flop/s of zgemm m x w x nc
    double scatter_bytes = 0.0;   // bytes/s of dst[pos[i]] -= src[i] (48 bytes per entry)
};

// Best of several short trials: on a shared machine a trial that lost its core to another
// process says nothing about the kernel.
template <typename Body>
double best_rate(double units_per_call, Body&& body)
{
    double best = 0.0;
    for (int trial = 0; trial < 7; ++trial) {
        int calls = 0;
        const auto t0 = Clock::now();
        do {
            body();
            ++calls;
        } while (seconds_since(t0) < 0.003);
        best = std::max(best, units_per_call * calls / seconds_since(t0));
    }
    return best;
}

// body(i) for i in [0, count) shared among `team` OpenMP threads (the host worker's team,
// inside its task); the first exception is rethrown after the loop.
template <typename Body>
void share(int team, global_index count, Body&& body)
{
    if (team <= 1 || count <= 1) {
        for (global_index i = 0; i < count; ++i) body(i);
        return;
    }
    std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1) num_threads(team)
    for (global_index i = 0; i < count; ++i) {
        try {
            body(i);
        } catch (...) {
#pragma omp critical(topokpm_halo_error)
            if (!error) error = std::current_exception();
        }
    }
    if (error) std::rethrow_exception(error);
}

const UpdateKernels& kernels_of(tasks::DeviceKind kind)
{
    return kind == tasks::DeviceKind::cuda ? cuda::update_kernels() : cpu::update_kernels();
}

// A representative piece of the large steps (which hold the flops): m x 96 x 96 (96 = the
// default parallel_chunk), timed in batches of 4 calls and one synchronization, so that an
// asynchronous device is timed as the factorization drives it (queued calls, no wait between).
Rates measure_rates(const UpdateKernels& kernels, void* queue)
{
    const int m = 512, w = 96, nc = 96, batch = 4;
    const std::size_t sl = std::size_t{m} * nc, su = std::size_t{nc} * w, sv = std::size_t{m} * w;
    complex_double* l = kernels.scratch(queue, sl + su + sv + 2 * sv);
    complex_double *u = l + sl, *v = u + su, *dst = v + sv;
    kernels.fill(queue, l, sl, {0.5, 0.25});
    kernels.fill(queue, u, su, {0.25, -0.5});
    kernels.fill(queue, v, sv, {0.0, 0.0});
    kernels.fill(queue, dst, 2 * sv, {0.0, 0.0});
    ScatterPlan plan;  // every other row of a 2m-row target, as a supernode's rows are
    for (int i = 0; i < m; ++i) plan.index.push_back(2 * i - (i % 3 == 0 ? 1 : 0) + 1);
    for (int j = 0; j < w; ++j) plan.index.push_back(global_index{2} * m * j);
    plan.blocks.push_back({dst, 0, m, 0, w, 0, m});
    kernels.synchronize(queue);
    Rates r;
    r.gemm_flops = best_rate(8.0 * m * w * nc * batch, [&] {
        for (int b = 0; b < batch; ++b) kernels.gemm(queue, m, w, nc, l, m, u, nc, v, m);
        kernels.synchronize(queue);
    });
    r.scatter_bytes = best_rate(48.0 * m * w * batch, [&] {
        for (int b = 0; b < batch; ++b) kernels.scatter(queue, plan, v, m);
        kernels.synchronize(queue);
    });
    return r;
}

// Host -> accelerator copy bandwidth, on a space of the accelerator's kind (pageable host
// memory, as the panels are).
double measure_copy_bytes_per_second(tasks::DeviceKind kind, int gpu)
{
    auto space = kind == tasks::DeviceKind::cuda ? device::make_cuda_memory_space(gpu) : tasks::make_host_memory_space();
    const std::size_t bytes = std::size_t{4} << 20;
    std::vector<char> host(bytes, 1);
    void* dev = space->allocate(bytes);
    space->copy_from_host(dev, host.data(), bytes);  // first touch
    const double rate = best_rate(static_cast<double>(bytes), [&] { space->copy_from_host(dev, host.data(), bytes); });
    space->release(dev);
    return rate;
}

}  // namespace

// Split points: supernode boundaries T at which the accelerator's share of the update GEMM
// flops, sum over steps of 8 m_k nc_k per column of R_k in supernodes >= T, is nearest to
// 0, 1/16, ..., 1.
void SparseLU::compute_split_points()
{
    const global_index ns = static_cast<global_index>(sn_rows_.size());
    std::vector<double> into(ns, 0.0);
    for (global_index k = 0; k < ns; ++k) {
        const double per_column = 8.0 * static_cast<double>(sn_rows_[k].size()) *
                                  static_cast<double>(sn_begin_[k + 1] - sn_begin_[k]);
        for (global_index r : sn_rows_[k]) into[sn_of_[r]] += per_column;
    }
    std::vector<double> share(ns + 1, 0.0);
    for (global_index t = ns - 1; t >= 0; --t) share[t] = share[t + 1] + into[t];
    const double total = share[0];
    for (global_index t = 0; t <= ns; ++t)
        share[t] = total > 0.0 ? share[t] / total : static_cast<double>(ns - t) / std::max<global_index>(ns, 1);
    split_points_.assign({0, ns});
    for (int i = 1; i < kSplitSteps; ++i) {
        const double target = 1.0 - static_cast<double>(i) / kSplitSteps;
        // share[] is non-increasing in t: the first t with share <= target, or the one before.
        global_index t = std::lower_bound(share.begin(), share.end(), target, std::greater<double>()) - share.begin();
        if (t > 0 && std::abs(share[t - 1] - target) < std::abs(share[std::min(t, ns)] - target)) --t;
        split_points_.push_back(std::min(t, ns));
    }
    std::sort(split_points_.begin(), split_points_.end());
    split_points_.erase(std::unique(split_points_.begin(), split_points_.end()), split_points_.end());
    split_shares_.clear();
    for (global_index t : split_points_) split_shares_.push_back(share[t]);
}

void SparseLU::factorize_halo(complex_double z, const HaloOptions& options, double tau, FactorReport& report)
{
    const global_index ns = static_cast<global_index>(sn_rows_.size());
    HaloReport& halo = report.halo;
    halo.used = true;

    // The host worker's team for the large steps: the caller's OpenMP threads but one (the
    // accelerator's worker thread needs a core). Its pieces are the plain path's (panel-solve
    // blocks, update pieces, each one single-threaded BLAS call on disjoint entries), so the
    // bits do not depend on the team size.
    const int host_team = std::max(1, omp_get_max_threads() - 1);
    auto large = [this](global_index k) {
        const double m = static_cast<double>(sn_rows_[k].size()), nc = static_cast<double>(sn_begin_[k + 1] - sn_begin_[k]);
        return 8.0 * m * m * nc >= parallel_update_flops;
    };
    const tasks::DeviceKind accelerator_kind =
        options.accelerator == Accelerator::cuda ? tasks::DeviceKind::cuda : tasks::DeviceKind::host_memory;
    tasks::DataflowRuntime::Options ro;
    ro.devices = {tasks::DeviceConfig{tasks::DeviceKind::host, 1, {}},
                  tasks::DeviceConfig{accelerator_kind, 1, {}, options.gpu}};
    ro.window = static_cast<std::size_t>(std::max<global_index>(64, 5 * ns + 8));
    tasks::DataflowRuntime rt(ro);

    // Rates of both sides, measured concurrently on their own workers with their own kernels
    // (as they will run), once per analysis and accelerator.
    tasks::DataflowRuntime::Stats calibration = rt.stats();
    const int rates_key = static_cast<int>(options.accelerator) * 1024 + options.gpu;
    if (halo_rates_.empty() || halo_rates_key_ != rates_key) {
        Rates measured[2];
        for (int d = 0; d < 2; ++d) {
            tasks::TaskSpec calibrate;
            calibrate.device = d;
            calibrate.body = [&measured, d](const tasks::TaskContext& c) {
                measured[d] = measure_rates(kernels_of(c.kind), c.queue);
            };
            rt.submit(std::move(calibrate));
        }
        rt.wait_all();
        calibration = rt.stats();
        halo_rates_ = {measured[0].gemm_flops, measured[1].gemm_flops, measured[0].scatter_bytes,
                       measured[1].scatter_bytes, measure_copy_bytes_per_second(accelerator_kind, options.gpu)};
        halo_rates_key_ = rates_key;
    }
    const Rates rates[2] = {{halo_rates_[0], halo_rates_[2]}, {halo_rates_[1], halo_rates_[3]}};
    const double copy_rate = halo_rates_[4];
    halo.host_gemm_gflops = rates[0].gemm_flops * 1e-9;
    halo.device_gemm_gflops = rates[1].gemm_flops * 1e-9;
    halo.host_scatter_gb_s = rates[0].scatter_bytes * 1e-9;
    halo.device_scatter_gb_s = rates[1].scatter_bytes * 1e-9;
    halo.copy_gb_s = copy_rate * 1e-9;

    // Model (seed 003 §V-B, with fixed column owners): for split point T, step k costs
    // max(host, accelerator) with host = panel factorization + lazy reduction of panel k +
    // GEMM and SCATTER of n_g columns, accelerator = copy of panel k + GEMM and SCATTER of
    // m - n_g columns; the steps' costs add up.
    std::vector<global_index> last_column(ns, -1);  // the last update column that reaches supernode t
    for (global_index k = 0; k < ns; ++k)
        if (!sn_rows_[k].empty())
            for (global_index r : sn_rows_[k]) last_column[sn_of_[r]] = std::max(last_column[sn_of_[r]], sn_rows_[k].back());
    auto predict = [&](global_index boundary) {
        const global_index first_device_column = sn_begin_[boundary];
        double total = 0.0;
        for (global_index k = 0; k < ns; ++k) {
            const auto& rows = sn_rows_[k];
            const double m = static_cast<double>(rows.size());
            const double nc = static_cast<double>(sn_begin_[k + 1] - sn_begin_[k]);
            const double ng = static_cast<double>(std::lower_bound(rows.begin(), rows.end(), first_device_column) - rows.begin());
            const double bytes_k = 16.0 * static_cast<double>(panel_size(k));
            double host = (8.0 / 3.0 * nc * nc * nc + 8.0 * nc * nc * m) / rates[0].gemm_flops +
                          8.0 * m * ng * nc / rates[0].gemm_flops + 48.0 * m * ng / rates[0].scatter_bytes;
            if (last_column[k] >= first_device_column) host += bytes_k / copy_rate + 3.0 * bytes_k / rates[0].scatter_bytes;
            double device = 0.0;
            if (ng < m)
                device = bytes_k / copy_rate + 8.0 * m * (m - ng) * nc / rates[1].gemm_flops +
                         48.0 * m * (m - ng) / rates[1].scatter_bytes;
            total += std::max(host, device);
        }
        return total;
    };
    std::size_t choice = 0;
    if (options.device_share >= 0.0) {
        for (std::size_t i = 1; i < split_shares_.size(); ++i)
            if (std::abs(split_shares_[i] - options.device_share) < std::abs(split_shares_[choice] - options.device_share))
                choice = i;
        halo.predicted_seconds = predict(split_points_[choice]);
    } else {
        halo.chosen_by_model = true;
        double best = INFINITY;
        for (std::size_t i = 0; i < split_points_.size(); ++i) {
            const double p = predict(split_points_[i]);
            if (p < best) { best = p; choice = i; }
        }
        halo.predicted_seconds = best;
    }
    const global_index boundary = split_points_[choice];
    const global_index first_device_column = sn_begin_[boundary];
    halo.boundary_supernode = boundary;
    halo.device_flop_share = split_shares_[choice];

    // Data: panel(t) = 2t (host), shadow(t) = 2t + 1 (accelerator; its host mirror receives
    // it back for the lazy reduction, and is never read before: Z fills the shadow there).
    if (shadow_.size() != panels_.size()) shadow_.resize(panels_.size());
    for (global_index t = 0; t < ns; ++t) {
        const std::size_t bytes = sizeof(complex_double) * static_cast<std::size_t>(panel_size(t));
        rt.register_data(static_cast<tasks::DataId>(2 * t), panels_.data() + panel_offset_[2 * t], bytes, 0);
        rt.register_data(static_cast<tasks::DataId>(2 * t + 1), shadow_.data() + panel_offset_[2 * t], bytes, 1);
    }
    auto panel_id = [](global_index t) { return static_cast<tasks::DataId>(2 * t); };
    auto shadow_id = [](global_index t) { return static_cast<tasks::DataId>(2 * t + 1); };

    std::vector<global_index> replaced(ns, 0);
    std::vector<double> reduction_seconds(ns, 0.0);
    std::vector<char> touched(ns, 0);
    double ng_fraction_sum = 0.0;
    // Supernodes of rows[0, c1) (the targets of columns [c0, c1) are among them; see schur_update).
    auto targets = [this](global_index k, global_index c1) {
        std::vector<global_index> out;
        const auto& rows = sn_rows_[k];
        for (global_index i = 0; i < c1; ++i)
            if (out.empty() || out.back() != sn_of_[rows[i]]) out.push_back(sn_of_[rows[i]]);
        return out;
    };
    for (global_index k = 0; k < ns; ++k) {
        const auto& rows = sn_rows_[k];
        const global_index m = static_cast<global_index>(rows.size());
        const global_index ng = std::lower_bound(rows.begin(), rows.end(), first_device_column) - rows.begin();
        const double priority = -static_cast<double>(k);

        tasks::TaskSpec panel;
        panel.device = 0;
        panel.priority = priority + 0.5;
        panel.accesses.emplace_back(panel_id(k), tasks::Access::read_write);
        const bool reduce = touched[k] != 0;
        if (reduce) panel.accesses.emplace_back(shadow_id(k), tasks::Access::read);
        const int team = large(k) ? host_team : 1;
        panel.body = [this, k, z, tau, reduce, team, &replaced, &reduction_seconds, panel_id,
                      shadow_id](const tasks::TaskContext& c) {
            complex_double* p = c.as<complex_double>(panel_id(k));
            assemble(k, p, z);
            if (reduce) {
                const auto t0 = Clock::now();
                const complex_double* s = c.as<complex_double>(shadow_id(k));
                const global_index size = panel_size(k);
                for (global_index e = 0; e < size; ++e) p[e] += s[e];
                reduction_seconds[k] = seconds_since(t0);
            }
            factor_diagonal(k, p, tau, replaced[k]);
            share(team, 2 * panel_solve_pieces(k), [&](global_index piece) { panel_solve(k, p, piece); });
        };
        rt.submit(std::move(panel));
        if (reduce) rt.release(shadow_id(k));
        if (m == 0) continue;
        ++halo.steps;
        ng_fraction_sum += static_cast<double>(ng) / static_cast<double>(m);
        if (ng == 0) ++halo.steps_device_only;
        else if (ng < m) ++halo.steps_split;

        if (ng > 0) {
            tasks::TaskSpec host;
            host.device = 0;
            host.priority = priority;
            const std::vector<global_index> ts = targets(k, ng);
            for (global_index t : ts) host.accesses.emplace_back(panel_id(t), tasks::Access::read_write);
            host.accesses.emplace_back(panel_id(k), tasks::Access::read);
            host.body = [this, k, ng, team](const tasks::TaskContext&) {
                std::vector<std::pair<global_index, global_index>> pieces;
                update_segments(k, 0, ng, pieces);
                const PanelOf host_panels = [this](global_index t) { return panels_.data() + panel_offset_[2 * t]; };
                const std::size_t m = sn_rows_[k].size();
                share(team, static_cast<global_index>(pieces.size()), [&](global_index i) {
                    const auto [a, b] = pieces[static_cast<std::size_t>(i)];
                    ScatterPlan plan;
                    complex_double* work = cpu::update_kernels().scratch(nullptr, m * static_cast<std::size_t>(b - a));
                    schur_update(k, a, b, work, plan, host_panels);
                });
            };
            rt.submit(std::move(host));
        }
        if (ng < m) {
            const std::vector<global_index> ts = targets(k, m);
            std::vector<global_index> fresh;  // shadows this step touches first: zero-filled there
            for (global_index t : ts)
                if (!touched[t]) {
                    fresh.push_back(t);
                    halo.shadow_init_bytes += 16.0 * static_cast<double>(panel_size(t));
                    touched[t] = 1;
                }
            if (!fresh.empty()) {
                tasks::TaskSpec zero;
                zero.device = 1;
                zero.priority = priority;
                for (global_index t : fresh) zero.accesses.emplace_back(shadow_id(t), tasks::Access::overwrite);
                zero.body = [this, fresh, shadow_id](const tasks::TaskContext& c) {
                    const UpdateKernels& kernels = kernels_of(c.kind);
                    for (global_index t : fresh)
                        kernels.fill(c.queue, c.as<complex_double>(shadow_id(t)), static_cast<std::size_t>(panel_size(t)),
                                     complex_double(-0.0, -0.0));
                };
                rt.submit(std::move(zero));
            }
            tasks::TaskSpec device;
            device.device = 1;
            device.priority = priority;
            for (global_index t : ts) device.accesses.emplace_back(shadow_id(t), tasks::Access::read_write);
            device.accesses.emplace_back(panel_id(k), tasks::Access::read);
            device.body = [this, k, ng, m, ts, panel_id, shadow_id](const tasks::TaskContext& c) {
                // The accelerator's memory: panel k's copy and the shadows of the targets.
                std::vector<complex_double*> where(ts.size());
                for (std::size_t i = 0; i < ts.size(); ++i) where[i] = c.as<complex_double>(shadow_id(ts[i]));
                complex_double* own = c.as<complex_double>(panel_id(k));
                ScatterPlan plan;
                update_columns(kernels_of(c.kind), c.queue, k, ng, m, plan, [&](global_index t) {
                    if (t == k) return own;
                    return where[std::lower_bound(ts.begin(), ts.end(), t) - ts.begin()];
                });
            };
            rt.submit(std::move(device));
            rt.release(panel_id(k));
        }
    }
    rt.wait_all();
    const tasks::DataflowRuntime::Stats st = rt.stats();
    // The calibration tasks are not part of the factorization's work.
    for (std::size_t w = 0; w < st.busy_seconds.size(); ++w)
        (st.worker_device[w] == 0 ? halo.host_busy_seconds : halo.device_busy_seconds) +=
            st.busy_seconds[w] - calibration.busy_seconds[w];
    halo.bytes_to_device = static_cast<double>(st.bytes_to_device);
    halo.bytes_to_host = static_cast<double>(st.bytes_to_host);
    halo.mean_ng_fraction = halo.steps > 0 ? ng_fraction_sum / static_cast<double>(halo.steps) : 0.0;
    halo.lazy_reduction_seconds = std::accumulate(reduction_seconds.begin(), reduction_seconds.end(), 0.0);
    report.tiny_pivots = std::accumulate(replaced.begin(), replaced.end(), global_index{0});
}

}  // namespace topokpm::sparse_direct
