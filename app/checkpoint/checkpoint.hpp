#pragma once
/// @file checkpoint.hpp
/// Checkpoint files of kpm-dos (docs/physics.md, "Checkpoint and restart"): everything the
/// moments loop needs to continue bit for bit, in HDF5, written atomically (temporary file
/// + rename, analysis::ResultWriter):
///
///   /checkpoint                 attributes: format = "topokpm-checkpoint", format_version (2),
///                               command_line, realization (under way), num_realizations,
///                               num_moments, num_slots, blocks_done, scale_a, scale_b,
///                               bounds_lower, bounds_upper, threads (--threads of the run that
///                               wrote it), written_at
///   /checkpoint/parameters      one string attribute per option that decides the moments
///   /checkpoint/checksums       uint64 attributes: the CRC-64 (checksum.hpp) of each dataset's
///                               values (float64, little-endian, row-major), named after the
///                               dataset below /checkpoint with '_' for '/' ("sums",
///                               "block_current", ...), and `header`: of the header values
///                               that decide the moments (header_text in checkpoint.cpp)
///   /checkpoint/finished        float64 [k, slots * M]: slot moments of finished realizations
///   /checkpoint/sums            float64 [slots, M]: moment sums of the finished blocks
///   /checkpoint/block/current   float64 [N, W, 2]: v_s of the block under way (re, im)
///   /checkpoint/block/previous  float64 [N, W, 2]: v_{s-1}
///   /checkpoint/block/raw       float64 [W, M], attribute sweeps_done
///
/// A run with --conductivity stopped in its two-index phase holds its DOS moments finished
/// (blocks_done = all blocks, no block) and the two-index trace's state
/// (numerics::TwoIndexState), restored bit for bit; written by one rank:
///   /checkpoint/conductivity               attributes blocks_done, left_done
///   /checkpoint/conductivity/sums          float64 [slots, M, M, 2]: the finished columns' sums (re, im)
///   /checkpoint/conductivity/left/current  float64 [N, W, 2], when a left pass is under way,
///   /checkpoint/conductivity/left/previous float64 [N, W, 2]  with attribute sweeps_done
///   /checkpoint/conductivity/left/raw      float64 [W, 2 M - 2]
/// (CRC-64s named conductivity_sums, conductivity_left_current, ...; the header checksum
/// covers the attributes). Written by several ranks (ranks/layout below), each rank's own
/// partial sums (summed over the ranks only when the trace ends) and its rows of the left
/// vectors, the attributes as above:
///   /checkpoint/conductivity/rank_sums         float64 [P, slots * M * M * 2]
///   /checkpoint/conductivity/left/current      float64 [N, W, 2], canonical rows,
///   /checkpoint/conductivity/left/previous     float64 [N, W, 2]  each rank its own
///   /checkpoint/conductivity/left/rank_raw     float64 [P, W (2 M - 2)]
/// which only the same ranks and layout continue: a restart with another rank count or
/// decomposition (or one rank against several) is refused with an InputError naming both.
///
/// Under mpirun (docs/cluster.md) the file is the same, written collectively (parallel
/// HDF5): the vectors are global, in canonical row order, each rank writing its own rows
/// (CheckpointRanks::rows); sums, raw and finished hold the moments summed over the ranks.
/// /checkpoint also records `ranks` (P) and `layout` (the decomposition), and when the
/// ranks keep partial dot sums (reduced once at the end) each rank's own partials:
///   /checkpoint/rank_sums       float64 [P, slots * M]
///   /checkpoint/block/rank_raw  float64 [P, W * M]
/// A restart with the same layout takes its own partials back (bit-identical); any other
/// rank count or split gives rank 0 the summed moments and the others zeros (equal to
/// rounding). Files without ranks/layout are one-rank checkpoints. The CRC-64 of a dataset
/// written or read as rows is put together from the ranks' pieces (crc64_of_pieces), so it
/// is the one-process value whatever the rank count.

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/result_file.hpp"
#include "app/cli/run_config.hpp"
#include "numerics/kpm/block_trace.hpp"
#include "numerics/kpm/two_index.hpp"

