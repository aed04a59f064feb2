#pragma once
/// @file moments_job.hpp
/// The moments phase of every kpm-dos run: for each disorder realization, a BlockTrace of
/// its start-vector plan, one sweep at a time, with progress lines, periodic checkpoints
/// and a clean stop on SIGTERM/SIGINT (checkpoint, then RunInterrupted).

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
    bool handle_signals = true;        ///< catch SIGTERM/SIGINT (checkpoint, RunInterrupted)
};

struct JobResult {
    std::vector<std::vector<double>> slot_moments;  ///< per realization, [slots, M]
    std::int64_t num_sweeps = 0;                    ///< sweeps of the whole job
    std::int64_t sweeps_this_run = 0;
    std::int64_t num_blocks = 0;                    ///< per realization
    int block_width = 0;
    int checkpoints_written = 0;
    int checkpoints_failed = 0;                     ///< periodic ones that could not be written (warned)
    /// The checkpoint file this run wrote last, as it was renamed into place: the only
    /// checkpoint the run may remove when it completes.
    std::optional<files::FileId> checkpoint_id;
};

/// Runs the job; throws RunInterrupted after SIGTERM/SIGINT (checkpoint written).
JobResult run_moments_job(const MomentsJob& job);

}  // namespace topokpm::app
