#include "app/run/run_dos.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>

#include "analysis/bands.hpp"
#include "analysis/result_file.hpp"
#include "app/checkpoint/checkpoint.hpp"
#include "app/mpi/distribution.hpp"
#include "app/cli/build_revision.hpp"
#include "app/run/conductivity_phase.hpp"
#include "app/run/green_cost.hpp"
#include "app/run/interrupt.hpp"
#include "app/run/moments_job.hpp"
#include "app/cli/operator_choice.hpp"
#include "app/cli/parameter_flags.hpp"
#include "app/cli/resolved_run.hpp"
#include "app/run/run_files.hpp"
#include "app/run/run_output.hpp"
#include "app/cli/selection.hpp"
#include "numerics/base/block_stencil.hpp"
#include "numerics/base/perf_model.hpp"
#include "numerics/kpm/bloch.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/lanczos/lanczos.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "numerics/spmmv/sell_kernels.hpp"
#include "numerics/sparse_direct/distributed_lu.hpp"
#include "numerics/sparse_direct/green.hpp"
#include "runtime/base/log.hpp"
#include "runtime/base/system.hpp"
#include "runtime/base/timer.hpp"
#include "runtime/device/device.hpp"
#include "runtime/mpi/communicator.hpp"
#include "topokpm/config.hpp"

namespace topokpm::app {
namespace {

/// Sweeps between the ranks' agreements on signals, periodic and time-limit checkpoints
/// (one MPI_Allreduce of three integers: far below a sweep's halo exchange).
constexpr int kAgreeEvery = 4;
/// --green warns when its relative error bound (GreenLdos::worst_error_bound) exceeds this.
constexpr double kGreenAccuracy = 1e-6;

/// This rank's bytes, by what holds them (estimate_memory; the run's check and report).
struct MemoryEstimate {
    double matrix_bytes = 0;   ///< the operator
    double vector_bytes = 0;   ///< KPM blocks, start block, Lanczos vectors
    double result_bytes = 0;   ///< spectra on the energy grid, while the result is written
    double green_bytes = 0;    ///< --green: sparse LU factors, solves and the matrix copy
    double conductivity_bytes = 0;  ///< --conductivity: velocities and two-index vectors (after the moments)
    double total() const { return matrix_bytes + vector_bytes + result_bytes + green_bytes + conductivity_bytes; }
};

/// This rank's memory: the cost model of the operator the run builds (`spec`, over this
/// rank's rows; numerics/spmmv/operator_factory.hpp, --plan prices it the same way), with
/// the rank's share of the nonzeros, and the rank's rows of the vectors. The bounds of a
/// serial run read the model's stencil: the free operator's own (no more bytes), or for a
/// stored kind one built for them (8 bytes per potential entry, at most 8 n) and freed before
/// the KPM blocks (>= 32 n bytes, counted here) are allocated, so the peak stays inside.
/// The result: K energies (--energy-points or the --energy-grid's points) of 8 bytes for
/// each spectrum held at once while it is written (run_output.cpp): the energies, the DOS
/// and a transform's two buffers (4), the mean, spread and error (3), and per kept spectrum
/// (`spectra`: the LDOS rows or k-points of this rank, or the samples of the error bars)
/// its row and, for error bars, its flattened copy. --conductivity: its phase on the rank's
/// rows receiving `halo_rows` (conductivity_bytes).
MemoryEstimate estimate_memory(const RunConfig& cfg, const numerics::OperatorSpec& spec,
                               const hamiltonians::Model& model, int width, double spectra, global_index halo_rows)
{
    const numerics::OperatorCostModel cost = operator_cost(spec, model);
    const double n = static_cast<double>(numerics::part_rows(spec, model.num_rows()));
    const double nonzeros = static_cast<double>(model.estimated_nonzeros()) * n / static_cast<double>(model.num_rows());
    const bool single = cfg.storage.precision == Precision::Single;
    MemoryEstimate e;
    e.matrix_bytes = cost.matrix_bytes(n, nonzeros);
    // KPM block pair (+ one more while a checkpoint is read back or written from single
    // precision) + the double start block (single) + Lanczos vectors.
    e.vector_bytes = (cfg.outputs.restart.empty() ? 2.0 : 3.0) * cost.block_bytes(n, width) + 3.0 * 16.0 * n;
    if (single) e.vector_bytes += 2.0 * 16.0 * n * width;  // double start block; checkpoint's widened pair
    const double k = cfg.kpm.energy_grid ? cfg.kpm.energy_grid->num_points : cfg.kpm.energy_points;
    e.result_bytes = 8.0 * k * (7.0 + 2.0 * spectra);
    if (!cfg.kpm.conductivity.empty())
        e.conductivity_bytes =
            conductivity_bytes(cfg, model, numerics::part_rows(spec, model.num_rows()), halo_rows, width);
    return e;
}

}  // namespace

/// The shared state of the phases; each phase is one member function. Its RunRecord (start,
/// threads, phase times) goes to /provenance.
struct DosRun::State : RunRecord {
    State(const RunConfig& config, Distribution& distribution)
        : cfg(config), dist(distribution), what(quantity(config)), num_real(config.kpm.realizations)
    {
    }

    void validate()
    {
        signals.emplace();  // from here on a signal stops the run at its first sweep (moments_job)
        log::set_quiet(cfg.outputs.quiet || !dist.root());  // one rank reports; warnings and errors still print
        threads = use_threads(cfg);
        // Run on every rank and agreed collectively: an error on any rank ends all of them
        // with one message (no rank left waiting).
        dist.agree([&] {
            size_quantity();
            check_files_and_layout();
            check_restart();
        });
        dist.split_rows(cfg, *model);  // collective: this rank's rows, priced and built below
        dist.agree([&] {
            check_memory_and_device();
            analyse_green();
            load_checkpoint_state();
        });
        report_start();
    }

    RunConfig cfg;  ///< as given, then resolved for the model (resolve_run: width, operator)
    Distribution& dist;
    std::optional<SignalCatcher> signals;
    const Quantity what;
    const int num_real;

    // Set by the validation.
    std::unique_ptr<hamiltonians::Model> model;
    global_index n = 0;
    std::optional<LdosSelection> selection;
    std::optional<numerics::ProbingColours> probing;  // --ldos-method probing
    bool map_filter = false;                          // probing filters at the map energy (TracedColumns)
    std::vector<double> nystrom_map;  // per selected row, mean over realizations; empty: the map from the moments
    int nystrom_rank = 0;             // the largest rank of V^H F over the realizations
    double nystrom_rank_estimate = 0;  // TracedColumns::map_rank_estimate
    double nystrom_trace_defect = 0;   // mean over realizations of ProbingNystrom::trace_defect
    std::vector<double> map_weights;  // probing's filter at the map energy (empty: none)
    int trace_moments = cfg.kpm.num_moments;  // moments the trace runs (probing: to reach v_{M-1})
    std::optional<MomentumList> momenta;
    numerics::PlaneWaveLattice lattice;
    global_index num_columns = 0;
    std::int64_t num_slots = 0;
    int width = 0;
    std::string ckpt_path;
    RunFiles run_files;
    std::optional<ResumedCheckpoint> resumed_id;  // the checkpoint read and verified by this run
    CheckedRunFiles checked_files;  // rank 0: the checkpoint locks until the run ends, and what the
                                    // result may replace (checked again at the rename)
    RunParameters parameters;
    std::optional<CheckpointData> resume;
    MemoryEstimate mem;
    std::string devices = "cpu";

