#include "app/run/run_eigs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>

#include "analysis/reconstruct.hpp"
#include "analysis/result_file.hpp"
#include "app/cli/operator_choice.hpp"
#include "app/cli/parameter_flags.hpp"
#include "app/cli/resolved_run.hpp"
#include "app/cli/build_revision.hpp"
#include "app/mpi/distribution.hpp"
#include "app/run/run_files.hpp"
#include "app/run/run_output.hpp"
#include "numerics/eigs/chebfd.hpp"
#include "numerics/eigs/chebyshev_extremal.hpp"
#include "numerics/eigs/eigenpairs.hpp"
#include "numerics/eigs/thick_restart_lanczos.hpp"
#include "numerics/lanczos/lanczos.hpp"
#include "numerics/sparse_direct/distributed_lu.hpp"
#include "numerics/sparse_direct/shift_invert.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/base/log.hpp"
#include "runtime/base/system.hpp"
#include "runtime/base/timer.hpp"
#include "topokpm/config.hpp"

namespace topokpm::app {
namespace {

using Kind = numerics::EigenRequest::Kind;

/// Largest N that `auto` solves densely (5 * 16 N^2 = 1.3 GiB, seconds of zheevd).
constexpr global_index kAutoDenseRows = 4096;

/// The method that runs `request` on N rows (models.md §6), or InputError saying why none
/// can yet.
EigsMethod resolve_method(EigsMethod asked, Kind kind, global_index n)
{
    const bool extremal = kind == Kind::Lowest || kind == Kind::Highest;
    switch (asked) {
    case EigsMethod::Auto:
        if (n <= kAutoDenseRows) return EigsMethod::Dense;
        if (extremal || kind == Kind::Window) return EigsMethod::ChebFd;
        return EigsMethod::ShiftInvert;
    case EigsMethod::Lanczos:
        TOPOKPM_USER_REQUIRE(extremal, "--method lanczos finds extremal eigenpairs (--extremal lowest:k or highest:k); "
                             "for --window or --shift use --method dense (N <= ", numerics::kDenseMaxRows, ")");
        return asked;
    case EigsMethod::Dense:
        TOPOKPM_USER_REQUIRE(n <= numerics::kDenseMaxRows, "--method dense: N = ", n, " rows, at most ",
                             numerics::kDenseMaxRows, " (it needs about ", format_bytes(80.0 * double(n) * double(n)),
                             "); use --method lanczos with --extremal");
        return asked;
    case EigsMethod::ChebFd:
        TOPOKPM_USER_REQUIRE(kind != Kind::Shift, "--method chebfd finds every eigenpair in a --window Emin:Emax or "
                             "the --extremal ones; for --shift use --method dense (N <= ", numerics::kDenseMaxRows,
                             ") or shift-invert");
        return asked;
    case EigsMethod::ShiftInvert:
        TOPOKPM_USER_REQUIRE(kind == Kind::Shift, "--method shift-invert finds the eigenvalues nearest a shift: use "
                             "--shift E0 --count k (for --extremal use --method lanczos)");
        return asked;
    }
    return asked;
}

/// Per pair, the weight of |v|^2 on each of the model's eigenvector parts (layers z for
/// ti, sublattices for graphene: hamiltonians::EigenvectorParts), from this rank's rows in
/// canonical order (models.md §2, §3), summed over the ranks: row-major [k, parts], each
/// row summing to 1 for a unit vector. A model without parts (EigenvectorParts::None: the
/// file models) has none: empty, parts = 0.
std::vector<double> part_weights(const numerics::EigenPairs& pairs, const hamiltonians::Model& model,
                                 global_index row_begin, const Operator& op, int& parts)
{
    const hamiltonians::ModelParams& m = model.params();
    const global_index orbitals = model.orbitals_per_site();
    parts = 0;
    if (model.kind().eigenvector_parts == hamiltonians::EigenvectorParts::None) return {};
    const bool layers = model.kind().eigenvector_parts == hamiltonians::EigenvectorParts::Layers;
    parts = layers ? m.nz : static_cast<int>(orbitals);
    const std::size_t k = pairs.values.size();
    const global_index n = pairs.local_rows;
    std::vector<double> w(k * static_cast<std::size_t>(parts), 0.0);
    for (std::size_t c = 0; c < k; ++c)
        for (global_index r = 0; r < n; ++r) {
            const global_index row = row_begin + r;
            const int part = layers ? static_cast<int>((row / orbitals) % m.nz) : static_cast<int>(row % orbitals);
            w[c * parts + part] += std::norm(pairs.vectors[static_cast<std::size_t>(r + c * n)]);
        }
    op.sum_over_ranks(w.data(), w.size());
    return w;
}

/// The kpm-eigs pipeline; its RunRecord (start, threads, phase times) goes to /provenance.
class EigsRun : RunRecord {
public:
    EigsRun(const RunConfig& config, Distribution& distribution) : cfg(config), dist(distribution) {}

