#pragma once
/// @file run_config.hpp
/// The validated, typed configuration of one `kpm-dos` or `kpm-eigs` run (one option table:
/// the same models, operators and input files). Built from three layers, later wins:
/// built-in defaults (models.md §4) <- input file (--config) <- command line.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/reconstruct.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/eigs/eigenpairs.hpp"
#include "numerics/base/row_source.hpp"

namespace topokpm::app {

enum class MatrixKind { Sell, Crs, Free, Naive };
enum class TraceKind { Stochastic, Exact };
/// How an LDOS run finds the rows' moments (--ldos-method): one unit start vector per row
/// (exact), or probing vectors of coloured rows (numerics::probing_plan).
enum class LdosMethod { Exact, Probing };
enum class BoundsMethod { Lanczos, Gershgorin, User };
enum class DeviceKind { Cpu, Cuda };  ///< where the sweeps run (--device)

/// The programs that share the option table: kpm-dos (DOS, LDOS, A(k,E)) and kpm-eigs
/// (eigenpairs, models.md §6; its options are added to the table).
enum class Program { Dos, Eigs };
/// How kpm-eigs finds its pairs (--method).
enum class EigsMethod { Auto, ChebFd, Lanczos, ShiftInvert, Dense };

/// What a run computes (models.md §4): the DOS (stochastic or exact trace), the local DOS
/// of selected rows (--ldos), or the spectral function A(k, E) (--k-points / --k-path).
enum class Quantity { Dos, Ldos, Spectral };

/// A user energy grid: `num_points` equidistant energies from `lower` to `upper`.
struct EnergyGrid {
    double lower = 0.0, upper = 0.0;
    int num_points = 0;
};

/// The KPM method: moments, start vectors, trace, bounds and
/// scaling, the traced quantity (--ldos, --k-points/--k-path) and the reconstruction.
struct KpmConfig {
    int num_moments = 1024;
    int num_vectors = 16;
    int block_width = 0;               ///< stochastic trace: vectors per sweep; 0 = all --vectors
    int sweep_width = 0;               ///< W the run sweeps with: resolve_run() (app/cli/resolved_run.hpp); 0 before
    std::uint64_t vector_seed = 1;
    TraceKind trace = TraceKind::Stochastic;
    BoundsMethod bounds_method = BoundsMethod::Lanczos;
    SpectralBounds energy_range;       ///< only with BoundsMethod::User
    int lanczos_steps = 200;
    double lanczos_margin = 0.005;     ///< relative to the spectral width
    double epsilon = 0.01;
    int realizations = 1;              ///< disorder realizations K (seeds: realization_seed)

    // Local DOS and spectral function (docs/physics.md)
    std::string ldos;                  ///< --ldos selection text; empty = no LDOS
    std::optional<double> ldos_map_energy;  ///< energy of the per-site map of a layer:Z selection
    LdosMethod ldos_method = LdosMethod::Exact;
    int probing_distance = 6;          ///< --probing-distance: hops between rows of one colour (auto: resolve_run())
    bool probing_distance_auto = false;  ///< --probing-distance auto: `probing_distance` is chosen by resolve_run()
    int probing_draws = 1;             ///< --probing-draws: random phase draws per colour
    std::optional<double> green_eta;   ///< --green ETA: exact LDOS of the --ldos rows (models.md §7)
    std::string k_points;              ///< --k-points "mx,my;mx,my"
    std::string k_path;                ///< --k-path "M-G-X"
    std::string conductivity;          ///< --conductivity ab (models.md §9, with the DOS); empty = none
    double temperature = 0.0;          ///< --temperature T of the conductivity (units of t)