    // Set by the phases.
    std::shared_ptr<const Operator> op;
    std::shared_ptr<const BlockStencil> op_stencil;  // serial, kind free: op's stencil, until the bounds
    double fill_beta = 0.0;  // of the last SELL matrix built
    OperatorCost cost;
    SpectralBounds bounds;
    AttributeList bounds_attrs;
    std::string bounds_how = to_string(cfg.kpm.bounds_method);
    numerics::KpmScaling scaling;
    double flops_per_sweep = 0.0, gflops = 0.0, gbytes = 0.0;
    std::int64_t num_vectors_total = 0;
    JobResult jr;
    AttributeList balance;  // the ranks' sweep times (Distribution::imbalance)
    std::vector<double> bands;
    DosSummary summary;
    // --green: the analysis of H (validate), then the exact LDOS (green phase).
    std::unique_ptr<sparse_direct::SparseLU> green_lu;
    std::vector<double> green_energy;
    std::optional<ConductivityOutcome> conductivity;  // --conductivity, after the moments
    sparse_direct::GreenLdos green;

    hamiltonians::ModelParams params_of(int k) const
    {
        hamiltonians::ModelParams p = cfg.model;
        p.disorder_seed = realization_seed(cfg.model.disorder_seed, k);
        return p;
    }

    /// Spectra the result holds at once beside the mean (estimate_memory): this rank's LDOS
    /// rows or the k-points, or the samples of the DOS error bars; twice with error bars.
    double kept_spectra() const
    {
        if (what == Quantity::Dos) {
            const bool samples = num_real >= 2 || (cfg.kpm.trace == TraceKind::Stochastic && num_slots >= 2);
            return samples ? static_cast<double>(num_real >= 2 ? num_real : num_slots) : 0.0;
        }
        // The LDOS rows under mpirun are split with the rows; the whole selection bounds them.
        return static_cast<double>(num_slots) * (num_real >= 2 ? 2.0 : 1.0);
    }

    /// The model, what is traced (columns, slots), the block width and the operator for it.
    void size_quantity()
    {
        model = hamiltonians::make_model(params_of(0));
        n = model->num_rows();
        TracedColumns traced = resolve_run(cfg, *model);
        selection = std::move(traced.selection);
        momenta = std::move(traced.momenta);
        lattice = traced.lattice;
        num_columns = traced.num_columns;
        num_slots = traced.num_slots;
        probing = std::move(traced.probing);
        map_filter = traced.map_filter;
        nystrom_rank_estimate = traced.map_rank_estimate;
        trace_moments = traced.trace_moments;
        width = cfg.kpm.sweep_width;
    }

    /// The files (rank 0 writes every file) and what runs on several ranks.
    void check_files_and_layout()
    {
        ckpt_path = checkpoint_target(checkpoint_path(cfg));  // through a user's link: its target
        run_files = {cfg.outputs.result_file, ckpt_path, cfg.outputs.restart, cfg.outputs.export_matrix};
        if (dist.root()) checked_files = check_run_files(run_files);  // rank 0 writes every file
        TOPOKPM_USER_REQUIRE(
            !probing || !dist.distributed() || !cfg.runtime.reduce_every_sweep,
            "--ldos-method probing under mpirun: each rank reads its own rows, summed once at the end; "
            "--reduce-every-sweep does not apply");
        TOPOKPM_USER_REQUIRE(!cfg.kpm.green_eta || num_real == 1, "--green with --realizations ", num_real,
                             ": the exact LDOS is of one disorder realization; use --realizations 1");

    }

    void check_restart()
    {
        // A restart is checked against this run before anything is built.
        parameters = run_parameters(
            cfg, selection ? selection->rows : std::vector<global_index>{},
            momenta ? momenta->momenta : std::vector<numerics::Momentum>{});
        // A model read from a file (models.md §8) is that file's content: a restart needs the same,
        // and the same positions (hr: the cell vectors and the positions file's content).
        for (const Attribute& a : model->attributes()) {
            if (a.name == "file_sha256") parameters.push_back({"model-file-sha256", std::get<std::string>(a.value)});
            if (a.name == "cell_vectors") parameters.push_back({"cell-vectors", std::get<std::string>(a.value)});
            if (a.name == "orbital_positions_sha256")
                parameters.push_back({"orbital-positions-sha256", std::get<std::string>(a.value)});
        }
        if (!cfg.outputs.restart.empty()) {
            resume = read_checkpoint_header(cfg.outputs.restart);
            resumed_id = resumed_checkpoint(run_files);
            const std::vector<std::string> diff = parameter_differences(resume->parameters, parameters);
            if (!diff.empty()) {
                std::string list;
                for (const auto& d : diff) list += "\n  " + d;
                throw InputError(detail::concat("--restart '", cfg.outputs.restart,
                                                "': the checkpoint belongs to a run with other parameters; rerun with "
                                                "the checkpoint's values (its command line was: ",
                                                resume->command_line, "). Differences:", list));
            }
        }

    }

    /// The run fits in memory and, with --device cuda, on the GPU.
    void check_memory_and_device()
    {
        mem = estimate_memory(cfg, dist.operator_spec(cfg), *model, width, kept_spectra(), dist.halo_rows(*model));
        require_memory(
            mem.total(), memory_limit(cfg.runtime.memory_limit_gib, threads),
            detail::concat(
                "this run (", model->params().name, ", N = ", n, " rows, matrix ", format_bytes(mem.matrix_bytes),
                ", vectors ", format_bytes(mem.vector_bytes), ", spectra ", format_bytes(mem.result_bytes),
                mem.conductivity_bytes > 0 ? ", conductivity " + format_bytes(mem.conductivity_bytes) +
                                                  " (about M + 36 vectors of N x --block-width)"
                                            : "",
                ")"));

        // --device cuda: fail before building anything when there is no GPU backend or device,
        // and when the run cannot fit the GPU (the matrix and the KPM blocks live there). Under
        // mpirun each node's first ranks drive one GPU each and its further ranks run on the CPU
        // (Distribution::operator_spec); a node without any visible GPU is refused.
        if (cfg.storage.device == DeviceKind::Cuda) {
            std::string why;
            if (!device::cuda_compiled())
                throw InputError("--device cuda: this build has no CUDA kernels (configured with TOPOKPM_CUDA=OFF or "
                                 "no nvcc found); use --device cpu");
            if (device::visible_device_count(&why) == 0)
                throw InputError("--device cuda: no CUDA device visible (" + why + "); use --device cpu");
            const numerics::OperatorSpec spec = dist.operator_spec(cfg);
            if (spec.device == numerics::Backend::Cuda) {
                device::require_device_memory(
                    mem.total(), spec.device_index,
                    detail::concat("this run (", model->params().name, ", N = ", n, " rows, matrix ",
                                   format_bytes(mem.matrix_bytes), ", vectors ", format_bytes(mem.vector_bytes),
                                   mem.conductivity_bytes > 0 ? ", conductivity " + format_bytes(mem.conductivity_bytes)
                                                              : std::string(),
                                   ")"));
                devices = device::describe(spec.device_index);
            }
        }
    }