    void run()
    {
        log::set_quiet(cfg.outputs.quiet || !dist.root());
        threads = use_threads(cfg);
        dist.agree([&] { validate(); });
        dist.split_rows(cfg, *model);  // collective: this rank's rows, priced and built below
        dist.agree([&] { check_memory(); });
        log::info("topokpm kpm-eigs ", TOPOKPM_VERSION, " (git ", git_revision(), "), ",
                  dist.distributed() ? detail::concat(dist.size(), " MPI ranks x ") : std::string(), threads,
                  " OpenMP thread(s)");
        log::info("model       : ", cfg.model.name, " ", cfg.model.nx, "x", cfg.model.ny, "x", cfg.model.nz,
                  " boundary ", model->params().boundary, ", N = ", n, " rows");
        build();
        find_scale();
        solve();
        write_result();
        if (dist.root()) report();
    }

private:
    RunConfig cfg;  ///< as given, then resolved for the model (resolve_run: the operator)
    Distribution& dist;
    std::unique_ptr<hamiltonians::Model> model;
    global_index n = 0;
    EigsMethod method = EigsMethod::Auto;
    std::shared_ptr<const Operator> op;
    SpectralBounds discs, kpm_bounds;  // Gershgorin enclosure; Lanczos bounds with margin (the KPM scaling's)
    numerics::ChebFdStats chebfd;
    MemoryLimit limit;      // check_memory
    double held = 0.0;      // operator and gathered vectors: the run's bytes besides the method's workspace
    double estimate = 0.0;  // the run's bytes: held + the method's workspace (ChebFD: of its final space)
    double energy_scale = 0.0, tolerance = 0.0;
    double relative_tolerance = 0.0;  // --tolerance, or the reachable one it was raised to
    numerics::EigenPairs pairs;
    std::unique_ptr<sparse_direct::SparseLU> lu;  // shift-invert: the analysis of H (check_memory)
    sparse_direct::ShiftInvertReport si;
    std::vector<double> weights;
    int parts = 0;
    std::vector<complex_double> all_vectors;  // [k, N] on every rank with --save-vectors
    files::Guard output_guard;                // what the result may replace (rank 0)

    /// Request, method, operator and files, before anything is built.
    void validate()
    {
        model = hamiltonians::make_model(cfg.model);
        n = model->num_rows();
        resolve_run(cfg, *model);
        numerics::validate(cfg.eigs.request, n);
        method = resolve_method(cfg.eigs.method, cfg.eigs.request.kind, n);
        if (dist.root()) output_guard = check_run_files({cfg.outputs.result_file, "", "", ""}).output;
    }

