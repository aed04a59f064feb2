#include "app/run/conductivity_phase.hpp"

#include <algorithm>
#include <string>

#include "analysis/conductivity.hpp"
#include "analysis/statistics.hpp"
#include "app/cli/operator_choice.hpp"
#include "app/run/interrupt.hpp"
#include "app/run/moments_job.hpp"
#include "app/run/run_output.hpp"
#include "numerics/kpm/block_trace.hpp"
#include "numerics/kpm/two_index.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/base/log.hpp"
#include "runtime/base/system.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::app {

namespace {

/// The velocities as SELL on the device H runs on (`run`: the run's operator spec,
/// Distribution::operator_spec): SELL-8-1 on the CPU (unsorted: no permutation to undo, and
/// C = 8 has specialised kernels at every registered width, where CRS's C = 1 takes the
/// generic one at W >= 2), SELL-32-1 on its CUDA device (a chunk is a warp), so that the
/// velocities leave their blocks where H does.
numerics::OperatorSpec velocity_spec(const numerics::OperatorSpec& run)
{
    numerics::OperatorSpec spec;
    spec.kind = numerics::OperatorKind::Sell;
    spec.sell = {8, 1};
    spec.device = run.device;
    spec.device_index = run.device_index;
    spec.rows = run.rows;
    return spec;
}

/// Where the two-index trace keeps its vectors: the CUDA device of the run's operator, or
/// the host (-1; numerics/kpm/two_index_store.hpp).
int trace_device(const numerics::OperatorSpec& run)
{
    return run.device == numerics::Backend::Cuda ? run.device_index : -1;
}

int energy_points(const RunConfig& cfg)
{
    return cfg.kpm.energy_points > 0 ? cfg.kpm.energy_points : 2 * cfg.kpm.num_moments;
}

const char* kAxisName = "xyz";

}  // namespace

double conductivity_bytes(const RunConfig& cfg, const hamiltonians::Model& model, global_index rows,
                          global_index halo_rows, int width)
{
    hamiltonians::parse_conductivity_component(cfg.kpm.conductivity, model);
    const double n = static_cast<double>(rows);
    const double nonzeros = static_cast<double>(model.estimated_nonzeros()) * n / static_cast<double>(model.num_rows());
    const numerics::OperatorCostModel sell =
        numerics::operator_cost_model(velocity_spec(operator_spec(cfg)), 1.0, false);
    const double k = energy_points(cfg), m = cfg.kpm.num_moments;
    const std::int64_t slots = cfg.kpm.trace == TraceKind::Exact ? 1 : cfg.kpm.num_vectors;
    // The trace (its moments included), the velocities with their halo buffers (received and
    // sent, W columns each), one slot's moments copied for its sigma, the grids and every
    // slot's sigma for the error bars, and the state a checkpoint copies: the sums, the left
    // recurrence's two blocks and raw moments (under mpirun also a buffer of the sums for
    // MPI's one sum over the ranks).
    const double w = std::min<double>(width, cfg.kpm.trace == TraceKind::Exact ? double(model.num_rows())
                                                                               : cfg.kpm.num_vectors);
    return numerics::two_index_bytes(rows, cfg.kpm.num_moments, width, slots) +
           2.0 * (sell.matrix_bytes(n, nonzeros) + 2.0 * 16.0 * static_cast<double>(halo_rows) * w) + 16.0 * m * m +
           8.0 * k * (4.0 + 2.0 * static_cast<double>(slots)) +
           16.0 * ((halo_rows > 0 ? 2.0 : 1.0) * static_cast<double>(slots) * m * m + 2.0 * n * w) +
           8.0 * w * numerics::probing_trace_moments(cfg.kpm.num_moments);
}