    /// --green: the matrix of the same model (its RowSource, as the operator's) analysed by
    /// the sparse LU (ordering, supernodes), and the factors' memory, known from the
    /// analysis, checked with the run's before anything numeric runs.
    void analyse_green()
    {
        if (!cfg.kpm.green_eta) return;
        require_memory(mem.total() + sparse_lu_analysis_bytes(*model),
                       memory_limit(cfg.runtime.memory_limit_gib, threads),
                       detail::concat("this run with --green (KPM ", format_bytes(mem.total()),
                                      "; before the size of the "
                                      "sparse LU factors is known, the sparse LU analysis of N = ",
                                      n, " rows, ", format_bytes(sparse_lu_analysis_bytes(*model)), ")"));
        timers.time("green", [&] {
            green_lu = analyse_sparse_lu(*model);
        });
        const double factors = green_lu->factor_memory_bytes();
        const double work = green_solve_bytes(*model);
        const double kpm = mem.total();
        mem.green_bytes = factors + work;
        require_memory(mem.total(), memory_limit(cfg.runtime.memory_limit_gib, threads),
                       detail::concat("this run with --green (KPM ", format_bytes(kpm), ", sparse LU factors ",
                                      format_bytes(factors), " from the analysis, solves and matrix copy ",
                                      format_bytes(work), ")"));
        log::info("green       : sparse LU analysed in ", fmt("%.3f", timers.get("green")), " s: ",
                  green_lu->factor_nonzeros(), " entries in L + U (", format_bytes(factors), "), ",
                  fmt("%.2f", green_lu->factor_flops() * 1e-9), " Gflop per energy");
    }

    /// --conductivity: the two-index moments on the run's operator, sigma_ab(mu).
    void compute_conductivity()
    {
        if (cfg.kpm.conductivity.empty()) return;
        // Its checkpoints hold the DOS moments finished (the one realization's trace done).
        ConductivityCheckpoints ck;
        ck.header = checkpoint_header();
        ck.header.realization = num_real - 1;
        ck.header.finished.assign(jr.slot_moments.begin(), jr.slot_moments.end() - 1);
        ck.header.trace.blocks_done = jr.num_blocks;
        ck.header.trace.sums = jr.last_sums;
        ck.path = ckpt_path;
        ck.resume_command = resume_command(true);
        ck.previous_intact = jr.checkpoint_id.has_value() || resumed_id.has_value();
        ck.every_s = cfg.outputs.checkpoint_every_s;
        if (cfg.outputs.time_limit_s > 0.0) ck.deadline = t_start + cfg.outputs.time_limit_s;
        if (resume && resume->conductivity) ck.resume = std::move(resume->conductivity);
        ck.ranks = checkpoint_ranks();
        timers.time("conductivity", [&] {
            conductivity = app::compute_conductivity(cfg, *model, dist, *op, scaling, bounds, width, std::move(ck));
        });
        if (conductivity->checkpoint_id)
            jr.checkpoint_id = conductivity->checkpoint_id;  // the one to remove at the end
    }

    /// --green: rho_j(E) = -Im G_jj(E + i eta) / pi of the --ldos rows on the KPM grid,
    /// one factorization per energy.
    void compute_green()
    {
        if (!green_lu) return;
        green_energy = Reconstructor(cfg, scaling).energies();
        const double eta = *cfg.kpm.green_eta;
        const double t0 = wall_seconds();
        double last = t0;
        sparse_direct::GreenLdosOptions o;
        o.eta = eta;
        o.progress = [&](int done, int total, const sparse_direct::FactorReport& f) {
            const double now = wall_seconds();
            if (now - last < cfg.outputs.progress_interval_s || done == total) return;
            last = now;
            // Under mpirun: this rank's energies (every size()-th of the grid); log::info prints rank 0's.
            const std::size_t e =
                static_cast<std::size_t>(done - 1) * static_cast<std::size_t>(dist.size()) + dist.rank();
            log::info("  green energy ", done, "/", total, " (E = ", fmt("%.4f", green_energy[e]), " t, ETA ",
                      fmt("%.3g", eta), " t), elapsed ", fmt("%.1f", now - t0), " s, remaining ~",
                      fmt("%.1f", (now - t0) / done * (total - done)), " s",
                      f.tiny_pivots ? detail::concat(", ", f.tiny_pivots, " tiny pivots") : std::string());
        };
        // A signal stops the phase before the next energy (each rank its own: mpirun forwards
        // the signal to every rank; the stop is agreed after the energies, in green_ldos_over_ranks).
        // So does --time-limit, when the next energy would not end before it: the time per energy
        // of this phase so far, with the factor 2 of the moments' checkpoints (moments_job.cpp).
        bool time_short = false;
        int energies_started = 0;
        o.stop = [&] {
            if (SignalCatcher::pending() != 0) return true;
            const double now = wall_seconds();
            const double per_energy = energies_started > 0 ? (now - t0) / energies_started : 0.0;
            ++energies_started;
            time_short = cfg.outputs.time_limit_s > 0.0 && now + 2.0 * per_energy >= t_start + cfg.outputs.time_limit_s;
            return time_short;
        };
        // Under mpirun the energies are dealt over the ranks (each factors its own: independent).
        timers.time("green", [&] {
            green = dist.distributed() ? sparse_direct::green_ldos_over_ranks(*green_lu, selection->rows, green_energy,
                                                                              o, MPI_COMM_WORLD)
                                       : sparse_direct::green_ldos(*green_lu, selection->rows, green_energy, o);
        });
        green_lu.reset();  // the factors are not needed any more
        if (static_cast<std::size_t>(green.energies_done) < green_energy.size()) {
            // The --green phase keeps no checkpoint of its own; what a resume can skip is the
            // moments, when a checkpoint of them exists.
            const bool have_checkpoint = jr.checkpoint_id.has_value() || resumed_id.has_value();
            throw RunInterrupted(detail::concat(
                SignalCatcher::pending() != 0 || !time_short
                    ? detail::concat("stopped by ", signal_name(SignalCatcher::pending()))
                    : std::string("stopped before the --time-limit"),
                " during the --green phase after ", green.energies_done, " of ", green_energy.size(),
                " energies; that phase has no checkpoint and no result was written",
                have_checkpoint
                    ? detail::concat(
                          "; the checkpoint ", jr.checkpoint_id ? ckpt_path : cfg.outputs.restart,
                          " of the moments is intact (the --green phase starts again)\nresume with: ", resume_command())
                    : std::string("; no checkpoint exists (the moments ran without one): rerun the command")));
        }
        log::info(
            "green       : ", selection->rows.size(), " rows x ", green_energy.size(), " energies",
            dist.distributed() ? detail::concat(" over ", dist.size(), " ranks") : std::string(), ", ETA ",
            fmt("%.4g", eta),
            " t (Lorentz-kernel KPM equivalent: lambda = ", fmt("%.3g", eta * cfg.kpm.num_moments / scaling.a),
            " at M = ", cfg.kpm.num_moments, "), factor ", fmt("%.3f", green.factor_seconds), " s, solve ",
            fmt("%.3f", green.solve_seconds), " s, worst backward error ", fmt("%.1e", green.worst_backward_error),
            green.tiny_pivots ? detail::concat(", ", green.tiny_pivots, " tiny pivots replaced") : std::string(),
            green.gmres_solves ? detail::concat(", ", green.gmres_solves, " near-singular solve(s) finished by GMRES (",
                                                green.gmres_steps, " steps)")
                               : std::string());
        if (green.worst_error_bound > kGreenAccuracy)
            log::warning("--green ", fmt("%.3g", eta), ": the exact LDOS is guaranteed only to about ",
                         fmt("%.1e", green.worst_error_bound), " relative at the worst energy (backward error ",
                         fmt("%.1e", green.worst_backward_error), " after refinement",
                         green.gmres_solves ? " and GMRES" : "", ", times the condition number ||H - z||_1 / ETA)",
                         green.worst_error_bound >= 1.0 ? "; ETA is too small for double precision at energies on or "
                                                          "near an eigenvalue: a larger ETA resolves them"
                                                        : "");
    }