    // Reconstruction
    analysis::DampingKernel kernel = analysis::DampingKernel::Jackson;
    double lorentz_lambda = 4.0;
    int energy_points = 0;             ///< K; 0 = 2 M
    std::optional<EnergyGrid> energy_grid;
};

/// The operator the sweeps apply (mapped onto numerics::OperatorSpec by operator_spec()).
/// The member is called `storage` because `operator` is a keyword.
struct OperatorConfig {
    MatrixKind matrix = MatrixKind::Sell;
    bool auto_matrix = false;          ///< --matrix auto: `matrix` is chosen for the run's width by resolve_run()
    std::string matrix_auto;           ///< --matrix auto: why `matrix` was chosen (fastest_matrix); empty = given
    bool auto_sell_c = false;          ///< --sell-C auto: `sell_chunk_height` is set for the run's width by resolve_run()
    bool sell_options_given = false;   ///< --sell-C or --sell-sigma given: --matrix auto takes sell
    int sell_chunk_height = 8;         ///< --sell-C; `auto`: default_sell_chunk_height (16 at W = 1, 8 at W >= 2 on the CPU)
    int sell_sigma = 256;
    int tblock_lines = -1;             ///< free at R = 1: lines per two-step block (numerics::StencilTuning)
    DeviceKind device = DeviceKind::Cpu;  ///< cuda: sell -> SELL-32-σ on GPU 0, crs -> SELL-1-1, free -> stencil
    Precision precision = Precision::Double;  ///< single: complex-float matrix and vectors (sell/crs on the CPU)
};

/// The files a run writes or resumes from, and how it reports.
struct OutputConfig {
    std::string result_file;           ///< --output; default "<model>_<lattice>.h5"
    std::string export_matrix;         ///< Matrix Market path, empty = none
    std::string checkpoint;            ///< file for periodic and on-signal checkpoints; empty = "<output>.checkpoint.h5" on a signal only
    double checkpoint_every_s = 0.0;   ///< seconds between checkpoints; 0 = only on SIGTERM/SIGINT/SIGUSR1
    double time_limit_s = 0.0;         ///< --time-limit: checkpoint and exit 75 before this; 0 = none
    std::string restart;               ///< checkpoint to continue from; empty = fresh run
    bool quiet = false;
    double progress_interval_s = 5.0;
    std::int64_t per_vector_limit = 10'000'000;  ///< store /kpm/moments_per_vector if R*M <= this
};

/// kpm-dos --plan: sizes a distributed run without allocating or running it.
struct PlanConfig {
    bool enabled = false;
    std::string json;                  ///< --plan-json: `-` stdout, else a file; empty: the table
    int ranks = 1;                     ///< P, all ranks (CPU and GPU)
    int gpus = 0;                      ///< G of the P ranks drive one GPU each
    double bandwidth_gbs = 0.0;        ///< memory bandwidth of a CPU rank; 0 = measure this machine
    double network_gbs = 10.0;         ///< network bandwidth per rank for the halo
    double gpu_bandwidth_gbs = 2990.0; ///< device bandwidth of a GPU rank (H100 copy, measured)
};

/// Where and how the run executes: threads, memory, ranks under mpirun, the planner.
struct RuntimeConfig {
    int threads = 0;                   ///< 0 = OpenMP default (OMP_NUM_THREADS or all cores)
    double memory_limit_gib = 0.0;     ///< 0 = the machine's available memory
    std::string weights;               ///< "w0:w1:..." per rank, "" = by bandwidth, "auto" = probed
    // Parallel runs under mpirun (app/mpi/distribution.hpp)
    std::string comm_mode = "overlap";  ///< vector | overlap | task
    bool reduce_every_sweep = false;    ///< dots summed over ranks every sweep (else once at the end)
    bool pin_threads = true;            ///< pin each rank's OpenMP threads to its own CPU set
    std::string decomposition = "auto"; ///< 1d | 2d | auto: rows split in x only, or an (x, y) process grid
    PlanConfig plan;
};

/// kpm-eigs: the request of models.md §6 and how to meet it.
struct EigsConfig {
    numerics::EigenRequest request;     ///< request.tolerance is the relative --tolerance here
    EigsMethod method = EigsMethod::Auto;
    bool save_vectors = false;          ///< write /eigs/vectors [k, N]
};

/// A key of the --config file the command line does not override.
struct ConfigValue {
    int line = 0;       ///< its line in the file (from 1)
    std::string value;  ///< the value as written there
};

/// What the result file records about how the run was asked for, and where each value came from.
struct ProvenanceConfig {
    std::string command_line;  ///< argv, each word shell-quoted (files::shell_word): pastes as typed
    std::string config_path;
    std::string config_text;
    /// The text-valued keys the --config file set and the command line did not: messages
    /// leave their values out (without_config_value). Not written to the result file.
    std::map<std::string, ConfigValue> from_config;
};

struct RunConfig {
    hamiltonians::ModelParams model;
    KpmConfig kpm;
    OperatorConfig storage;
    OutputConfig outputs;
    RuntimeConfig runtime;
    ProvenanceConfig provenance;
    Program program = Program::Dos;
    EigsConfig eigs;                   ///< program Eigs only
};

/// The quantity the configuration asks for.
Quantity quantity(const RunConfig& config);
std::string to_string(Quantity quantity);

/// Seed of realization k of an ensemble: k = 0 uses `seed` itself (so realization 0 is the
/// single-realization run), k >= 1 uses splitmix64(seed, 1000 + k). Applied to both
/// --disorder-seed and --vector-seed (docs/physics.md).
std::uint64_t realization_seed(std::uint64_t seed, int k);

/// The checkpoint file of a run: --checkpoint, or "<output>.checkpoint.h5".
std::string checkpoint_path(const RunConfig& config);

/// Exit code of a run stopped by SIGTERM/SIGINT after writing its checkpoint
/// (EX_TEMPFAIL of sysexits.h: "try again later", here with --restart).
constexpr int kExitInterrupted = 75;

/// `message` (an InputError's, its {names} already written as flags) without the value it
/// quotes when that value came from the --config file (docs/reliability.md "Messages": the
/// file may hold anything, its values are not printed): a message that starts with `--KEY`
/// of a key in provenance.from_config and then the value, ` 'VALUE'` (or a quoted part of
/// it, followed by `: ` or a blank), ` VALUE: ` or a bare number and `: `, becomes
/// `--config 'FILE' line N, key 'KEY': ` and the rest (the reason and the allowed range).
/// The rest must name pieces of the value by position, not quote them. Any other message
/// is returned as it is (a value typed on the command line is still quoted; a message
/// without the value, e.g. `--green needs --ldos`).
std::string without_config_value(const std::string& message, const ProvenanceConfig& provenance);

/// Runs `f` (checks of a parsed configuration: the model, the selections, the weights) with
/// the messages of its InputErrors as the user reads them: {names} written as flags
/// (with_flag_names), then without_config_value. Other exceptions pass unchanged.
void with_user_messages(const ProvenanceConfig& provenance, const std::function<void()>& f);

/// Parses argv (and the --config file it names) with the option table of `program`.
/// Returns nullopt when --help or --version was printed. Throws InputError naming the
/// option for every bad value.
std::optional<RunConfig> parse_command_line(int argc, char** argv, Program program = Program::Dos);

/// "kpm-dos" or "kpm-eigs".
std::string program_name(Program program);

std::string to_string(MatrixKind kind);
std::string to_string(TraceKind kind);
std::string to_string(LdosMethod method);
std::string to_string(BoundsMethod method);
std::string to_string(DeviceKind kind);
std::string to_string(Precision precision);
std::string to_string(EigsMethod method);
std::string to_string(numerics::EigenRequest::Kind kind);

}  // namespace topokpm::app