namespace topokpm::app {

/// (option, value) pairs that decide the moments, values printed exactly (%.17g).
using RunParameters = std::vector<std::pair<std::string, std::string>>;

/// The parameters of this run: model, KPM, quantity (with a digest of the rows or
/// momenta), realizations, bounds options, storage format, precision and device. Not the
/// thread count (CheckpointData::threads): another --threads adds the per-thread partial
/// dot products in another order, so a restart with it continues to rounding (a relative
/// few eps per sweep, as another rank count under mpirun), bit for bit with the same.
RunParameters run_parameters(const RunConfig& config, const std::vector<global_index>& ldos_rows,
                             const std::vector<numerics::Momentum>& momenta);

/// "--moments: checkpoint 1024, this run 512" for every difference (empty if none).
std::vector<std::string> parameter_differences(const RunParameters& saved, const RunParameters& now);

/// The state written to / read from a checkpoint.
struct CheckpointData {
    RunParameters parameters;
    std::string command_line;
    int threads = 1;                              ///< --threads of the run that wrote it (reported, not compared)
    numerics::KpmScaling scaling;
    SpectralBounds bounds;
    int num_moments = 0;
    std::int64_t num_slots = 0;
    int num_realizations = 1;
    int realization = 0;                          ///< the realization under way
    std::vector<std::vector<double>> finished;    ///< slot moments of realizations 0..realization-1
    numerics::TraceState trace;                   ///< of the realization under way
    int ranks = 1;                                ///< ranks that wrote it (header `ranks`)
    std::string layout;                           ///< their decomposition (header `layout`)
    bool own_partials = false;                    ///< read_checkpoint_state restored this rank's partial sums
    /// --conductivity's two-index moments under way (the DOS moments then finished). From
    /// read_checkpoint_header: blocks_done, left_done and left->sweeps_done; the arrays from
    /// read_checkpoint_state.
    std::optional<numerics::TwoIndexState> conductivity;
};

/// How this process takes part in a checkpoint; the defaults are one process, all rows.
struct CheckpointRanks {
    int rank = 0;
    int size = 1;                            ///< > 1: every rank of MPI_COMM_WORLD writes collectively
    /// The global canonical rows this rank holds, increasing (its vectors' local rows in
    /// that order); empty = all rows. The 1-D split gives one run; any decomposition
    /// whose local rows are a sorted list of global rows plugs in without a new format.
    std::vector<analysis::RowRun> rows;
    std::uint64_t num_rows_global = 0;       ///< N, with `rows`
    std::string layout;                      ///< the decomposition's identity, e.g. "1d rows 0:96:192"
    /// The moment sums are per rank (reduced once at the end): `sum` adds values over the
    /// ranks in place (collective), for the summed copies the file holds.
    bool partial_dots = false;
    std::function<void(double*, std::size_t)> sum;
    /// With size > 1: every rank's `values` concatenated in rank order, on every rank
    /// (collective): the ranks' CRC-64 pieces of the rows they write or read.
    std::function<std::vector<std::uint64_t>(const std::vector<std::uint64_t>&)> gather;
};

/// Writes `data` (trace state taken from `trace` without copying its blocks; the two-index
/// state from `conductivity`, else data.conductivity: this rank's) atomically.
/// Collective when ranks.size > 1 (every rank calls it at the same sweep). Throws IoError
/// naming the file (on every rank when collective).
void write_checkpoint(const std::string& path, const CheckpointData& data, const numerics::BlockTrace* trace,
                      const CheckpointRanks& ranks = {}, const numerics::TwoIndexState* conductivity = nullptr);

/// The sizes of the run a checkpoint must fit (all known before anything is built).
struct CheckpointRun {
    global_index num_rows = 0;       ///< N
    std::int64_t num_columns = 0;    ///< start vectors C of one realization
    int block_width = 0;             ///< W asked for (BlockTrace caps it at C)
    int num_moments = 0;             ///< M
    std::int64_t num_slots = 0;
    int num_realizations = 1;
};

/// Bytes of the datasets of the largest checkpoint of `run` (the layout at the top: the
/// block's two vectors of N x min(W, C) complex values, its raw moments, the sums and the
/// finished realizations' moments, written during the last realization) on `ranks` ranks
/// (> 1: each rank's partial sums as well). HDF5's headers (a few KiB) are not counted.
double checkpoint_file_bytes(const CheckpointRun& run, int ranks);

/// A checkpoint file may come from anywhere: every function below validates each header
/// value and each dataset's type and shape before anything is allocated or read, and
/// throws InputError "--restart 'PATH': not a usable topokpm checkpoint: <why>. Run
/// without --restart to start afresh" when the file is missing or not a regular file, not
/// HDF5, not a topokpm checkpoint, or its values or shapes do not fit (a truncated,
/// corrupted or crafted file), or a dataset or the header does not match its CRC-64 (a
/// flipped bit: "/checkpoint/sums does not match its CRC-64 ..."). Messages quote names
/// and sizes, never the file's text.

/// Reads the header and the parameters only (scalar attributes; parameter values are
/// short printable text), so that a caller can compare the parameters with its run first.
CheckpointData read_checkpoint_header(const std::string& path);

/// Checks `data` (from read_checkpoint_header) against `run`, then every dataset's shape,
/// then reads the moments and this rank's rows of the block under way into `data` (the
/// moment sums as described at the top for several ranks), verifying the CRC-64 of each
/// dataset it uses as it is read (no second pass over the file). Every rank reads on its
/// own; with ranks.size > 1 it is collective once (ranks.gather, the rows' CRC pieces),
/// after every rank has read its rows (a rank whose read failed still takes part).
void read_checkpoint_state(const std::string& path, const CheckpointRun& run, CheckpointData& data,
                           const CheckpointRanks& ranks = {});

}  // namespace topokpm::app