    /// The command that resumes from the checkpoint at ckpt_path (printed after a stop); one of
    /// the --conductivity phase (`same_ranks`) continues on the same ranks and decomposition only.
    std::string resume_command(bool same_ranks = false) const
    {
        const std::string command = cfg.provenance.command_line.find("--restart") == std::string::npos
                                        ? cfg.provenance.command_line + " --restart " + files::shell_word(ckpt_path)
                                        : cfg.provenance.command_line;
        if (!dist.distributed()) return command;
        return same_ranks ? detail::concat("mpirun (or srun) with the same ", dist.size(), " ranks and decomposition: ",
                                           command)
                          : detail::concat("mpirun (or srun) with any number of ranks: ", command);
    }

    void load_checkpoint_state()
    {
        // The parameters agree and the run fits: now the checkpoint's header and every
        // array must fit this run (checked before each is allocated), then they are read.
        if (resume)
            read_checkpoint_state(cfg.outputs.restart,
                                  {n, num_columns, width, trace_moments, num_slots, num_real},
                                  *resume, checkpoint_ranks());
    }

    /// This rank's part of a checkpoint: its rows of the global vectors (canonical order)
    /// and, when the dots are summed once at the end, its own partial sums.
    CheckpointRanks checkpoint_ranks() const
    {
        CheckpointRanks r;
        r.rank = dist.rank();
        r.size = dist.size();
        if (!dist.distributed()) return r;
        for (const auto& [begin, end] : dist.row_runs(n))
            r.rows.push_back({std::uint64_t(begin), std::uint64_t(end - begin)});
        r.num_rows_global = std::uint64_t(n);
        r.layout = dist.layout();
        r.partial_dots = !cfg.runtime.reduce_every_sweep;
        r.gather = [](const std::vector<std::uint64_t>& values) { return mpi::allgatherv(values); };
        return r;
    }

    void report_start() const
    {
        log::info("topokpm kpm-dos ", TOPOKPM_VERSION, " (git ", git_revision(), "), ",
                  dist.distributed() ? detail::concat(dist.size(), " MPI ranks x ") : std::string(), threads,
                  " OpenMP thread(s), CPU kernels ", numerics::kernels::cpu::compiled_isa(),
                  dist.distributed() ? detail::concat(", --comm-mode ", cfg.runtime.comm_mode) : std::string());
        log::info("model       : ", model->params().name, " ", model->params().nx, "x", model->params().ny, "x",
                  model->params().nz, " boundary ", model->params().boundary, ", N = ", n, " rows, nnz = ",
                  model->estimated_nonzeros(), " (", fmt("%.2f", double(model->estimated_nonzeros()) / n), " per row)",
                  num_real > 1 ? detail::concat(", ", num_real, " disorder realizations") : std::string());
        if (probing)
            log::info("ldos        : probing, ", selection->rows.size(), " rows in ", probing->num_colours,
                      " colours at distance ", probing->distance, " x ", cfg.kpm.probing_draws,
                      " draw(s) = ", num_columns, " vectors of ", numerics::kpm_num_sweeps(trace_moments), " sweeps",
                      probing->one_row_per_colour ? " (one row per colour: the exact LDOS)" : "",
                      cfg.kpm.probing_distance_auto ? " (distance: auto)" : "");
    }

    /// The operator behind the Operator seam: KPM does not know which one runs. Built by
    /// make_operator over this rank's rows; under mpirun wrapped with the halo exchange.
    /// `stencil` (when given, serial runs): the model's stencil the build made (kind free;
    /// shared with the CPU operator, BuiltOperator::stencil), else null, for bounds_of.
    std::shared_ptr<const Operator> build_operator(const hamiltonians::Model& mdl,
                                                   std::shared_ptr<const BlockStencil>* stencil = nullptr)
    {
        numerics::BuiltOperator built =
            numerics::make_operator(dist.operator_spec(cfg), hamiltonians::operator_source(mdl));
        if (!dist.distributed()) fill_beta = built.fill_efficiency;  // of the whole matrix
        if (stencil) *stencil = dist.distributed() ? nullptr : std::move(built.stencil);  // a rank's is a slab
        return dist.wrap(cfg, mdl, std::move(built.op));
    }

    void build()
    {
        timers.time("build", [&] { op = build_operator(*model, &op_stencil); });
        cost = op->cost();  // of the whole matrix: summed over the ranks
        cost = {dist.sum(cost.nonzeros), dist.sum(cost.matrix_bytes), dist.sum(cost.storage_bytes)};
        log::info("operator    : ", op->name(), ", ", format_bytes(cost.storage_bytes), " stored",
                  fill_beta > 0 ? detail::concat(", fill efficiency beta = ", fmt("%.4f", fill_beta)) : std::string(),
                  ", built in ", fmt("%.3f", timers.get("build")), " s",
                  cfg.storage.matrix_auto.empty() ? std::string()
                                                  : " (--matrix auto: " + cfg.storage.matrix_auto + ")");

        if (!cfg.outputs.export_matrix.empty()) {
            // Rank 0 writes every file (as checked at the start); agreed: its failure ends every rank.
            timers.time("export", [&] {
                dist.agree([&] {
                    if (dist.root())
                        hamiltonians::export_matrix_market(*model, cfg.outputs.export_matrix,
                                                           &checked_files.export_matrix);
                });
            });
            log::info("matrix      : written to ", cfg.outputs.export_matrix, " (Matrix Market)");
        }

    }