    /// This rank's operator part (cost model of the one factory), the method's workspace,
    /// and the gathered vectors with --save-vectors fit in memory (memory_limit(): the one
    /// limit, named in the refusal). A --window search space is sized after the KPM count:
    /// ChebFD checks it then against what the limit leaves (chebfd_memory).
    void check_memory()
    {
        const numerics::OperatorSpec s = dist.operator_spec(cfg);
        const auto cost = operator_cost(s, *model);
        const double rows = static_cast<double>(n);
        const double part = static_cast<double>(numerics::part_rows(s, n)), share = part / rows;
        const double k = cfg.eigs.request.kind == Kind::Window ? 64.0 : double(cfg.eigs.request.count) + 8.0;
        // Lanczos basis (thick restart: max(2k + 20, 40) columns) and the Ritz block (2k + 8).
        const double basis = 16.0 * part * (std::max(2.0 * k + 20.0, 40.0) + 2.0 * k + 8.0);
        double workspace = 0.0;
        switch (method) {
        case EigsMethod::Dense: workspace = 80.0 * rows * rows; break;
        case EigsMethod::ChebFd:
            workspace = cfg.eigs.request.kind == Kind::Window ? numerics::chebfd_space_bytes(part, k, threads) : basis;
            break;
        case EigsMethod::ShiftInvert:  // the factors' size is known from the analysis, priced first
            require_memory(sparse_lu_analysis_bytes(*model), memory_limit(cfg.runtime.memory_limit_gib, threads),
                           detail::concat("the sparse LU analysis of N = ", n, " rows (--method shift-invert)"));
            timers.time("analyse", [&] { lu = analyse_sparse_lu(*model); });
            workspace = lu->factor_memory_bytes() + 32.0 * double(model->estimated_nonzeros()) +
                        16.0 * rows * (4.0 * k + 8.0) + basis;
            break;
        default: workspace = basis; break;
        }
        const double matrix = cost.matrix_bytes(part, static_cast<double>(model->estimated_nonzeros()) * share);
        held = matrix + (cfg.eigs.save_vectors ? 16.0 * rows * k : 0.0);
        limit = memory_limit(cfg.runtime.memory_limit_gib, threads);
        estimate = held + workspace;
        require_memory(estimate, limit,
                       detail::concat("this kpm-eigs run (N = ", n, " rows, --method ", to_string(method), ", matrix ",
                                      format_bytes(matrix), ", workspace ", format_bytes(workspace), ")"));
    }

    /// What a --window search space may use: the limit less what the run holds besides it.
    MemoryLimit chebfd_memory() const
    {
        return {std::max(1.0, limit.bytes - held),
                detail::concat(limit.source, ", of which the operator and saved vectors hold ", format_bytes(held))};
    }

    void build()
    {
        timers.time("build", [&] {
            op = dist.wrap(cfg, *model, std::move(numerics::make_operator(dist.operator_spec(cfg), hamiltonians::operator_source(*model)).op));
        });
        log::info("operator    : ", op->name(), ", built in ", fmt("%.3f", timers.get("build")), " s");
    }

    /// max(|Emin|, |Emax|) from the extremal Ritz values (they lie inside the spectrum, so
    /// the tolerance is never looser than asked), and the rigorous Gershgorin enclosure a
    /// window must meet.
    void find_scale()
    {
        timers.time("bounds", [&] {
            discs = dist.gershgorin(*model);
            const numerics::LanczosBounds lb = numerics::lanczos_bounds(*op, cfg.kpm.lanczos_steps, cfg.kpm.vector_seed,
                                                                        cfg.kpm.lanczos_margin, cfg.kpm.lanczos_margin);
            energy_scale = std::max(std::abs(lb.lowest_ritz), std::abs(lb.highest_ritz));
            kpm_bounds = lb.bounds;
        });
        tolerance = cfg.eigs.request.tolerance * energy_scale;
        const auto& r = cfg.eigs.request;
        // A tolerance below the rounding of one apply of H can never be confirmed (and would
        // split degenerate levels, whose copies differ by rounding): raised to the reachable one.
        const double reachable = numerics::reachable_tolerance(
            std::max(std::abs(discs.lower), std::abs(discs.upper)),
            std::ceil(double(model->estimated_nonzeros()) / double(n)));
        relative_tolerance = r.tolerance;
        if (tolerance < reachable) {
            tolerance = reachable;
            relative_tolerance = reachable / energy_scale;
            log::warning("--tolerance ", r.tolerance, " is below what double precision reaches for this matrix "
                         "(one apply of H is rounded by up to ", fmt("%.2e", reachable), " t); using --tolerance ",
                         fmt("%.2e", relative_tolerance), " (", fmt("%.2e", reachable), " t) instead");
        }
        dist.agree([&] {
            TOPOKPM_USER_REQUIRE(r.kind != Kind::Window || (r.window_max >= discs.lower && r.window_min <= discs.upper),
                                 "--window ", r.window_min, ":", r.window_max, " lies outside the spectrum, which is "
                                 "inside [", discs.lower, ", ", discs.upper, "] t (Gershgorin)");
        });
        log::info("scale       : max |E| = ", fmt("%.6f", energy_scale), " t (Lanczos), spectrum inside [",
                  fmt("%.4f", discs.lower), ", ", fmt("%.4f", discs.upper), "] t, tolerance ", fmt("%.3e", tolerance),
                  " t (", fmt("%.3f", timers.get("bounds")), " s)");
    }

