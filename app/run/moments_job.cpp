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

/// What is decided before a sweep (under mpirun agreed by every rank, the maximum).
struct Decisions {
    std::int64_t stop_signal = 0;  ///< the signal that asks the run to stop, 0 = none
    std::int64_t periodic = 0;     ///< a periodic checkpoint is due
    std::int64_t time_short = 0;   ///< the --time-limit comes before the next chance to stop
};

/// One run of a job: the state its sweeps carry from one to the next, and the named steps
/// of run_moments_job (decide, stop, checkpoint, sweep), in that order before every sweep.
class JobLoop {
public:
    explicit JobLoop(const MomentsJob& job) : job_(job)
    {
        if (job.resume) {
            first_ = job.resume->realization;
            result_.slot_moments = job.resume->finished;
        }
        if (job.handle_signals) signals_.emplace();
    }

    JobResult run()
    {
        for (int k = first_; k < job_.num_realizations; ++k) realization(k);
        return std::move(result_);
    }

private:
    /// Realization k: its operator and plan, swept to the end (from the checkpoint for the
    /// first one of a resumed run).
    void realization(int k)
    {
        const std::shared_ptr<const Operator> op = job_.operator_for(k);
        const std::unique_ptr<numerics::StartVectorPlan> plan = job_.plan_for(k);
        numerics::BlockTrace trace(*op, *plan, job_.num_moments, job_.block_width, job_.scaling);
        if (job_.resume && k == first_) {
            numerics::TraceState state = job_.resume->trace;
            trace.restore(std::move(state));
        }
        result_.num_blocks = trace.num_blocks();
        result_.block_width = trace.block_width();
        result_.num_sweeps = job_.num_realizations * trace.num_sweeps();
        // Decisions are read before every sweep (under mpirun every agree_every sweeps, the
        // same sweeps on every rank), so a signal that arrived while the operator was being
        // built still stops the run at a consistent state.
        while (true) {
            const Decisions now = decide(trace);
            if (now.stop_signal != 0 || now.time_short != 0) stop(k, trace, *op, now.stop_signal);
            if (now.periodic != 0) periodic_checkpoint(k, trace, *op);
            if (trace.done()) break;
            sweep(k, trace);
        }
        result_.slot_moments.push_back(trace.slot_moments());
        result_.last_sums = trace.sums();
    }

    /// Whether the job must stop now to have its checkpoint in place before the deadline: the
    /// next chance comes after agree_every more sweeps, then the write. Both are taken from
    /// this run's measurements with a factor 2 (a sweep may slow down, the file system too);
    /// before the first checkpoint its write time is guessed from the bytes at 100 MB/s
    /// (a pessimistic shared file system), plus 0.2 s to create and rename the file.
    bool time_is_short(double now) const
    {
        if (job_.deadline <= 0.0) return false;
        const int between = job_.agree_max ? job_.agree_every : 1;
        // Serial: per step (one sweep, or two fused); distributed runs sweep one at a time.
        const double per_sweep = steps_this_run_ > 0 ? sweep_seconds_ / double(steps_this_run_) : 0.0;
        double write = result_.checkpoint_seconds;
        if (result_.checkpoints_written == 0) write = job_.checkpoint_bytes / 100e6 + 0.2;
        return now + 2.0 * (per_sweep * between + write) >= job_.deadline;
    }

    /// The decisions before the next sweep: alone after every sweep, or agreed by the ranks
    /// every agree_every sweeps (none in between).
    Decisions decide(const numerics::BlockTrace& trace) const
    {
        Decisions d;
        const bool distributed = bool(job_.agree_max);
        if (distributed && result_.sweeps_this_run % job_.agree_every != 0) return d;
        const double now = wall_seconds();
        d.stop_signal = signals_ ? SignalCatcher::pending() : 0;
        d.periodic =
            job_.checkpoint_every_s > 0.0 && !trace.done() && now - last_checkpoint_ >= job_.checkpoint_every_s;
        d.time_short = !trace.done() && time_is_short(now);
        if (distributed) {
            std::vector<std::int64_t> flags{d.stop_signal, d.periodic, d.time_short};
            job_.agree_max(flags);
            d = {flags[0], flags[1], flags[2]};
        }
        return d;
    }