    /// Bounds of one realization: given, Gershgorin, or Lanczos (stopping early).
    /// `built`: the model's stencil when the operator's build made it (kind free), else null;
    /// let go before the Lanczos vectors are allocated (a cuda run's host copy is freed there).
    SpectralBounds bounds_of(const hamiltonians::Model& mdl, const Operator& o,
                             std::shared_ptr<const BlockStencil> built, bool record)
    {
        if (cfg.kpm.bounds_method == BoundsMethod::User) return cfg.kpm.energy_range;
        if (cfg.kpm.bounds_method == BoundsMethod::Gershgorin) return dist.gershgorin(mdl);  // each rank its rows
        // Lanczos stops once its residuals fit in the margin, or once the rigorous
        // Gershgorin discs are within the margin of its Ritz values, when they are the tighter
        // bounds. Serial, whatever the operator: the model's stencil gives the discs from its
        // blocks and the potential (the rows' discs cost as much as several sweeps), and the
        // Rayleigh quotients of its plane waves may show them tight with no step at all (clean
        // graphene). The stencil is the operator's when it has one (built once per
        // realization), else built here and freed before the moments' blocks are allocated.
        // Distributed, or a model without a stencil (matrix-market): the rows' discs, no plane waves.
        std::optional<SpectralBounds> known, inside;
        if (!dist.distributed() && (built || mdl.offers_block_stencil())) {
            std::optional<BlockStencil> own;
            const BlockStencil& stencil = built ? *built : own.emplace(mdl.block_stencil());
            known = gershgorin_bounds(stencil);
            inside = plane_wave_rayleigh_bounds(stencil);
        }
        built.reset();
        const SpectralBounds discs = known ? *known : dist.gershgorin(mdl);
        const numerics::LanczosBounds lb =
            numerics::lanczos_bounds(o, cfg.kpm.lanczos_steps, cfg.kpm.vector_seed, cfg.kpm.lanczos_margin,
                                     cfg.kpm.lanczos_margin, &discs, inside ? &*inside : nullptr);
        if (record)
            bounds_how = !lb.enclosure_taken ? detail::concat("lanczos (", lb.iterations, " steps)")
                         : lb.iterations == 0
                             ? std::string("gershgorin (within the margin of plane-wave Rayleigh quotients, no sweep)")
                             : detail::concat("gershgorin (within the margin of ", lb.iterations, " lanczos steps)");
        if (record)
            bounds_attrs = {
                {"lanczos_iterations", std::int64_t(lb.iterations)},
                {"bounds_source", std::string(lb.enclosure_taken ? "gershgorin (within the lanczos margin)"
                                                                 : "lanczos ritz values + residual + margin")},
                {"lanczos_lowest_ritz", lb.lowest_ritz},
                {"lanczos_highest_ritz", lb.highest_ritz},
                {"lanczos_residual_low", lb.residual_low},
                {"lanczos_residual_high", lb.residual_high}};
        return lb.bounds;
    }

    /// One scaling for every realization (the union of their bounds), so their moments
    /// average; a restart takes the checkpoint's.
    void find_bounds()
    {
        std::shared_ptr<const BlockStencil> built = std::move(op_stencil);  // goes with the bounds
        timers.time("bounds", [&] {
            if (resume) {
                bounds = resume->bounds;
                scaling = resume->scaling;
                return;
            }
            bounds = bounds_of(*model, *op, std::move(built), true);
            // Realizations differ only when there is disorder; user bounds are taken as given.
            if (cfg.model.disorder != 0.0 && cfg.kpm.bounds_method != BoundsMethod::User)
                for (int k = 1; k < num_real; ++k) {
                    const auto mk = hamiltonians::make_model(params_of(k));
                    std::shared_ptr<const BlockStencil> sk;
                    const std::shared_ptr<const Operator> ok = build_operator(*mk, &sk);
                    const SpectralBounds bk = bounds_of(*mk, *ok, std::move(sk), false);
                    bounds = {std::min(bounds.lower, bk.lower), std::max(bounds.upper, bk.upper)};
                }
            scaling = numerics::kpm_scaling(bounds, cfg.kpm.epsilon);
        });
        // A map energy outside the spectrum would be a map of zeros: refused before the moments.
        if (cfg.kpm.ldos_map_energy) {
            const double e = *cfg.kpm.ldos_map_energy;
            dist.agree([&] {
                TOPOKPM_USER_REQUIRE(e >= bounds.lower && e <= bounds.upper, "--ldos-map-energy ", fmt("%.6g", e),
                                     ": outside the spectrum bounds [", fmt("%.6f", bounds.lower), ", ",
                                     fmt("%.6f", bounds.upper), "] t of this run (the map would be zero)");
            });
        }
        log::info("bounds      : [", fmt("%.6f", bounds.lower), ", ", fmt("%.6f", bounds.upper), "] t by ",
                  resume ? std::string("the checkpoint") : bounds_how, " (",
                  fmt("%.3f", timers.get("bounds")), " s); scale a = ", fmt("%.6f", scaling.a), " t, b = ",
                  fmt("%.6f", scaling.b), " t");

    }

    /// Moments, with progress lines on long runs, checkpoints and a clean stop on signals.
    void compute_moments()
    {
        flops_per_sweep = perf::sweep_flops(cost.nonzeros, static_cast<double>(n), width);
        const double t_moments = wall_seconds();
        MomentsJob job = moments_job();
        job.progress = progress_printer(t_moments);
        if (resume) report_restart();
        timers.time("moments", [&] { jr = run_moments_job(job); });
        timers.split("moments", "start_vectors", jr.start_vector_seconds);
        if (map_filter) nystrom_of(job);
        if (probing)  // the trace ran to v_{M-1}: its moments past M are not read (nor the map's filter)
            for (auto& sm : jr.slot_moments) {
                std::vector<double> kept;
                for (std::int64_t j = 0; j < num_slots; ++j)
                    kept.insert(kept.end(), sm.begin() + j * trace_moments,
                                sm.begin() + j * trace_moments + cfg.kpm.num_moments);
                sm = std::move(kept);
            }
        if (op) balance = dist.imbalance(*op);  // collective (op is the same kind on every rank)
        // Probed moments carry cross terms: |mu_n| <= sqrt(rows of a colour) (ProbingColours).
        const double bounded_tol = numerics::moments_bound_tolerance(cfg.storage.precision) +
                                   (probing ? std::sqrt(double(probing->max_rows_per_colour)) - 1.0 : 0.0);
        // Every rank holds the summed moments: a breach (bounds too tight) is one message.
        dist.agree([&] { for (const auto& sm : jr.slot_moments) numerics::check_moments_bounded(sm, bounded_tol); });
        report_moments();
    }

