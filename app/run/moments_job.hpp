#pragma once
/// @file moments_job.hpp
/// The moments phase of every kpm-dos run: for each disorder realization, a BlockTrace of
/// its start-vector plan, one sweep at a time, with progress lines, periodic checkpoints
/// and a clean stop on SIGTERM/SIGINT/SIGUSR1 or before a time limit (checkpoint, then
/// RunInterrupted). Under mpirun every decision to checkpoint or stop is agreed by one
/// small reduction every `agree_every` sweeps, so all ranks write the same (collective)
/// checkpoint at the same sweep and stop together.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/checkpoint/checkpoint.hpp"
#include "numerics/kpm/block_trace.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/files.hpp"

namespace topokpm::app {

/// Thrown after a signal stopped the run and its checkpoint was written; main() prints
/// the message (how to resume) and exits with kExitInterrupted.
class RunInterrupted : public Error {
public:
    using Error::Error;
};

/// Under mpirun: thrown on every rank at once when the ranks agreed to stop but the
/// (collective) checkpoint could not be written; main() prints it once and exits with 3.
class StopFailed : public Error {
public:
    using Error::Error;
};

/// Where the loop stands, for progress lines.
struct JobProgress {
    int realization = 0, num_realizations = 1;
    std::int64_t block = 0, num_blocks = 1;  ///< block under way (0-based) of this realization
    std::int64_t sweeps_done = 0;            ///< over the whole job, including resumed ones
    std::int64_t num_sweeps = 0;
    std::int64_t sweeps_this_run = 0;        ///< made by this process (for rates)
};

struct MomentsJob {
    int num_realizations = 1;
    int num_moments = 0;
    int block_width = 0;
    std::int64_t num_slots = 0;
    numerics::KpmScaling scaling;
    /// The operator of realization k (called once per realization, in order).
    std::function<std::shared_ptr<const Operator>(int k)> operator_for;
    /// The start-vector plan of realization k.
    std::function<std::unique_ptr<numerics::StartVectorPlan>(int k)> plan_for;
    /// Continue from this checkpoint (its realization, finished results and trace state).
    std::optional<CheckpointData> resume;
    /// Header of the checkpoints written (parameters, command line, scaling, bounds).
    CheckpointData checkpoint_header;
    std::string checkpoint_path;
    double checkpoint_every_s = 0.0;   ///< 0 = only on a signal
    std::string resume_command;        ///< printed after an interruption
    std::function<void(const JobProgress&)> progress;  ///< after every sweep; may be empty
    bool handle_signals = true;        ///< catch SIGTERM/SIGINT/SIGUSR1 (checkpoint, RunInterrupted)
    /// This process's part of the checkpoints (CheckpointRanks::sum is set from the operator).
    CheckpointRanks ranks;
    /// Element-wise maximum over the ranks, in place (collective); empty = one process,
    /// which decides alone after every sweep.
    std::function<void(std::vector<std::int64_t>&)> agree_max;
    int agree_every = 4;               ///< sweeps between the agreements under mpirun (>= 1)
    /// wall_seconds() by which the job must have stopped (--time-limit), 0 = none: the job
    /// checkpoints and stops when the next agreement could come too late, from the measured
    /// time per sweep and checkpoint write time (moments_job.cpp, time_is_short).
    double deadline = 0.0;
    double checkpoint_bytes = 0.0;     ///< this rank's share of a checkpoint (the first write-time guess)
};

struct JobResult {
    std::vector<std::vector<double>> slot_moments;  ///< per realization, [slots, M]
    std::vector<double> last_sums;                  ///< the last realization's finished trace sums (a later phase's checkpoint)
    std::int64_t num_sweeps = 0;                    ///< sweeps of the whole job
    std::int64_t sweeps_this_run = 0;
    std::int64_t num_blocks = 0;                    ///< per realization
    int block_width = 0;
    int checkpoints_written = 0;
    int checkpoints_failed = 0;                     ///< periodic ones that could not be written (warned)
    double checkpoint_seconds = 0.0;                ///< the longest checkpoint write
    /// Spent making start vectors (BlockTrace::prepare: on the host or the operator's device, the
    /// recurrence's blocks allocated) by this process; the rest of the job is its sweeps.
    double start_vector_seconds = 0.0;
    /// The checkpoint file this run wrote last, as it was renamed into place: the only
    /// checkpoint the run may remove when it completes.
    std::optional<files::FileId> checkpoint_id;
};

/// Runs the job; throws RunInterrupted after a signal or before the deadline (checkpoint
/// written). Collective under mpirun.
JobResult run_moments_job(const MomentsJob& job);

}  // namespace topokpm::app