ConductivityOutcome compute_conductivity(const RunConfig& cfg, const hamiltonians::Model& model,
                                         const Distribution& dist, const Operator& h,
                                         const numerics::KpmScaling& scaling, const SpectralBounds& bounds, int width,
                                         ConductivityCheckpoints ck)
{
    ConductivityOutcome c;
    c.axes = hamiltonians::parse_conductivity_component(cfg.kpm.conductivity, model);
    c.measure = hamiltonians::conductivity_measure(model);
    c.width = width;
    const global_index n = model.num_rows();
    // The velocities on this rank's rows, distributed like H (Distribution::wrap of the same
    // split): a block of local rows means the same rows for H, v_a and v_b.
    std::array<std::unique_ptr<hamiltonians::VelocityRows>, 2> rows;
    std::array<std::shared_ptr<const Operator>, 2> v;
    const numerics::OperatorSpec run = dist.operator_spec(cfg);
    const numerics::OperatorSpec spec = velocity_spec(run);
    for (int i = 0; i < 2; ++i) {
        if (i == 1 && c.axes[1] == c.axes[0]) break;  // v_a = v_b: one matrix
        rows[i] = std::make_unique<hamiltonians::VelocityRows>(model, c.axes[i]);
        numerics::OperatorSource source;
        source.rows = rows[i].get();
        source.estimated_nonzeros = static_cast<double>(model.estimated_nonzeros());
        v[i] = dist.wrap(cfg, *rows[i], numerics::make_operator(spec, source).op, false);
    }
    const Operator& va = *v[0];
    const Operator& vb = v[1] ? *v[1] : va;
    const std::unique_ptr<numerics::StartVectorPlan> plan =
        cfg.kpm.trace == TraceKind::Exact ? numerics::exact_trace_plan(n)
                                          : numerics::random_phase_plan(n, cfg.kpm.num_vectors, cfg.kpm.vector_seed);
    numerics::TwoIndexTrace t;
    t.h = &h;
    t.va = &va;
    t.vb = &vb;
    t.plan = plan.get();
    t.num_moments = cfg.kpm.num_moments;
    t.block_width = width;
    t.scaling = scaling;
    t.device = trace_device(run);
    const double t0 = wall_seconds();
    double last = t0;
    std::int64_t first_done = -1, position = 0, total_sweeps = 0;  // progress: where this run started and stands
    const auto progress = [&](std::int64_t done, std::int64_t total) {
        if (first_done < 0) first_done = done - 1;
        position = done;
        total_sweeps = total;
        const double now = wall_seconds();
        if (now - last < cfg.outputs.progress_interval_s || done == total) return;
        last = now;
        log::info("  conductivity sweeps ", done, "/", total, ", elapsed ", fmt("%.1f", now - t0), " s, remaining ~",
                  fmt("%.1f", (now - t0) / double(done - first_done) * double(total - done)), " s");
    };
    if (ck.resume)
        log::info("restart     : the two-index moments from block ", ck.resume->blocks_done + 1, ", ",
                  ck.resume->left ? detail::concat(ck.resume->left_done, " left vectors into it")
                                  : std::string("its start"));
    // Checkpoints, decided at every resumable point of the trace: a signal or the deadline
    // stops the phase, a period writes and goes on. The deadline test is the DOS moments'
    // (moments_job.cpp, time_is_short): the next point may come after the longest gap
    // between points seen so far, then the write; both with a factor 2, the first write
    // guessed from its bytes at 100 MB/s plus 0.2 s.
    double last_point = t0, last_checkpoint = t0, longest_gap = 0.0, write_seconds = -1.0;
    std::int64_t stop_signal = 0;
    bool time_short = false;
    std::string last_failure;
    const double state_bytes =
        16.0 * (double(plan->num_slots()) * t.num_moments * t.num_moments + 2.0 * double(h.num_rows()) * width);
    CheckpointRanks ranks = ck.ranks;
    ranks.sum = [&h](double* values, std::size_t count) { h.sum_over_ranks(values, count); };
    numerics::TwoIndexCheckpoints hooks;
    hooks.due = [&] {
        const double now = wall_seconds();
        longest_gap = std::max(longest_gap, now - last_point);
        last_point = now;
        stop_signal = SignalCatcher::pending();
        const double write = write_seconds >= 0.0 ? write_seconds : state_bytes / 100e6 + 0.2;
        time_short = ck.deadline > 0.0 && now + 2.0 * (longest_gap + write) >= ck.deadline;
        std::int64_t periodic = ck.every_s > 0.0 && now - last_checkpoint >= ck.every_s;
        if (dist.distributed()) {  // a signal reaches the ranks at different points: all take the first
            std::vector<std::int64_t> flags{stop_signal, time_short, periodic};
            dist.max(flags);
            stop_signal = flags[0];
            time_short = flags[1] != 0;
            periodic = flags[2];
        }
        return stop_signal != 0 || time_short || periodic != 0;
    };
    hooks.save = [&](const numerics::TwoIndexState& state) {
        const bool stop = stop_signal != 0 || time_short;
        const std::string why = stop_signal != 0 ? detail::concat("stopped by ", signal_name(int(stop_signal)))
                                                 : std::string("stopped before the --time-limit");
        const double t_write = wall_seconds();
        try {
            write_checkpoint(ck.path, ck.header, nullptr, ranks, &state);
        } catch (const IoError& e) {
            // Under mpirun every rank is here (the collective writer agrees on failures).
            last_checkpoint = wall_seconds();
            if (stop) {
                const std::string message = detail::concat(
                    why, " during the --conductivity phase, but the checkpoint could not be written: ", e.what(),
                    c.checkpoint_id || ck.previous_intact
                        ? detail::concat("; the previous checkpoint of this run is intact (resume with: ",
                                         ck.resume_command, ")")
                        : std::string("; no checkpoint exists, the progress is lost"));
                if (dist.distributed()) throw StopFailed(message);  // main() prints it once
                throw IoError(message);
            }
            if (e.what() != last_failure)
                log::warning("checkpoint not written, the run goes on: ", e.what(),
                             "; further failures for this reason are only counted");
            last_failure = e.what();
            return;
        }
        write_seconds = std::max(write_seconds, wall_seconds() - t_write);
        last_checkpoint = wall_seconds();
        ++c.checkpoints_written;
        files::FileId id;
        if (files::identify(ck.path, id)) c.checkpoint_id = id;
        if (stop)
            throw RunInterrupted(detail::concat(why, " during the --conductivity phase after ", position, " of ",
                                                total_sweeps, " sweeps; checkpoint written to ", ck.path,
                                                "\nresume with: ", ck.resume_command));
        log::info("  checkpoint written to ", ck.path);
    };
    numerics::TwoIndexMoments moments =
        numerics::two_index_moments(t, progress, hooks, ck.resume ? &*ck.resume : nullptr);
    ck.resume.reset();
    c.seconds = wall_seconds() - t0;
    c.gamma = std::move(moments.gamma);
    // Sweeps of H: 2 (M - 1) per block; flops: the H sweeps, the M + 1 velocity products and
    // the 8 M^2 N W of the ZGEMMs per block.
    const global_index columns = plan->num_columns();
    const int w = static_cast<int>(std::min<global_index>(width, columns));
    const std::int64_t blocks = (columns + w - 1) / w;
    const double m = cfg.kpm.num_moments, nnz = static_cast<double>(model.estimated_nonzeros());
    c.sweeps = blocks * 2 * (cfg.kpm.num_moments - 1);
    const double flops = static_cast<double>(blocks) * w *
                         (2.0 * (m - 1.0) * (8.0 * nnz + 34.0 * n) + (m + 1.0) * 8.0 * nnz + 8.0 * m * m * n);
    // A resumed run made the sweeps from where it started (its recomputed right pass aside).
    const double share = total_sweeps > 0 && first_done > 0 ? double(total_sweeps - first_done) / double(total_sweeps) : 1.0;
    c.gflops = c.seconds > 0.0 ? share * flops / c.seconds * 1e-9 : 0.0;

    analysis::ConductivityGridInput in;
    in.gamma = &c.gamma;
    in.num_moments = cfg.kpm.num_moments;
    in.damping = analysis::damping_factors(cfg.kpm.kernel, cfg.kpm.num_moments, cfg.kpm.lorentz_lambda);
    in.num_points = energy_points(cfg);
    in.scale_a = scaling.a;
    in.scale_b = scaling.b;
    in.lower = bounds.lower;
    in.upper = bounds.upper;
    in.rows_per_measure = static_cast<double>(n) / c.measure.value;
    in.temperature = cfg.kpm.temperature;
    c.sigma = analysis::reconstruct_conductivity(in);
    // Error bars: sigma is linear in Gamma, so its standard error is that of the vectors' own
    // sigma (analysis/statistics.hpp), each reconstructed from its own moments.
    if (moments.num_slots >= 2) {
        const auto mm = c.gamma.size();
        const int k = static_cast<int>(c.sigma.energy.size());
        std::vector<double> samples;
        std::vector<std::complex<double>> one;
        for (std::int64_t s = 0; s < moments.num_slots; ++s) {
            one.assign(moments.per_slot.begin() + static_cast<std::ptrdiff_t>(s * mm),
                       moments.per_slot.begin() + static_cast<std::ptrdiff_t>((s + 1) * mm));
            in.gamma = &one;
            const analysis::Spectrum sample = analysis::reconstruct_conductivity(in);
            samples.insert(samples.end(), sample.rho.begin(), sample.rho.end());
        }
        c.sigma_stderr = analysis::sample_statistics(samples, static_cast<int>(moments.num_slots), k).stderr_;
    }
    log::info("conductivity: sigma_", kAxisName[c.axes[0]], kAxisName[c.axes[1]], " at T = ", cfg.kpm.temperature,
              " t, M = ", cfg.kpm.num_moments, ", ", columns, " vectors in blocks of ", w, ": ", c.sweeps,
              " sweeps of H in ", fmt("%.3f", c.seconds), " s, ", fmt("%.2f", c.gflops), " Gflop/s; memory ",
              format_bytes(numerics::two_index_bytes(h.num_rows(), cfg.kpm.num_moments, w, plan->num_slots())),
              " of vectors and moments", dist.distributed() ? " on rank 0" : "");
    return c;
}