    /// The Nystrom map where every realization's filtered block spans the filter's range on
    /// the rows (probing_nystrom), else (nystrom_map empty) the map of the probed moments.
    void nystrom_of(const MomentsJob& job)
    {
        std::vector<double> sum(selection->rows.size(), 0.0);
        bool spans = true;
        int done = 0;
        double defect = 0.0;
        for (int k = 0; k < num_real && spans; ++k, ++done) {
            const numerics::ProbingNystrom ny = numerics::probing_nystrom(*job.plan_for(k), jr.slot_moments[k]);
            spans = ny.spans;
            nystrom_rank = std::max(nystrom_rank, ny.rank);
            defect += ny.trace_defect;
            for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += ny.diagonal[i] / num_real;
        }
        nystrom_trace_defect = defect / done;  // over the realizations looked at (to the first without a gap)
        if (spans) nystrom_map = std::move(sum);
        log::info("ldos map    : ", spans ? "Nystrom of the probing vectors filtered at the map energy"
                                          : "the probed moments' (the filtered probing block has no gap)",
                  ", rank ", nystrom_rank, " of ", num_columns, " vectors (", fmt("%.0f", nystrom_rank_estimate),
                  " at an average LDOS), estimated error ", fmt("%.2g", 100.0 * nystrom_trace_defect), " % of the mean",
                  spans ? "" : "; a larger --probing-distance or --ldos-method exact gives the map");
    }

    /// The moments job of this run: its operators and start-vector plans per realization
    /// (one operator in memory at a time), the checkpoint it resumes and writes, and under
    /// mpirun the ranks' agreement.
    MomentsJob moments_job()
    {
        MomentsJob job;
        job.num_realizations = num_real;
        job.num_moments = trace_moments;
        job.block_width = width;
        job.num_slots = num_slots;
        job.scaling = scaling;
        job.operator_for = [this](int k) -> std::shared_ptr<const Operator> {
            if (k == 0) return op;
            op.reset();  // one operator in memory at a time
            model = hamiltonians::make_model(params_of(k));
            std::shared_ptr<const Operator> ok;
            timers.time("build", [&] { ok = build_operator(*model); });
            return ok;
        };
        // The map's filter: the weights h_n of rho(E_map) = sum_n h_n mu_n, the reconstruction's
        // own (it is linear in the moments: h_n is its value for the n-th unit moment vector).
        map_weights.clear();
        if (map_filter) {
            const Reconstructor rec(cfg, scaling);
            std::vector<double> unit(static_cast<std::size_t>(cfg.kpm.num_moments), 0.0);
            for (std::size_t k = 0; k < unit.size(); ++k) {
                unit[k] = 1.0;
                map_weights.push_back(rec.at(unit, *cfg.kpm.ldos_map_energy));
                unit[k] = 0.0;
            }
        }
        job.plan_for = [this](int k) -> std::unique_ptr<numerics::StartVectorPlan> {
            switch (what) {
            case Quantity::Ldos:
                if (probing)
                    return numerics::probing_plan(*probing, n, cfg.kpm.probing_draws, cfg.kpm.num_moments,
                                                  realization_seed(cfg.kpm.vector_seed, k), map_weights);
                return numerics::unit_vector_plan(n, selection->rows);
            case Quantity::Spectral: return numerics::plane_wave_plan(lattice, momenta->momenta);
            case Quantity::Dos: break;
            }
            if (cfg.kpm.trace == TraceKind::Exact) return numerics::exact_trace_plan(n);
            return numerics::random_phase_plan(n, cfg.kpm.num_vectors, realization_seed(cfg.kpm.vector_seed, k));
        };
        if (resume) {  // the DOS part; a two-index state stays here for the conductivity phase (not copied)
            std::optional<numerics::TwoIndexState> two_index = std::move(resume->conductivity);
            resume->conductivity.reset();
            job.resume = resume;
            resume->conductivity = std::move(two_index);
        }
        job.checkpoint_header = checkpoint_header();
        job.checkpoint_path = ckpt_path;
        job.checkpoint_every_s = cfg.outputs.checkpoint_every_s;
        job.resume_command = resume_command();
        if (dist.distributed()) {
            // A signal reaches the ranks between different sweeps: they agree on it (and on
            // periodic and time-limit checkpoints) every few sweeps, then write collectively.
            job.agree_max = [this](std::vector<std::int64_t>& v) { dist.max(v); };
            job.agree_every = kAgreeEvery;
        }
        job.ranks = checkpoint_ranks();
        if (cfg.outputs.time_limit_s > 0.0) job.deadline = t_start + cfg.outputs.time_limit_s;
        job.checkpoint_bytes = 2.0 * 16.0 * width * double(numerics::part_rows(dist.operator_spec(cfg), n));
        return job;
    }

    /// What every checkpoint of this run records about it (the phases add their state).
    CheckpointData checkpoint_header() const
    {
        CheckpointData h;
        h.parameters = parameters;
        h.command_line = cfg.provenance.command_line;
        h.scaling = scaling;
        h.bounds = bounds;
        h.threads = threads;
        h.num_moments = trace_moments;
        h.num_slots = num_slots;
        h.num_realizations = num_real;
        return h;
    }

    /// The progress line of the moments, at most every --progress-interval seconds.
    std::function<void(const JobProgress&)> progress_printer(double t_moments) const
    {
        return [this, t_moments, last_report = t_moments](const JobProgress& p) mutable {
            const double now = wall_seconds();
            if (now - last_report < cfg.outputs.progress_interval_s || p.sweeps_done >= p.num_sweeps) return;
            last_report = now;
            const double elapsed = now - t_moments;
            const double rate = p.sweeps_this_run / std::max(elapsed, 1e-9);  // sweeps per second
            const std::int64_t per_block = numerics::kpm_num_sweeps(trace_moments);
            const std::int64_t in_block = p.sweeps_done % per_block;
            const int moments_done = std::min<int>(
                cfg.kpm.num_moments, (probing ? 1 : 2) * static_cast<int>(in_block == 0 ? per_block : in_block));
            std::string where;
            if (p.num_blocks > 1) where += detail::concat(", block ", p.block + 1, "/", p.num_blocks);
            if (p.num_realizations > 1)
                where += detail::concat(", realization ", p.realization + 1, "/", p.num_realizations);
            log::info("  moments ", moments_done, "/", cfg.kpm.num_moments, where, " (",
                      fmt("%.0f", 100.0 * p.sweeps_done / p.num_sweeps), "% of all sweeps), elapsed ",
                      fmt("%.1f", elapsed), " s, ETA ", fmt("%.1f", (p.num_sweeps - p.sweeps_done) / rate), " s, ",
                      fmt("%.2f", rate * flops_per_sweep * 1e-9), " Gflop/s");
        };
    }