    /// The options of the extremal methods (thick-restart Lanczos, the block Chebyshev
    /// filter): the end of the spectrum, the count, the tolerance, the seed, the progress lines.
    template <class Options>
    Options extremal_options(const numerics::EigenRequest& request) const
    {
        Options o;
        o.end = request.kind == Kind::Lowest ? numerics::SpectrumEnd::Lowest : numerics::SpectrumEnd::Highest;
        o.count = request.count;
        o.tolerance = tolerance;
        o.seed = cfg.kpm.vector_seed;
        o.progress = progress_printer(request.count);
        return o;
    }

    void solve()
    {
        numerics::EigenRequest request = cfg.eigs.request;
        request.tolerance = tolerance;
        timers.time("eigs", [&] {
            if (method == EigsMethod::Dense) {
                pairs = numerics::dense_eigenpairs(*op, request);
            } else if (method == EigsMethod::ShiftInvert) {
                solve_shift_invert(request);
            } else if (method == EigsMethod::ChebFd && request.kind != Kind::Window) {
                pairs =
                    numerics::chebyshev_extremal(*op, extremal_options<numerics::ChebyshevExtremalOptions>(request));
            } else if (method == EigsMethod::ChebFd) {
                numerics::ChebFdOptions o;
                o.window_min = request.window_min;
                o.window_max = request.window_max;
                o.tolerance = tolerance;
                o.bounds = kpm_bounds;
                o.epsilon = cfg.kpm.epsilon;
                o.damping = [this](int m) { return analysis::damping_factors(cfg.kpm.kernel, m, cfg.kpm.lorentz_lambda); };
                o.seed = cfg.kpm.vector_seed;
                o.progress = chebfd_progress_printer();
                o.memory = chebfd_memory();  // the space is sized after the KPM count
                pairs = numerics::chebfd_eigenpairs(*op, o, &chebfd);
                estimate = held + numerics::chebfd_space_bytes(static_cast<double>(op->num_rows()), chebfd.search_size, threads);
            } else {
                pairs = numerics::thick_restart_lanczos(*op, extremal_options<numerics::ThickRestartOptions>(request));
            }
            weights = part_weights(pairs, *model, op->row_begin(), *op, parts);
            if (cfg.eigs.save_vectors) {
                // Every rank's rows into one [k, N] array (zeros elsewhere), summed over the ranks.
                const std::size_t k = pairs.values.size();
                all_vectors.assign(k * static_cast<std::size_t>(n), complex_double(0.0, 0.0));
                const global_index nl = pairs.local_rows, b = op->row_begin();
                for (std::size_t c = 0; c < k; ++c)
                    for (global_index r = 0; r < nl; ++r) all_vectors[c * n + b + r] = pairs.vectors[r + c * nl];
                op->sum_over_ranks(reinterpret_cast<double*>(all_vectors.data()), 2 * all_vectors.size());
            }
        });
        const double worst = pairs.residuals.empty() ? 0.0 : *std::max_element(pairs.residuals.begin(), pairs.residuals.end());
        log::info("eigs        : ", pairs.values.size(), " pair(s) by ", to_string(method), " in ",
                  fmt("%.3f", timers.get("eigs")), " s, ", pairs.matvecs, " matvecs",
                  method == EigsMethod::Lanczos ? detail::concat(", ", pairs.restarts, " restarts, ", pairs.searches, " searches")
                  : method == EigsMethod::ChebFd && cfg.eigs.request.kind != Kind::Window
                      ? detail::concat(", ", pairs.restarts, " filter passes")
                      : std::string(),
                  ", largest residual ", fmt("%.3e", worst), " t");
        if (method == EigsMethod::ChebFd && cfg.eigs.request.kind == Kind::Window) {
            const auto& c = chebfd;
            log::info("chebfd      : filter degree ", c.filter_degree, ", expected ", fmt("%.1f", c.expected_count),
                      " in the window (", fmt("%.1f", c.expected_guard), " with the guard), search space ", c.search_size,
                      ", ", pairs.restarts, " passes, ", c.tsqr_fallbacks, " TSQR fallbacks");
            const double sweeps = c.phases.get("filter_spmmv"), filter = sweeps + c.phases.get("filter_accumulate");
            log::info("chebfd      : SpMMV ", fmt("%.1f", 100.0 * c.seconds_spmmv() / std::max(c.seconds_total, 1e-30)),
                      " % of ", fmt("%.3f", c.seconds_total), " s, filter (SpMMV + accumulation) ",
                      fmt("%.1f", 100.0 * filter / std::max(c.seconds_total, 1e-30)), " %; filter ",
                      fmt("%.2f", sweeps > 0 ? c.filter_flops / sweeps * 1e-9 : 0.0), " Gflop/s in its sweeps, ",
                      fmt("%.2f", filter > 0 ? c.filter_flops / filter * 1e-9 : 0.0), " with the accumulation (",
                      c.filter_matvecs, " matvecs, this rank)");
            std::string split;
            for (const auto& [phase, seconds] : c.phases.phases()) split += " " + phase + " " + fmt("%.3f", seconds) + " s,";
            log::info("chebfd      :", split.substr(0, split.size() - 1));
        }
        if (pairs.values.empty()) log::info("eigs        : no eigenvalue in the window [", cfg.eigs.request.window_min, ", ",
                                            cfg.eigs.request.window_max, "] t");
    }

