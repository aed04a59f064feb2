#include "app/run/moments_job.hpp"

#include <algorithm>
#include <optional>

#include "app/run/interrupt.hpp"
#include "runtime/base/files.hpp"
#include "runtime/base/log.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::app {

namespace {

[[noreturn]] void throw_stop_failure(bool distributed, const std::string& message)
{
    if (distributed) throw StopFailed(message);
    throw IoError(message);
}

}  // namespace

JobResult run_moments_job(const MomentsJob& job)
{
    JobResult result;
    int first = 0;
    if (job.resume) {
        first = job.resume->realization;
        result.slot_moments = job.resume->finished;
    }
    std::optional<SignalCatcher> signals;
    if (job.handle_signals) signals.emplace();
    double last_checkpoint = wall_seconds();
    std::string last_failure;  // of a periodic checkpoint
    double sweep_seconds = 0.0;  // spent in the sweeps of this run
    std::int64_t steps_this_run = 0;  // trace.step() calls behind sweep_seconds
    // Whether the job must stop now to have its checkpoint in place before the deadline: the
    // next chance comes after agree_every more sweeps, then the write. Both are taken from
    // this run's measurements with a factor 2 (a sweep may slow down, the file system too);
    // before the first checkpoint its write time is guessed from the bytes at 100 MB/s
    // (a pessimistic shared file system), plus 0.2 s to create and rename the file.
    const int between = job.agree_max ? job.agree_every : 1;
    auto time_is_short = [&](double now) {
        if (job.deadline <= 0.0) return false;
        // Serial: per step (one sweep, or two fused); distributed runs sweep one at a time.
        const double per_sweep = steps_this_run > 0 ? sweep_seconds / double(steps_this_run) : 0.0;
        double write = result.checkpoint_seconds;
        if (result.checkpoints_written == 0) write = job.checkpoint_bytes / 100e6 + 0.2;
        return now + 2.0 * (per_sweep * between + write) >= job.deadline;
    };
    for (int k = first; k < job.num_realizations; ++k) {
        const std::shared_ptr<const Operator> op = job.operator_for(k);
        const std::unique_ptr<numerics::StartVectorPlan> plan = job.plan_for(k);
        numerics::BlockTrace trace(*op, *plan, job.num_moments, job.block_width, job.scaling);
        if (job.resume && k == first) {
            numerics::TraceState state = job.resume->trace;
            trace.restore(std::move(state));
        }
        result.num_blocks = trace.num_blocks();
        result.block_width = trace.block_width();
        result.num_sweeps = job.num_realizations * trace.num_sweeps();
        auto save = [&] {
            CheckpointData d = job.checkpoint_header;
            d.realization = k;
            d.num_realizations = job.num_realizations;
            d.num_moments = job.num_moments;
            d.num_slots = job.num_slots;
            d.finished = result.slot_moments;
            CheckpointRanks ranks = job.ranks;
            ranks.sum = [&op](double* v, std::size_t n) { op->sum_over_ranks(v, n); };
            const double t_write = wall_seconds();
            write_checkpoint(job.checkpoint_path, d, &trace, ranks);
            result.checkpoint_seconds = std::max(result.checkpoint_seconds, wall_seconds() - t_write);
            ++result.checkpoints_written;
            files::FileId id;
            if (files::identify(job.checkpoint_path, id)) result.checkpoint_id = id;
            last_checkpoint = wall_seconds();
        };
        // Decisions are read before every sweep (under mpirun every agree_every sweeps, the
        // same sweeps on every rank), so a signal that arrived while the operator was being
        // built still stops the run at a consistent state.
        while (true) {
            const bool distributed = bool(job.agree_max);
            std::int64_t stop_signal = 0, periodic = 0, time_short = 0;
            if (!distributed || result.sweeps_this_run % job.agree_every == 0) {
                const double now = wall_seconds();
                stop_signal = signals ? SignalCatcher::pending() : 0;
                periodic = job.checkpoint_every_s > 0.0 && !trace.done() && now - last_checkpoint >= job.checkpoint_every_s;
                time_short = !trace.done() && time_is_short(now);
                if (distributed) {
                    std::vector<std::int64_t> flags{stop_signal, periodic, time_short};
                    job.agree_max(flags);
                    stop_signal = flags[0];
                    periodic = flags[1];
                    time_short = flags[2];
                }
            }
            if (stop_signal != 0 || time_short != 0) {
                const std::string why = stop_signal ? detail::concat("stopped by ", signal_name(int(stop_signal)))
                                                    : std::string("stopped before the --time-limit");
                try {
                    save();
                } catch (const IoError& e) {
                    // Under mpirun every rank is here (the writer agrees on failures).
                    throw_stop_failure(distributed, detail::concat(
                        why, ", but the checkpoint could not be written: ", e.what(),
                        result.checkpoint_id ? detail::concat("; the previous checkpoint ", job.checkpoint_path,
                                                              " is intact (resume with: ", job.resume_command, ")")
                        : job.resume ? std::string("; the checkpoint this run resumed from is intact (resume "
                                                   "with the same command)")
                                     : std::string("; no checkpoint exists, the progress is lost")));
                }
                throw RunInterrupted(detail::concat(
                    why, " after ", k * trace.num_sweeps() + trace.sweeps_done(), " of ", result.num_sweeps,
                    " sweeps; checkpoint written to ", job.checkpoint_path, "\nresume with: ", job.resume_command));
            }
            if (periodic != 0) {
                // A checkpoint that does not fit is no reason to lose the run: the previous
                // one (renamed into place atomically) stays valid, and the next try may fit.
                try {
                    save();
                    log::info("  checkpoint written to ", job.checkpoint_path);
                } catch (const IoError& e) {
                    last_checkpoint = wall_seconds();
                    ++result.checkpoints_failed;
                    // Said once per reason: a disk that stays full must not flood the log.
                    if (e.what() != last_failure)
                        log::warning("checkpoint not written, the run goes on: ", e.what(),
                                     result.checkpoint_id ? "; the previous checkpoint is kept" : "",
                                     "; further failures for this reason are only counted");
                    last_failure = e.what();
                }
            }
            if (trace.done()) break;
            const double t_sweep = wall_seconds();
            const std::int64_t before = trace.sweeps_done();
            trace.step();  // one sweep, or two fused (Operator::fused_steps)
            sweep_seconds += wall_seconds() - t_sweep;
            result.sweeps_this_run += trace.sweeps_done() - before;
            ++steps_this_run;
            if (job.progress)
                job.progress({k, job.num_realizations, std::min(trace.blocks_done(), trace.num_blocks() - 1),
                              trace.num_blocks(), k * trace.num_sweeps() + trace.sweeps_done(), result.num_sweeps,
                              result.sweeps_this_run});
        }
        result.slot_moments.push_back(trace.slot_moments());
    }
    return result;
}

}  // namespace topokpm::app
