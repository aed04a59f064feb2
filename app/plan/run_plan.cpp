#include "app/plan/run_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <vector>

#include "app/checkpoint/checkpoint.hpp"
#include "app/cli/operator_choice.hpp"
#include "app/cli/resolved_run.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/kpm/two_index.hpp"
#include "numerics/kpm/two_index_store.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/log.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::app {
namespace {

/// hetero::PlanInput::x_reach of `model`: the largest x distance, in x-planes of
/// ny nz orbitals rows, from a row to a column it couples to (the shorter way round a
/// periodic x), read off the rows of the cell at x = Nx/2 (translation invariant in x), or
/// of every row for a model without a lattice (N x 1 x 1: its bandwidth; its rows are in
/// memory already). Never more than Nx / 2 (periodic) or Nx - 1 (open).
std::uint64_t x_reach(const hamiltonians::Model& model)
{
    const hamiltonians::ModelParams& p = model.params();
    const global_index plane = global_index(p.ny) * p.nz * model.orbitals_per_site();
    const bool periodic = !p.boundary.empty() && p.boundary[0] == 'p';
    const bool lattice = model.kind().max_extents > 0;
    const global_index first = lattice ? plane * (p.nx / 2) : 0;
    const global_index last = lattice ? first + model.orbitals_per_site() : model.num_rows();
    std::vector<global_index> cols(static_cast<std::size_t>(model.max_row_length()));
    std::vector<complex_type> values(cols.size());
    global_index reach = 0;
    for (global_index r = first; r < last; ++r) {
        const int len = model.row(r, cols.data(), values.data());
        for (int k = 0; k < len; ++k) {
            global_index d = cols[static_cast<std::size_t>(k)] / plane - r / plane;
            d = d < 0 ? -d : d;
            if (periodic) d = std::min<global_index>(d, p.nx - d);
            reach = std::max(reach, d);
        }
    }
    return static_cast<std::uint64_t>(reach);
}

/// A JSON number: %.17g for finite values (the plan never holds others; null if it did).
std::string json_number(double v)
{
    if (!std::isfinite(v)) return "null";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

/// A JSON string of the plan's names (option values and fixed words: printable ASCII);
/// quotes, backslashes and control characters escaped all the same.
std::string json_string(const std::string& s)
{
    std::string out = "\"";
    for (const unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

/// Gflop/s of the two-index trace's product on this machine's threads: one batch of
/// min(m, kLeftBatch) left vectors against m kept ones over k rows, formed by the host store
/// the run uses (numerics/kpm/two_index_store.hpp), the best of 3.
double measure_zgemm_gflops(int m, int k)
{
    const int batch = std::min(m, numerics::kLeftBatch);
    const auto store = numerics::make_two_index_store(-1 /* the host */, k, 1, m, batch);
    std::vector<complex_type> product(static_cast<std::size_t>(batch) * m);
    double best = 1e300;
    for (int rep = 0; rep < 3; ++rep) {
        const double t0 = wall_seconds();
        store->products(batch, 1, product.data());
        best = std::min(best, wall_seconds() - t0);
    }
    return 8.0 * batch * m * static_cast<double>(k) / std::max(best, 1e-9) * 1e-9;
}

}  // namespace

RunPlan plan_run(const RunConfig& given, const PhasePricing& pricing)
{
    // The model validates every parameter; it allocates nothing proportional to N.
    const std::unique_ptr<hamiltonians::Model> model = hamiltonians::make_model(given.model);
    // The columns, block width, trace moments and operator the run would resolve
    // (app/cli/resolved_run.hpp).
    RunConfig cfg = given;
    const TracedColumns traced = resolve_run(cfg, *model);
    const hamiltonians::ModelParams& p = model->params();
    hetero::PlanInput in;
    in.rows = static_cast<std::uint64_t>(model->num_rows());
    in.nnz = static_cast<std::uint64_t>(model->estimated_nonzeros());
    in.block = static_cast<std::uint64_t>(model->orbitals_per_site());
    in.nx = static_cast<std::uint64_t>(p.nx);
    in.ny = static_cast<std::uint64_t>(p.ny);
    in.nz = static_cast<std::uint64_t>(p.nz);
    in.periodic_x = !p.boundary.empty() && p.boundary[0] == 'p';
    in.x_reach = x_reach(*model);
    in.vectors = static_cast<int>(traced.num_columns);
    in.block_width = cfg.kpm.sweep_width;
    // The bytes of the operator the run builds (numerics/spmmv/operator_factory.hpp), as
    // the memory check of a run prices them.
    const numerics::OperatorCostModel cost = operator_cost(operator_spec(cfg), *model);
    in.matrix_bytes_per_nonzero = cost.matrix_bytes_per_nonzero;
    in.matrix_bytes_per_row = cost.matrix_bytes_per_row;
    in.value_bytes = cost.value_bytes;
    // A serial CPU run: the traffic of a pass of two sweeps where the kernel fuses them, and,
    // planned for this machine (the bandwidth measured here, --plan-bandwidth 0), the kernel's
    // rate measured on a sample (probe_kernel), which sets the time. A given bandwidth plans
    // another machine: the traffic model alone (a roofline bound).
    if (cfg.runtime.plan.ranks == 1 && cfg.runtime.plan.gpus == 0) {
        const KernelProbe probe = probe_kernel(operator_spec(cfg), *model, cfg.kpm.sweep_width);
        in.sweeps_per_pass = probe.sweeps_per_pass;
        if (cfg.runtime.plan.bandwidth_gbs <= 0.0) in.measured_rows_per_second = probe.rows_per_second;
    }
    // The moments the sweeps run: M, or for probing the 2M - 2 that reach v_{M-1} (one
    // sweep per moment where an exact row's doubling gives two).
    in.moments = traced.trace_moments + traced.trace_moments % 2;
    in.realizations = cfg.kpm.realizations;
    in.ranks = cfg.runtime.plan.ranks;
    in.gpus = cfg.runtime.plan.gpus;
    in.gpu_memory_gbs = cfg.runtime.plan.gpu_bandwidth_gbs;
    in.network_gbs = cfg.runtime.plan.network_gbs;
    if (!cfg.runtime.weights.empty()) in.weights = hetero::parse_weights(cfg.runtime.weights, cfg.runtime.plan.ranks);
    RunPlan out;
    double bandwidth = cfg.runtime.plan.bandwidth_gbs;
    out.bandwidth_measured = bandwidth <= 0.0;
    if (out.bandwidth_measured) bandwidth = measure_triad_bandwidth_gbs(std::size_t(1) << 24, 5);
    in.memory_gbs = {bandwidth};
    // --decomposition and the 1-D unit: the layout a run under mpirun takes (rank_layout).
    const std::optional<hetero::LatticeHalo> halo = lattice_halo(*model);
    if (halo) in.halo = *halo;
    out.lattice_halo = halo.has_value();
    const RankLayout layout = rank_layout(cfg, *model, in.ranks);
    in.grid = layout.grid;
    in.split_unit = static_cast<std::uint64_t>(layout.unit);

    out.plan = hetero::make_plan(in);
    const Quantity q = quantity(cfg);
    out.quantity = to_string(q);
    if (q == Quantity::Ldos) out.ldos_method = to_string(cfg.kpm.ldos_method);
    out.matrix = to_string(cfg.storage.matrix);
    out.precision = to_string(cfg.storage.precision);
    out.moments = cfg.kpm.num_moments;
    out.columns = traced.num_columns;
    out.checkpoint_bytes = checkpoint_file_bytes({model->num_rows(), traced.num_columns, cfg.kpm.sweep_width,
                                                  traced.trace_moments, traced.num_slots, cfg.kpm.realizations},
                                                 in.ranks);
    // The target's limit when given (--memory-limit), else this machine's (memory_limit()).
    out.limit = memory_limit(cfg.runtime.memory_limit_gib, 1);
    out.predicted_seconds = out.plan.total_seconds;
    if (cfg.kpm.green_eta) {
        // The energies are dealt over the ranks; each rank holds one set of factors.
        TOPOKPM_REQUIRE(static_cast<bool>(pricing.green), "--plan with --green without the green phase's pricing");
        const GreenCost g = pricing.green(cfg, *model, traced.selection->rows);
        const int ranks = cfg.runtime.plan.ranks;
        out.green_energies = (g.energies + ranks - 1) / ranks;
        out.green_seconds_per_energy = g.seconds_per_energy;
        out.green_seconds = g.seconds_fixed + out.green_energies * g.seconds_per_energy;
        out.green_memory_bytes = g.memory_bytes;
        out.predicted_seconds += out.green_seconds;
        out.plan.max_memory_bytes = 0;
        for (hetero::RankPlan& rp : out.plan.ranks) {
            if (rp.gpu) continue;
            rp.memory_bytes += g.memory_bytes;
            out.plan.max_memory_bytes = std::max(out.plan.max_memory_bytes, rp.memory_bytes);
        }
    }
    if (!cfg.kpm.conductivity.empty()) {
        TOPOKPM_REQUIRE(static_cast<bool>(pricing.conductivity_bytes),
                        "--plan with --conductivity without the phase's pricing");
        // The two-index phase after the moments, priced per rank as the run's memory check
        // does (conductivity_bytes: the vectors of the rank's rows, its velocities and their
        // halo), and timed as numerics/kpm/two_index.hpp runs it: per block of W columns
        // 2 (M - 1) sweeps of H and M + 1 velocity products (each about a sweep: the plan's
        // seconds per moment are half a sweep of every block), and one ZGEMM per column of
        // batches of 32 left vectors against the M kept ones over the rank's rows. A GPU rank
        // (one GPU, the capability table refuses GPU ranks under mpirun) keeps its vectors in
        // device memory (numerics/kpm/two_index_store.hpp): its bytes count against the
        // device's, and its ZGEMMs are priced by their device traffic (each batch reads the
        // M kept and 32 left columns once: ceil(M / 32) (M + 32) N 16 bytes per column) at
        // --plan-gpu-bandwidth, a bound from below like the plan's GPU sweeps.
        const double m = cfg.kpm.num_moments;
        std::uint64_t busiest = 0;
        bool gpu = false;
        for (const hetero::RankPlan& rp : out.plan.ranks) {
            busiest = std::max<std::uint64_t>(busiest, rp.range.size());
            gpu = gpu || rp.gpu;
        }
        const double sweeps = 2.0 * (2.0 * (m - 1.0) + (m + 1.0)) * out.plan.seconds_per_moment;
        const double rows_columns = static_cast<double>(busiest) * static_cast<double>(traced.num_columns);
        double gemm = 0.0;
        if (gpu) {
            const double batches = std::ceil(m / numerics::kLeftBatch);
            gemm = batches * (m + numerics::kLeftBatch) * 16.0 * rows_columns / (in.gpu_memory_gbs * 1e9);
            out.zgemm_gflops = gemm > 0.0 ? 8.0 * m * m * rows_columns / gemm * 1e-9 : 0.0;
            out.zgemm_on_gpu = true;
        } else {
            out.zgemm_gflops = measure_zgemm_gflops(std::min(cfg.kpm.num_moments, 512),
                                                    static_cast<int>(std::min<std::uint64_t>(busiest, 1 << 16)));
            gemm = 8.0 * m * m * rows_columns / (out.zgemm_gflops * 1e9);
        }
        out.conductivity_seconds = sweeps + gemm;
        out.predicted_seconds += out.conductivity_seconds;
        out.plan.max_memory_bytes = 0;
        out.plan.max_gpu_memory_bytes = 0;
        for (hetero::RankPlan& rp : out.plan.ranks) {
            const double bytes =
                pricing.conductivity_bytes(cfg, *model, static_cast<global_index>(rp.range.size()),
                                           in.ranks > 1 ? static_cast<global_index>(rp.halo_rows) : 0,
                                           cfg.kpm.sweep_width);
            out.conductivity_memory_bytes = std::max(out.conductivity_memory_bytes, bytes);
            rp.memory_bytes += bytes;
            double& peak = rp.gpu ? out.plan.max_gpu_memory_bytes : out.plan.max_memory_bytes;
            peak = std::max(peak, rp.memory_bytes);
        }
    }
    return out;
}

std::string plan_json(const RunPlan& r)
{
    const hetero::Plan& plan = r.plan;
    const hetero::PlanInput& in = plan.input;
    const int width = in.block_width > 0 ? in.block_width : in.vectors;
    std::string s = "{";
    auto key = [&](const char* name) { s += (s.size() > 1 ? ",\"" : "\"") + std::string(name) + "\":"; };
    auto number = [&](const char* name, double v) { key(name); s += json_number(v); };
    auto text = [&](const char* name, const std::string& v) { key(name); s += json_string(v); };
    text("quantity", r.quantity);
    if (!r.ldos_method.empty()) text("ldos_method", r.ldos_method);
    number("rows", static_cast<double>(in.rows));
    number("nonzeros", static_cast<double>(in.nnz));
    text("operator", r.matrix);
    text("precision", r.precision);
    number("ranks", in.ranks);
    number("gpus", in.gpus);
    number("moments", r.moments);
    number("columns", static_cast<double>(r.columns));
    number("block_width", width);
    number("sweep_moments", in.moments);
    number("sweeps", plan.sweeps);
    number("sweeps_per_pass", in.sweeps_per_pass);
    number("measured_rows_per_second", in.measured_rows_per_second);
    number("memory_bandwidth_gbs", in.memory_gbs.empty() ? 0.0 : in.memory_gbs.front());
    key("memory_bandwidth_measured");
    s += r.bandwidth_measured ? "true" : "false";
    number("network_gbs", in.network_gbs);
    number("seconds_per_moment", plan.seconds_per_moment);
    number("seconds_per_moment_overlap", plan.seconds_per_moment_overlap);
    if (r.green_energies > 0) {
        number("green_energies", r.green_energies);
        number("green_seconds_per_energy", r.green_seconds_per_energy);
        number("green_seconds", r.green_seconds);
        number("green_memory_bytes", r.green_memory_bytes);
    }
    if (r.conductivity_memory_bytes > 0) {
        number("conductivity_memory_bytes", r.conductivity_memory_bytes);
        number("conductivity_seconds", r.conductivity_seconds);
    }
    number("predicted_seconds", r.predicted_seconds);
    number("memory_per_rank_bytes", plan.max_memory_bytes);
    number("gpu_memory_per_rank_bytes", plan.max_gpu_memory_bytes);
    number("memory_limit_bytes", r.limit.bytes);
    number("checkpoint_bytes", r.checkpoint_bytes);
    return s + "}";
}

void run_plan(const RunConfig& cfg, const PhasePricing& pricing)
{
    const RunPlan r = plan_run(cfg, pricing);
    const hetero::Plan& plan = r.plan;
    const hetero::PlanInput& in = plan.input;
    const std::string& json_path = cfg.runtime.plan.json;
    if (!json_path.empty()) {
        hetero::require_fits(plan, r.limit);  // a plan that does not fit is refused either way
        const std::string line = plan_json(r) + "\n";
        if (json_path == "-") {
            std::fputs(line.c_str(), stdout);
            return;
        }
        std::ofstream f(json_path, std::ios::binary | std::ios::trunc);
        f << line;
        f.close();
        if (!f) throw IoError(detail::concat("--plan-json '", json_path, "': cannot write the plan there"));
        return;
    }
    if (r.bandwidth_measured)
        std::printf("memory bandwidth per CPU rank: %.1f GB/s, measured on this machine (STREAM triad); "
                    "give --plan-bandwidth for the target machine\n", in.memory_gbs.front());
    std::printf("%s", hetero::format_plan(plan).c_str());
    if (r.lattice_halo && in.ranks > 1 && std::uint64_t(in.ranks) <= in.nx) {
        // The two layouts side by side: the worst rank's halo of x-slabs and of the grid.
        std::uint64_t slabs = 0, tiles = 0;
        const hetero::ProcessGrid x_slabs = hetero::make_grid(in.nx, in.ny, in.ranks, 1);
        for (int q = 0; q < in.ranks; ++q) slabs = std::max(slabs, hetero::tile_halo(in.halo, x_slabs, q).rows);
        for (const hetero::RankPlan& rp : plan.ranks) tiles = std::max(tiles, rp.halo_rows);
        if (!in.grid.x_cuts.empty())
            std::printf("halo per rank (worst): %llu rows with the %dx%d grid, %llu rows with 1-D x-slabs of whole planes\n",
                        static_cast<unsigned long long>(tiles), in.grid.px, in.grid.py,
                        static_cast<unsigned long long>(slabs));
    }
    std::printf("run: %s%s%s, %lld start vectors in blocks of %d, %.0f sweeps%s, predicted %.3g s in all; "
                "largest checkpoint %s\n",
                r.quantity.c_str(), r.ldos_method.empty() ? "" : " ", r.ldos_method.c_str(),
                static_cast<long long>(r.columns), in.block_width > 0 ? in.block_width : in.vectors, plan.sweeps,
                in.sweeps_per_pass == 2 && in.ranks == 1 && in.gpus == 0 ? " (two per pass over memory)" : "",
                r.predicted_seconds, format_bytes(r.checkpoint_bytes).c_str());
    if (r.green_energies > 0)
        std::printf("green: %d energies per rank x %.3g s (timed here: one sparse LU factorization and the "
                    "rows' solves) = %.3g s after the moments; factors and solves %s per rank\n",
                    r.green_energies, r.green_seconds_per_energy, r.green_seconds,
                    format_bytes(r.green_memory_bytes).c_str());
    if (r.conductivity_memory_bytes > 0)
        std::printf("conductivity: the two-index moments after the DOS need up to %s per rank (vectors of its "
                    "rows, velocities and their halo%s) and about %.3g s (sweeps at the plan's rate, ZGEMM at "
                    "%.3g Gflop/s %s)\n",
                    format_bytes(r.conductivity_memory_bytes).c_str(), r.zgemm_on_gpu ? "; in device memory" : "",
                    r.conductivity_seconds, r.zgemm_gflops,
                    r.zgemm_on_gpu ? "bounded by its device traffic at --plan-gpu-bandwidth" : "timed here");
    if (cfg.runtime.memory_limit_gib <= 0)
        log::info("memory per rank: ", format_bytes(r.limit.bytes), " (this machine; give --memory-limit for the target)");
    hetero::require_fits(plan, r.limit);
    std::printf("plan fits: largest rank needs %s of %s\n", format_bytes(plan.max_memory_bytes).c_str(),
                format_bytes(r.limit.bytes).c_str());
}

}  // namespace topokpm::app