    /// Where a resumed run continues, and how its moments compare with an uninterrupted run's.
    void report_restart() const
    {
        log::info("restart     : from ", cfg.outputs.restart,
                  resume->conductivity
                      ? std::string(": the DOS moments finished")
                      : detail::concat(" at realization ", resume->realization + 1, "/", num_real, ", block ",
                                       resume->trace.blocks_done + 1, ", ",
                                       resume->trace.block ? resume->trace.block->sweeps_done : 0, " sweeps into it"),
                  resume->ranks > 1 || dist.distributed()
                      ? detail::concat(" (written by ", resume->ranks, " rank(s), ",
                                       resume->own_partials ? "same layout: each rank's own partial sums"
                                       : dist.distributed() && !cfg.runtime.reduce_every_sweep
                                           ? "other layout: the summed moments on rank 0" : "summed moments", ")")
                      : std::string(),
                  resume->threads != threads
                      ? detail::concat("; written with --threads ", resume->threads, ", this run has ", threads,
                                       ": the moments equal an uninterrupted run's to rounding (bit for bit with the "
                                       "same --threads)")
                      : std::string());
    }

    /// The moments' rates (Gflop/s, GB/s: over the sweeps, the start vectors' time apart, as
    /// the build's and the bounds') and the ranks' balance, logged.
    void report_moments()
    {
        const double t_kernel = timers.get("moments");
        gflops = jr.sweeps_this_run * flops_per_sweep / t_kernel * 1e-9;
        gbytes = jr.sweeps_this_run *
                 perf::sweep_bytes(cost.matrix_bytes, static_cast<double>(n), width,
                                   cfg.storage.precision == Precision::Single ? 8.0 : 16.0) /
                 t_kernel * 1e-9;
        num_vectors_total = static_cast<std::int64_t>(num_columns) * num_real;
        log::info("moments     : M = ", cfg.kpm.num_moments, ", ",
                  what == Quantity::Dos ? to_string(cfg.kpm.trace) : to_string(what), " trace, ", num_vectors_total,
                  " vectors, ", jr.sweeps_this_run, " augmented sweeps of width ", width, " in ", fmt("%.3f", t_kernel),
                  " s (and ", fmt("%.3f", timers.get("start_vectors")),
                  " s to make the start vectors): ", fmt("%.2f", gflops), " Gflop/s, ", fmt("%.2f", gbytes),
                  " GB/s (one sweep's minimum traffic per sweep), ",
                  op && op->fused_steps(width) >= 2 ? "two sweeps per pass over memory (temporal blocking: x and y are "
                                                      "read and written once per two sweeps, about 2/3 of those bytes)"
                                                    : "one sweep per pass over memory",
                  jr.checkpoints_written
                      ? detail::concat(", ", jr.checkpoints_written, " checkpoint(s) (longest write ",
                                       fmt("%.3f", jr.checkpoint_seconds), " s)")
                      : std::string());
        if (balance.size() == 4)
            log::info("ranks       : busy per sweep slowest ", fmt("%.3f", 1e3 * std::get<double>(balance[0].value)),
                      " ms, mean ", fmt("%.3f", 1e3 * std::get<double>(balance[1].value)), " ms (imbalance ",
                      fmt("%.3f", std::get<double>(balance[3].value)), "), halo wait mean ",
                      fmt("%.3f", 1e3 * std::get<double>(balance[2].value)), " ms");
    }

    /// Bands of the clean lattice from its Bloch Hamiltonians (exact there), for the plot:
    /// from the model's stencil (numerics/kpm/bloch.hpp: no operator, no vectors), on rank 0,
    /// which writes them.
    void compute_bands()
    {
        // (a model whose stencil the kernels do not take, hr of more than 8 orbitals: no bands)
        if (what != Quantity::Spectral || !translation_invariant(*model) || !model->offers_block_stencil() ||
            !dist.root())
            return;
        timers.time("bands", [&] {
            const BlockStencil stencil = model->block_stencil();
            for (const auto& k : momenta->momenta) {
                const std::vector<double> e = analysis::hermitian_eigenvalues(numerics::bloch_hamiltonian(stencil, k),
                                                                              lattice.states_per_cell);
                bands.insert(bands.end(), e.begin(), e.end());
            }
        });

    }

    /// Reconstruction and the result file (spec §5), atomically. After the moment reduction
    /// every rank holds the same moments. An LDOS under mpirun is written by every rank
    /// collectively (analysis::ResultWriter(path, true): rank 0's attributes), each rank
    /// reconstructing and writing its own rows; any other result (a few spectra) is written
    /// by rank 0 alone.
    void write_result()
    {
        const AttributeList layout = dist.provenance(cfg);  // collective
        const bool collective = dist.distributed() && what == Quantity::Ldos;
        // A failure on any rank (a full disk) ends every rank with one message and exit code.
        dist.agree([&] {
            if (!collective && !dist.root()) return;
            MomentsOutcome outcome;
            outcome.slot_moments = std::move(jr.slot_moments);
            for (int k = 0; k < num_real; ++k) {
                outcome.disorder_seeds.push_back(realization_seed(cfg.model.disorder_seed, k));
                outcome.vector_seeds.push_back(realization_seed(cfg.kpm.vector_seed, k));
            }
            const Reconstructor rec(cfg, scaling);
            const double t_write = wall_seconds();
            RunResult out(cfg, model->attributes(), collective);
            // /model describes realization 0 (the given seed); the ensemble's seeds are in /realizations.
            out.write_attributes("/model", {{"disorder_seed", std::uint64_t(cfg.model.disorder_seed)}});
            switch (what) {
            case Quantity::Dos:
                summary = write_dos(out, cfg, rec, outcome);
                if (conductivity) write_conductivity(out, cfg, *conductivity);
                break;
            case Quantity::Ldos:
                summary = write_ldos(out, cfg, rec, outcome, *selection, ldos_share(selection->rows, dist.row_runs(n)),
                                     dist, nystrom_map.empty() ? nullptr : &nystrom_map);
                out.write_attributes("/ldos", {{"method", to_string(cfg.kpm.ldos_method)}});
                if (probing)
                    out.write_attributes(
                        "/ldos",
                        {{"probing_distance", std::int64_t(probing->distance)},
                         {"probing_distance_source", std::string(cfg.kpm.probing_distance_auto ? "auto" : "given")},
                         {"probing_draws", std::int64_t(cfg.kpm.probing_draws)},
                         {"probing_colours", std::int64_t(probing->num_colours)},
                         {"probing_exact_moments",
                          std::int64_t(probing->one_row_per_colour
                                           ? cfg.kpm.num_moments
                                           : std::min(probing->distance, cfg.kpm.num_moments))}});
                if (map_filter)
                    out.write_attributes("/ldos_map",
                                         {{"method", std::string(nystrom_map.empty() ? "probing" : "nystrom")},
                                          {"nystrom_rank", std::int64_t(nystrom_rank)},
                                          {"nystrom_rank_estimate", nystrom_rank_estimate},
                                          {"nystrom_trace_defect", nystrom_trace_defect},
                                          {"nystrom_columns", std::int64_t(num_columns)}});
                if (cfg.kpm.green_eta) write_green(out);
                break;
            case Quantity::Spectral:
                summary = write_spectral(out, cfg, rec, outcome, *momenta, lattice.states_per_cell, bands);
                break;
            }
            const std::string trace_name = what == Quantity::Dos ? to_string(cfg.kpm.trace) : to_string(what);
            out.write_attributes(
                "/kpm", {{"scale_a", scaling.a},
                         {"scale_b", scaling.b},
                         {"num_moments", std::int64_t(cfg.kpm.num_moments)},
                         {"num_vectors",
                          std::int64_t(what == Quantity::Dos && cfg.kpm.trace == TraceKind::Exact ? n * num_real
                                                                                                  : num_vectors_total)},
                         {"vector_seed", std::uint64_t(cfg.kpm.vector_seed)},
                         {"num_rows", std::int64_t(n)},
                         {"trace", trace_name},
                         {"num_realizations", std::int64_t(num_real)},
                         {"block_width", std::int64_t(width)},
                         {"precision", to_string(cfg.storage.precision)},
                         {"epsilon", cfg.kpm.epsilon},
                         {"bounds_method", resume ? std::string("checkpoint") : to_string(cfg.kpm.bounds_method)},
                         {"bounds_lower", bounds.lower},
                         {"bounds_upper", bounds.upper}});
            if (!bounds_attrs.empty()) out.write_attributes("/kpm", bounds_attrs);
            out.write_attributes("/dos", {{"kernel", analysis::to_string(cfg.kpm.kernel)},
                                          {"lorentz_lambda", cfg.kpm.lorentz_lambda},
                                          {"grid", std::string(cfg.kpm.energy_grid ? "user" : "chebyshev")},
                                          {"integral", summary.integral}});
            timers.add("write", wall_seconds() - t_write);
            AttributeList prov = {
                {"operator", op ? op->name() : std::string(cost.nonzeros > 0 ? "rebuilt per realization" : "")},
                {"restarted_from", cfg.outputs.restart},
                {"gflops", gflops},
                {"gbytes_per_second", gbytes}};
            prov.insert(prov.end(), layout.begin(), layout.end());
            prov.insert(prov.end(), balance.begin(), balance.end());
            out.commit(*this, devices, prov, &checked_files.output);
        });
    }