    /// Lanczos on (H - sigma)^-1 with one sparse LU; a singular shift said so with its count.
    void solve_shift_invert(const numerics::EigenRequest& request)
    {
        sparse_direct::ShiftInvertOptions o;
        o.seed = cfg.kpm.vector_seed;
        // The Lanczos runs see (H - sigma)^-1: their residuals are in units of 1/t.
        auto last = std::make_shared<double>(wall_seconds());
        o.progress = [this, last](const numerics::ThickRestartProgress& p) {
            if (wall_seconds() - *last < cfg.outputs.progress_interval_s) return;
            *last = wall_seconds();
            log::info("  shift-invert Lanczos: ", p.converged, "/", p.wanted, " converged, ", p.matvecs,
                      " solves, residual of (H - sigma)^-1 ", fmt("%.2e", p.next_residual), " 1/t");
        };
        if (dist.distributed()) {  // one factorization across the ranks (the analysis is every rank's)
            sparse_direct::DistributedLU dlu(*lu, MPI_COMM_WORLD);
            const sparse_direct::ShiftInvertSolver solver = sparse_direct::solver_of(dlu);
            pairs = sparse_direct::shift_invert_eigenpairs(*op, solver, request, o, si);
        } else {
            pairs = sparse_direct::shift_invert_eigenpairs(*op, *lu, request, o, si);
        }
        log::info("shift-invert: H - sigma factored in ", fmt("%.3f", si.factor_seconds), " s (", lu->factor_nonzeros(),
                  " entries in L + U), ", si.solves, " solves, ", si.refinement_rounds,
                  " subspace refinement round(s), worst backward error ", fmt("%.1e", si.worst_backward_error));
        if (si.factored_shift != request.shift)
            log::warning("--shift ", request.shift, " is an eigenvalue of H to rounding: H - sigma is singular (",
                         si.tiny_pivots, " tiny pivot(s) replaced, refinement cannot recover the solve); factored at ",
                         fmt("%.10g", si.factored_shift), " instead, the pairs nearest ", request.shift, " reported");
        else if (si.tiny_pivots > 0)
            log::info("shift-invert: ", si.tiny_pivots, " tiny pivot(s) replaced by static pivoting; refinement "
                      "recovered the solves");
        lu.reset();
    }

