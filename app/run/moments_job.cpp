#include "app/run/moments_job.hpp"

#include <optional>

#include "app/run/interrupt.hpp"
#include "runtime/base/files.hpp"
#include "runtime/base/log.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::app {

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
            write_checkpoint(job.checkpoint_path, d, &trace);
            ++result.checkpoints_written;
            files::FileId id;
            if (files::identify(job.checkpoint_path, id)) result.checkpoint_id = id;
            last_checkpoint = wall_seconds();
        };
        // The signal is read before every sweep, so one that arrived while the operator was
        // being built still stops the run at a consistent state.
        while (true) {
            if (const int sig = signals ? SignalCatcher::pending() : 0) {
                try {
                    save();
                } catch (const IoError& e) {
                    throw IoError(detail::concat(
                        "stopped by ", signal_name(sig), ", but the checkpoint could not be written: ", e.what(),
                        result.checkpoint_id ? detail::concat("; the previous checkpoint ", job.checkpoint_path,
                                                              " is intact (resume with: ", job.resume_command, ")")
                        : job.resume ? std::string("; the checkpoint this run resumed from is intact (resume "
                                                   "with the same command)")
                                     : std::string("; no checkpoint exists, the progress is lost")));
                }
                throw RunInterrupted(detail::concat(
                    "stopped by ", signal_name(sig), " after ", k * trace.num_sweeps() + trace.sweeps_done(), " of ",
                    result.num_sweeps, " sweeps; checkpoint written to ", job.checkpoint_path,
                    "\nresume with: ", job.resume_command));
            }
            if (trace.done()) break;
            trace.step();
            ++result.sweeps_this_run;
            if (job.progress)
                job.progress({k, job.num_realizations, std::min(trace.blocks_done(), trace.num_blocks() - 1),
                              trace.num_blocks(), k * trace.num_sweeps() + trace.sweeps_done(), result.num_sweeps,
                              result.sweeps_this_run});
            if (job.checkpoint_every_s > 0.0 && !trace.done() &&
                wall_seconds() - last_checkpoint >= job.checkpoint_every_s) {
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
        }
        result.slot_moments.push_back(trace.slot_moments());
    }
    return result;
}

}  // namespace topokpm::app