    /// models.md §7: /green/rows, /green/energy, /green/rho [rows, K], eta (and how it was solved).
    void write_green(RunResult& out) const
    {
        const std::uint64_t nr = selection->rows.size(), kp = green_energy.size();
        out.write_int64("/green/rows", {"1", "The selected Hamiltonian rows (0-based, canonical order)."},
                        std::vector<std::int64_t>(selection->rows.begin(), selection->rows.end()), {nr});
        out.write_doubles("/green/energy", {"t", "Energies of the Green-function density of states."}, green_energy,
                          {kp});
        out.write_doubles("/green/rho", {"1/t", "-Im G_jj(E + i eta) / pi of each selected row."}, green.rho, {nr, kp});
        out.write_attributes("/green",
                             {{"eta", *cfg.kpm.green_eta},
                              {"method", std::string("sparse LU of (E + i eta) - H per energy, unit-vector solves")},
                              {"tiny_pivots", std::int64_t(green.tiny_pivots)},
                              {"worst_backward_error", green.worst_backward_error},
                              {"lorentz_lambda_equivalent", *cfg.kpm.green_eta * cfg.kpm.num_moments / scaling.a}});
    }

    void report_end()
    {
        log::info(
            "dos         : ", summary.dos.energy.size(), " energies from ", fmt("%.4f", summary.dos.energy.front()),
            " to ", fmt("%.4f", summary.dos.energy.back()), " t, kernel ", analysis::to_string(cfg.kpm.kernel),
            ", integral of rho = ", fmt("%.12f", summary.integral),
            cfg.kpm.energy_grid ? " (trapezoid on the user grid)" : "", summary.has_stderr ? ", with error bars" : "");
        // The result holds everything now: the checkpoint this run wrote and the one it resumed
        // are spent; nothing else is touched.
        for (const std::string& spent : remove_spent_checkpoints(run_files, jr.checkpoint_id, resumed_id))
            log::info("checkpoint  : ", spent, " removed (run complete)");
        if (jr.checkpoints_failed > 0)
            log::warning(jr.checkpoints_failed,
                         " periodic checkpoint(s) could not be written (see the warnings above)");
        log::info("time        :", phase_times(timers, wall_seconds() - t_start));
        log::info("memory      : ", format_bytes(mem.total()), " estimated (matrix ", format_bytes(mem.matrix_bytes),
                  ", vectors ", format_bytes(mem.vector_bytes), ", spectra ", format_bytes(mem.result_bytes),
                  mem.green_bytes > 0 ? ", sparse LU " + format_bytes(mem.green_bytes) : std::string(),
                  mem.conductivity_bytes > 0 ? ", conductivity " + format_bytes(mem.conductivity_bytes) : std::string(),
                  ")");
        std::printf("result written to %s\n", cfg.outputs.result_file.c_str());
    }
};

DosRun::DosRun(const RunConfig& config, Distribution& distribution)
    : s_(std::make_unique<State>(config, distribution))
{
}

DosRun::~DosRun() = default;

void DosRun::run()
{
    validate();
    build();
    bounds();
    moments();
    conductivity();
    green();
    bands();
    result();
    report();
}

void DosRun::validate() { s_->validate(); }
void DosRun::build() { s_->build(); }
void DosRun::bounds() { s_->find_bounds(); }
void DosRun::moments() { s_->compute_moments(); }
void DosRun::conductivity() { s_->compute_conductivity(); }
void DosRun::green() { s_->compute_green(); }
void DosRun::bands() { s_->compute_bands(); }
void DosRun::result() { s_->write_result(); }
void DosRun::report() { if (s_->dist.root()) s_->report_end(); }

const hamiltonians::Model* DosRun::model() const { return s_->model.get(); }
const Operator* DosRun::op() const { return s_->op.get(); }
SpectralBounds DosRun::spectral_bounds() const { return s_->bounds; }
const std::vector<std::vector<double>>& DosRun::slot_moments() const { return s_->jr.slot_moments; }
const std::vector<double>& DosRun::band_energies() const { return s_->bands; }

void run_dos(const RunConfig& cfg)
{
    Distribution serial;
    run_dos(cfg, serial);
}

void run_dos(const RunConfig& cfg, Distribution& dist)
{
    // Lower layers name parameters; every message leaving the run names the flag.
    with_flag_names([&] { DosRun(cfg, dist).run(); });
}

}  // namespace topokpm::app