    /// A progress line every --progress-interval seconds: pairs converged, matvecs, and the
    /// time until the next pair converges, extrapolated from its residual's decay.
    std::function<void(const numerics::ThickRestartProgress&)> progress_printer(int count) const
    {
        struct State {
            double start = wall_seconds(), last = start, prev_residual = 0.0, prev_time = start;
        };
        auto state = std::make_shared<State>();
        return [this, count, state](const numerics::ThickRestartProgress& p) {
            const double now = wall_seconds();
            std::string eta;
            if (p.next_residual > 0.0 && state->prev_residual > p.next_residual && now > state->prev_time) {
                const double rate = std::log(state->prev_residual / p.next_residual) / (now - state->prev_time);
                eta = ", next pair in ~" + fmt("%.1f", std::log(p.next_residual / tolerance) / rate) + " s";
            }
            state->prev_residual = p.next_residual;
            state->prev_time = now;
            if (now - state->last < cfg.outputs.progress_interval_s) return;
            state->last = now;
            const std::string where =
                p.search == 0 ? detail::concat(p.converged, "/", count, " converged")
                              : detail::concat(p.locked, " locked, search ", p.search + 1,
                                               " for the missed vectors of degenerate levels");
            log::info("  eigs ", where, ", ", p.matvecs, " matvecs, elapsed ", fmt("%.1f", now - state->start),
                      " s, residual ", fmt("%.2e", p.next_residual), " t of ", fmt("%.2e", tolerance), " t", eta);
        };
    }

    /// A progress line per filter pass (at most every --progress-interval seconds): pairs
    /// locked, certain Ritz values in the window, the KPM estimate, and the time until the
    /// worst certain pair converges, extrapolated from its residual's decay per pass.
    std::function<void(const numerics::ChebFdProgress&)> chebfd_progress_printer() const
    {
        struct State {
            double start = wall_seconds(), last = start, prev_time = start, prev_residual = 0.0;
        };
        auto state = std::make_shared<State>();
        return [this, state](const numerics::ChebFdProgress& p) {
            const double now = wall_seconds();
            if (p.iteration == 0 && p.filter_columns == 0) {
                log::info("  eigs filter degree ", p.filter_degree, ", ", fmt("%.1f", p.expected), " eigenvalues expected "
                          "in the window (KPM), search space ", p.search_size, ", ", p.matvecs, " matvecs so far");
                state->prev_time = now;
                return;
            }
            // Where the time went so far: the SpMMV share and the filter sweeps' rate.
            const std::string split =
                ", SpMMV " + fmt("%.1f", 100.0 * p.seconds_spmmv / std::max(p.seconds, 1e-9)) + " % of " +
                fmt("%.1f", p.seconds) + " s, filter " +
                fmt("%.2f", p.seconds_filter_spmmv > 0.0 ? p.filter_flops / p.seconds_filter_spmmv * 1e-9 : 0.0) +
                " Gflop/s";
            if (p.filter_columns > 0) {  // inside a pass: no ETA bookkeeping
                if (now - state->last < cfg.outputs.progress_interval_s) return;
                state->last = now;
                log::info("  eigs pass ", p.iteration + 1, " filter: ", p.filter_columns_done, " of ", p.filter_columns,
                          " columns, ", p.locked, " converged, ", p.matvecs, " matvecs", split);
                return;
            }
            std::string eta;
            if (p.worst_residual > tolerance && state->prev_residual > p.worst_residual) {
                const double passes = std::log(p.worst_residual / tolerance) / std::log(state->prev_residual / p.worst_residual);
                eta = ", done in ~" + fmt("%.1f", (std::ceil(passes) + 1.0) * (now - state->prev_time)) + " s";
            } else if (p.worst_residual == 0.0 && p.iteration >= 2) {
                eta = ", checking for missed vectors (~" + fmt("%.1f", now - state->prev_time) + " s a pass)";
            }
            state->prev_residual = p.worst_residual;
            state->prev_time = now;
            if (now - state->last < cfg.outputs.progress_interval_s) return;
            state->last = now;
            log::info("  eigs pass ", p.iteration, ": ", p.locked, " converged of ", p.in_window, " in the window (",
                      fmt("%.1f", p.expected), " expected), search space ", p.search_size, ", ", p.matvecs,
                      " matvecs, elapsed ", fmt("%.1f", now - state->start), " s, residual ", fmt("%.2e", p.worst_residual),
                      " t of ", fmt("%.2e", tolerance), " t", eta, split);
        };
    }