    /// Writes the checkpoint of realization k as it stands (collective under mpirun).
    void save(int k, const numerics::BlockTrace& trace, const Operator& op)
    {
        CheckpointData d = job_.checkpoint_header;
        d.realization = k;
        d.num_realizations = job_.num_realizations;
        d.num_moments = job_.num_moments;
        d.num_slots = job_.num_slots;
        d.finished = result_.slot_moments;
        CheckpointRanks ranks = job_.ranks;
        ranks.sum = [&op](double* v, std::size_t n) { op.sum_over_ranks(v, n); };
        const double t_write = wall_seconds();
        write_checkpoint(job_.checkpoint_path, d, &trace, ranks);
        result_.checkpoint_seconds = std::max(result_.checkpoint_seconds, wall_seconds() - t_write);
        ++result_.checkpoints_written;
        files::FileId id;
        if (files::identify(job_.checkpoint_path, id)) result_.checkpoint_id = id;
        last_checkpoint_ = wall_seconds();
    }

    /// Stops the run after a signal or before the --time-limit: writes the checkpoint and
    /// throws RunInterrupted; a checkpoint that cannot be written ends the run with the
    /// state of the previous one (throw_stop_failure).
    [[noreturn]] void stop(int k, const numerics::BlockTrace& trace, const Operator& op, std::int64_t stop_signal)
    {
        const std::string why = stop_signal ? detail::concat("stopped by ", signal_name(int(stop_signal)))
                                            : std::string("stopped before the --time-limit");
        try {
            save(k, trace, op);
        } catch (const IoError& e) {
            // Under mpirun every rank is here (the writer agrees on failures).
            throw_stop_failure(
                bool(job_.agree_max),
                detail::concat(why, ", but the checkpoint could not be written: ", e.what(),
                               result_.checkpoint_id
                                   ? detail::concat("; the previous checkpoint ", job_.checkpoint_path,
                                                    " is intact (resume with: ", job_.resume_command, ")")
                               : job_.resume ? std::string("; the checkpoint this run resumed from is intact (resume "
                                                           "with the same command)")
                                             : std::string("; no checkpoint exists, the progress is lost")));
        }
        throw RunInterrupted(detail::concat(why, " after ", k * trace.num_sweeps() + trace.sweeps_done(), " of ",
                                            result_.num_sweeps, " sweeps; checkpoint written to ", job_.checkpoint_path,
                                            "\nresume with: ", job_.resume_command));
    }

    /// A periodic checkpoint. One that does not fit is no reason to lose the run: the previous
    /// one (renamed into place atomically) stays valid, and the next try may fit.
    void periodic_checkpoint(int k, const numerics::BlockTrace& trace, const Operator& op)
    {
        try {
            save(k, trace, op);
            log::info("  checkpoint written to ", job_.checkpoint_path);
        } catch (const IoError& e) {
            last_checkpoint_ = wall_seconds();
            ++result_.checkpoints_failed;
            // Said once per reason: a disk that stays full must not flood the log.
            if (e.what() != last_failure_)
                log::warning("checkpoint not written, the run goes on: ", e.what(),
                             result_.checkpoint_id ? "; the previous checkpoint is kept" : "",
                             "; further failures for this reason are only counted");
            last_failure_ = e.what();
        }
    }

    /// One step of the trace (one sweep, or two fused: Operator::fused_steps), timed (a new
    /// block's start vectors apart as well), then the progress line.
    void sweep(int k, numerics::BlockTrace& trace)
    {
        const double t_sweep = wall_seconds();
        const std::int64_t before = trace.sweeps_done();
        if (trace.prepare()) result_.start_vector_seconds += wall_seconds() - t_sweep;
        trace.step();
        // With the start vectors: the time limit's estimate of the next steps includes them.
        sweep_seconds_ += wall_seconds() - t_sweep;
        result_.sweeps_this_run += trace.sweeps_done() - before;
        ++steps_this_run_;
        if (job_.progress)
            job_.progress({k, job_.num_realizations, std::min(trace.blocks_done(), trace.num_blocks() - 1),
                           trace.num_blocks(), k * trace.num_sweeps() + trace.sweeps_done(), result_.num_sweeps,
                           result_.sweeps_this_run});
    }

    const MomentsJob& job_;
    JobResult result_;
    int first_ = 0;  ///< the realization this run starts with
    std::optional<SignalCatcher> signals_;
    double last_checkpoint_ = wall_seconds();
    std::string last_failure_;         ///< of a periodic checkpoint
    double sweep_seconds_ = 0.0;       ///< spent in the sweeps of this run
    std::int64_t steps_this_run_ = 0;  ///< trace.step() calls behind sweep_seconds_
};

}  // namespace

JobResult run_moments_job(const MomentsJob& job) { return JobLoop(job).run(); }

}  // namespace topokpm::app