void write_conductivity(RunResult& out, const RunConfig& cfg, const ConductivityOutcome& c)
{
    const auto k = static_cast<std::uint64_t>(c.sigma.energy.size());
    const auto m = static_cast<std::uint64_t>(cfg.kpm.num_moments);
    const std::string component{kAxisName[c.axes[0]], kAxisName[c.axes[1]]};
    out.write_doubles("/conductivity/energy", {"t", "Chemical potentials mu of the conductivity (ascending)."},
                      c.sigma.energy, {k});
    out.write_doubles(
        "/conductivity/sigma",
        {"e^2/h", "The Kubo-Bastin conductivity sigma_" + component + "(mu) at the temperature of the group."},
        c.sigma.rho, {k});
    if (!c.sigma_stderr.empty())
        out.write_doubles("/conductivity/sigma_stderr",
                          {"e^2/h", "Standard error of sigma over the random vectors (each vector's sigma)."},
                          c.sigma_stderr, {k});
    out.write_complex(
        "/conductivity/moments",
        {"t^2 length^2", "Gamma_nm = Tr[v_a T_n(Ht) v_b T_m(Ht)] / N, row n, column m (velocities in t x length)."},
        c.gamma.data(), c.gamma.size(), {m, m});
    out.write_attributes("/conductivity",
                         {{"component", component},
                          {"temperature", cfg.kpm.temperature},
                          {"kernel", analysis::to_string(cfg.kpm.kernel)},
                          {"unit", std::string("e^2/h")},
                          {c.measure.name, c.measure.value},
                          {"trace", to_string(cfg.kpm.trace)},
                          {"block_width", std::int64_t(c.width)},
                          {"sweeps", c.sweeps},
                          {"seconds", c.seconds},
                          {"gflops", c.gflops},
                          {"integration", std::string("midpoint rule in theta on the Chebyshev grid, inside the "
                                                      "spectral bounds")}});
}

}  // namespace topokpm::app