    void write_result()
    {
        const AttributeList layout = dist.provenance(cfg);  // collective
        dist.agree([&] {
            if (!dist.root()) return;
            const auto& r = cfg.eigs.request;
            const std::uint64_t k = pairs.values.size();
            RunResult out(cfg, model->attributes());
            out.write_attributes("/eigs", {{"method", to_string(method)},
                                           {"request", to_string(r.kind)},
                                           {"window_min", r.window_min},
                                           {"window_max", r.window_max},
                                           {"shift", r.shift},
                                           {"num_requested", std::int64_t(r.kind == Kind::Window ? 0 : r.count)},
                                           {"num_found", std::int64_t(k)},
                                           {"tolerance", relative_tolerance},
                                           {"tolerance_absolute", tolerance},
                                           {"energy_scale", energy_scale},
                                           {"num_matvecs", std::int64_t(pairs.matvecs)},
                                           {"iterations", std::int64_t(pairs.restarts)},
                                           {"filter_degree", std::int64_t(chebfd.filter_degree)},
                                           {"num_rows", std::int64_t(n)}});
            if (method == EigsMethod::ShiftInvert)
                out.write_attributes("/eigs", {{"tiny_pivots", std::int64_t(si.tiny_pivots)},
                                               {"factored_shift", si.factored_shift},
                                               {"num_solves", std::int64_t(si.solves)}});
            out.write_doubles("/eigs/values", {"t", "Eigenvalues, ascending."}, pairs.values, {k});
            out.write_doubles("/eigs/residuals", {"t", "Residual norm ||H v - lambda v|| of each eigenpair."}, pairs.residuals, {k});
            const bool layers = model->kind().eigenvector_parts == hamiltonians::EigenvectorParts::Layers;
            if (parts > 0)
                out.write_doubles(layers ? "/eigs/layer_weight" : "/eigs/sublattice_weight",
                                  {"1", layers ? "Weight of each eigenvector per z layer." : "Weight of each eigenvector on sublattices A and B."}, weights,
                                  {k, static_cast<std::uint64_t>(parts)});
            if (cfg.eigs.save_vectors)
                out.write_complex("/eigs/vectors", {"1", "Normalised eigenvectors in canonical row order."}, all_vectors.data(), all_vectors.size(), {k, static_cast<std::uint64_t>(n)});
            AttributeList prov = {{"operator", op->name()}};
            prov.insert(prov.end(), layout.begin(), layout.end());
            for (const auto& [phase, seconds] : chebfd.phases.phases())  // inside seconds_eigs
                prov.push_back({"seconds_chebfd_" + phase, seconds});
            out.commit(*this, "cpu", prov, &output_guard);
        });
    }

    void report() const
    {
        const std::size_t shown = std::min<std::size_t>(pairs.values.size(), 12);
        for (std::size_t i = 0; i < shown; ++i) {
            std::string w;  // none for a model without parts (a file model)
            if (parts > 0 && model->kind().eigenvector_parts == hamiltonians::EigenvectorParts::Layers)
                w = ", " + fmt("%.3f", weights[i * parts] + (parts > 1 ? weights[i * parts + parts - 1] : 0.0)) +
                    " on the surfaces";  // top and bottom layers
            else if (parts > 0)
                w = ", " + fmt("%.3f", weights[i * parts]) + " on sublattice A";
            log::info("  E = ", fmt("%+.10f", pairs.values[i]), " t, residual ", fmt("%.2e", pairs.residuals[i]), " t", w);
        }
        if (pairs.values.size() > shown) log::info("  ... ", pairs.values.size() - shown, " more in the result file");
        log::info("time        :", phase_times(timers, wall_seconds() - t_start));
        log::info("memory      : ", format_bytes(estimate), " estimated (operator and saved vectors ", format_bytes(held),
                  ", ", to_string(method), " workspace ", format_bytes(estimate - held), ")");
        std::printf("result written to %s\n", cfg.outputs.result_file.c_str());
    }
};

}  // namespace

void run_eigs(const RunConfig& cfg, Distribution& dist)
{
    with_flag_names([&] { EigsRun(cfg, dist).run(); });
}

}  // namespace topokpm::app
