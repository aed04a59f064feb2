#include "app/plan/run_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include "app/cli/operator_choice.hpp"
#include "app/cli/resolved_run.hpp"
#include "hamiltonians/model.hpp"
#include "runtime/base/log.hpp"
#include "runtime/base/system.hpp"
#include "runtime/hetero/plan.hpp"

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

}  // namespace

void run_plan(const RunConfig& given)
{
    // The model validates every parameter; it allocates nothing proportional to N.
    const std::unique_ptr<hamiltonians::Model> model = hamiltonians::make_model(given.model);
    // The columns, block width and operator the run would resolve (app/cli/resolved_run.hpp).
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
    in.moments = cfg.kpm.num_moments + cfg.kpm.num_moments % 2;
    in.ranks = cfg.runtime.plan.ranks;
    in.gpus = cfg.runtime.plan.gpus;
    in.gpu_memory_gbs = cfg.runtime.plan.gpu_bandwidth_gbs;
    in.network_gbs = cfg.runtime.plan.network_gbs;
    if (!cfg.runtime.weights.empty()) in.weights = hetero::parse_weights(cfg.runtime.weights, cfg.runtime.plan.ranks);
    double bandwidth = cfg.runtime.plan.bandwidth_gbs;
    if (bandwidth <= 0.0) {
        bandwidth = measure_triad_bandwidth_gbs(std::size_t(1) << 24, 5);
        std::printf("memory bandwidth per CPU rank: %.1f GB/s, measured on this machine (STREAM triad); "
                    "give --plan-bandwidth for the target machine\n", bandwidth);
    }
    in.memory_gbs = {bandwidth};
    // --decomposition and the 1-D unit: the layout a run under mpirun takes (rank_layout).
    const std::optional<hetero::LatticeHalo> halo = lattice_halo(*model);
    if (halo) in.halo = *halo;
    const RankLayout layout = rank_layout(cfg, *model, in.ranks);
    in.grid = layout.grid;
    in.split_unit = static_cast<std::uint64_t>(layout.unit);

    const hetero::Plan plan = hetero::make_plan(in);
    std::printf("%s", hetero::format_plan(plan).c_str());
    if (halo && in.ranks > 1 && std::uint64_t(in.ranks) <= in.nx) {
        // The two layouts side by side: the worst rank's halo of x-slabs and of the grid.
        std::uint64_t slabs = 0, tiles = 0;
        const hetero::ProcessGrid x_slabs = hetero::make_grid(in.nx, in.ny, in.ranks, 1);
        for (int q = 0; q < in.ranks; ++q) slabs = std::max(slabs, hetero::tile_halo(in.halo, x_slabs, q).rows);
        for (const hetero::RankPlan& r : plan.ranks) tiles = std::max(tiles, r.halo_rows);
        if (!in.grid.x_cuts.empty())
            std::printf("halo per rank (worst): %llu rows with the %dx%d grid, %llu rows with 1-D x-slabs of whole planes\n",
                        static_cast<unsigned long long>(tiles), in.grid.px, in.grid.py,
                        static_cast<unsigned long long>(slabs));
    }
    // The target's limit when given (--memory-limit), else this machine's (memory_limit()).
    const MemoryLimit per_rank = memory_limit(cfg.runtime.memory_limit_gib, 1);
    if (cfg.runtime.memory_limit_gib <= 0)
        log::info("memory per rank: ", format_bytes(per_rank.bytes), " (this machine; give --memory-limit for the target)");
    hetero::require_fits(plan, per_rank);
    std::printf("plan fits: largest rank needs %s of %s\n", format_bytes(plan.max_memory_bytes).c_str(),
                format_bytes(per_rank.bytes).c_str());
}

}  // namespace topokpm::app
