#pragma once
/// @file checkpoint.hpp
/// Checkpoint files of kpm-dos (docs/physics.md, "Checkpoint and restart"): everything the
/// moments loop needs to continue bit for bit, in HDF5, written atomically (temporary file
/// + rename, analysis::ResultWriter):
///
///   /checkpoint                 attributes: format = "topokpm-checkpoint", format_version,
///                               command_line, realization (under way), num_realizations,
///                               num_moments, num_slots, blocks_done, scale_a, scale_b,
///                               bounds_lower, bounds_upper, written_at
///   /checkpoint/parameters      one string attribute per option that decides the moments
///   /checkpoint/finished        float64 [k, slots * M]: slot moments of finished realizations
///   /checkpoint/sums            float64 [slots, M]: moment sums of the finished blocks
///   /checkpoint/block/current   float64 [N, W, 2]: v_s of the block under way (re, im)
///   /checkpoint/block/previous  float64 [N, W, 2]: v_{s-1}
///   /checkpoint/block/raw       float64 [W, M], attribute sweeps_done

#include <string>
#include <utility>
#include <vector>

#include "app/cli/run_config.hpp"
#include "numerics/kpm/block_trace.hpp"

namespace topokpm::app {

/// (option, value) pairs that decide the moments, values printed exactly (%.17g).
using RunParameters = std::vector<std::pair<std::string, std::string>>;

/// The parameters of this run: model, KPM, quantity (with a digest of the rows or
/// momenta), realizations, bounds options, storage format, threads and device.
RunParameters run_parameters(const RunConfig& config, int threads, const std::vector<global_index>& ldos_rows,
                             const std::vector<numerics::Momentum>& momenta);

/// "--moments: checkpoint 1024, this run 512" for every difference (empty if none).
std::vector<std::string> parameter_differences(const RunParameters& saved, const RunParameters& now);

/// The state written to / read from a checkpoint.
struct CheckpointData {
    RunParameters parameters;
    std::string command_line;
    numerics::KpmScaling scaling;
    SpectralBounds bounds;
    int num_moments = 0;
    std::int64_t num_slots = 0;
    int num_realizations = 1;
    int realization = 0;                          ///< the realization under way
    std::vector<std::vector<double>> finished;    ///< slot moments of realizations 0..realization-1
    numerics::TraceState trace;                   ///< of the realization under way
};

/// Writes `data` (trace state taken from `trace` without copying its blocks) atomically.
/// Throws IoError naming the file.
void write_checkpoint(const std::string& path, const CheckpointData& data, const numerics::BlockTrace* trace);

/// The sizes of the run a checkpoint must fit (all known before anything is built).
struct CheckpointRun {
    global_index num_rows = 0;       ///< N
    std::int64_t num_columns = 0;    ///< start vectors C of one realization
    int block_width = 0;             ///< W asked for (BlockTrace caps it at C)
    int num_moments = 0;             ///< M
    std::int64_t num_slots = 0;
    int num_realizations = 1;
};

/// A checkpoint file may come from anywhere: every function below validates each header
/// value and each dataset's type and shape before anything is allocated or read, and
/// throws InputError "--restart 'PATH': not a usable topokpm checkpoint: <why>. Run
/// without --restart to start afresh" when the file is missing or not a regular file, not
/// HDF5, not a topokpm checkpoint, or its values or shapes do not fit (a truncated,
/// corrupted or crafted file). Messages quote names and sizes, never the file's text.

/// Reads the header and the parameters only (scalar attributes; parameter values are
/// short printable text), so that a caller can compare the parameters with its run first.
CheckpointData read_checkpoint_header(const std::string& path);

/// Checks `data` (from read_checkpoint_header) against `run`, then every dataset's shape,
/// then reads the moments and the block under way into `data`.
void read_checkpoint_state(const std::string& path, const CheckpointRun& run, CheckpointData& data);

/// Both of the above.
CheckpointData read_checkpoint(const std::string& path, const CheckpointRun& run);

}  // namespace topokpm::app
