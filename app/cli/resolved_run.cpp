#include "app/cli/resolved_run.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "analysis/reconstruct.hpp"
#include "app/cli/operator_choice.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::app {

TracedColumns traced_columns(const RunConfig& cfg, const hamiltonians::Model& model)
{
    const global_index n = model.num_rows();
    const bool exact = cfg.kpm.trace == TraceKind::Exact;
    TOPOKPM_USER_REQUIRE(!exact || n <= 2'000'000, "--trace exact with N = ", n,
                         " rows needs N sweeps blocks; allowed for N <= 2000000 (use --trace stochastic)");
    TracedColumns t;
    t.num_columns = exact ? n : cfg.kpm.num_vectors;
    t.num_slots = exact ? 1 : cfg.kpm.num_vectors;
    t.trace_moments = cfg.kpm.num_moments;
    switch (quantity(cfg)) {
    case Quantity::Ldos:
        t.selection = resolve_ldos_selection(cfg.kpm.ldos, model);
        t.num_columns = t.num_slots = static_cast<std::int64_t>(t.selection->rows.size());
        if (cfg.kpm.ldos_method == LdosMethod::Probing) {
            // A field's Peierls phases change the couplings' values, not which sites they join:
            // the lattice to colour is the field-free model's.
            std::unique_ptr<hamiltonians::Model> field_free;
            if (!model.params().flux.zero()) {
                hamiltonians::ModelParams geometry = model.params();
                geometry.flux = {};
                field_free = hamiltonians::make_model(geometry);
            }
            const hamiltonians::Model& without_field = field_free ? *field_free : model;
            TOPOKPM_USER_REQUIRE(without_field.offers_block_stencil(), "--ldos-method probing: model ",
                                 model.params().name, " has no lattice to colour; use --ldos-method exact");
            const BlockStencil lattice_of_rows = without_field.block_stencil();
            t.map_filter = cfg.kpm.ldos_map_energy.has_value() && cfg.kpm.kernel != analysis::DampingKernel::None;
            std::vector<global_index> distinct = t.selection->rows;
            std::sort(distinct.begin(), distinct.end());
            distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
            if (t.map_filter)
                t.map_rank_estimate = numerics::probing_filter_rank_estimate(
                    analysis::damping_factors(cfg.kpm.kernel, cfg.kpm.num_moments, cfg.kpm.lorentz_lambda),
                    static_cast<global_index>(distinct.size()));
            int distance = cfg.kpm.probing_distance;
            if (cfg.kpm.probing_distance_auto) {
                // The Nystrom map is exact once the vectors outnumber twice the filter's rank
                // on the rows; its estimate at an average LDOS sets the colours. The probed
                // moments alone (no map) keep the survey distance.
                distance = kSurveyProbingDistance;
                if (t.map_filter) {
                    const double rank = std::max(t.map_rank_estimate, kMinMapRank);
                    const auto colours = static_cast<global_index>(std::ceil(2.0 * rank / cfg.kpm.probing_draws));
                    distance = numerics::smallest_probing_distance(lattice_of_rows, distinct, colours);
                }
            }
            t.probing = numerics::colour_rows(lattice_of_rows, t.selection->rows, distance);
            t.num_columns = static_cast<global_index>(t.probing->num_colours) * cfg.kpm.probing_draws;
            t.trace_moments = numerics::probing_trace_moments(cfg.kpm.num_moments);
            if (t.map_filter)
                t.num_slots += numerics::probing_filter_slots(t.num_slots, t.num_columns, cfg.kpm.num_moments);
        }
        break;
    case Quantity::Spectral:
        t.lattice = plane_wave_lattice(model);
        t.momenta = resolve_momenta(cfg.kpm.k_points, cfg.kpm.k_path, model);
        t.num_slots = static_cast<std::int64_t>(t.momenta->momenta.size());
        t.num_columns = t.num_slots * t.lattice.states_per_cell;
        break;
    case Quantity::Dos: break;
    }
    return t;
}

int effective_block_width(const RunConfig& cfg, global_index num_columns)
{
    const bool stochastic_dos = cfg.kpm.trace == TraceKind::Stochastic && quantity(cfg) == Quantity::Dos;
    const int asked = stochastic_dos && cfg.kpm.block_width > 0 ? cfg.kpm.block_width : cfg.kpm.num_vectors;
    return static_cast<int>(std::min<global_index>(asked, num_columns));
}

RankLayout rank_layout(const RunConfig& cfg, const hamiltonians::Model& model, int ranks)
{
    RankLayout layout;
    std::string mode = cfg.runtime.decomposition;
    if (cfg.program == Program::Eigs) {
        TOPOKPM_USER_REQUIRE(mode == "1d" || mode == "auto", "{decomposition} ", mode,
                             ": kpm-eigs splits the rows in 1-D only");
        mode = "1d";
    }
    const hamiltonians::ModelParams& p = model.params();
    const bool weighted = !cfg.runtime.weights.empty() ||
                          (cfg.runtime.plan.enabled && cfg.runtime.plan.gpus > 0 && mode == "auto");
    if (mode != "1d") {
        const std::optional<hetero::LatticeHalo> halo = lattice_halo(model);
        TOPOKPM_USER_REQUIRE(halo || mode == "auto", "{decomposition} ", mode, ": model ", p.name,
                             model.kind().max_extents == 0
                                 ? std::string(" has no lattice to tile in (x, y)")
                                 : detail::concat(" has no halo model for (x, y) tiles: ", model.orbitals_per_site(),
                                                  " orbitals per cell, a block stencil takes at most 8"),
                             "; its rows are split in 1-D (allowed: 1d, auto)");
        if (halo) layout.grid = hetero::choose_decomposition(mode, ranks, weighted, *halo);
    }
    const global_index site = model.orbitals_per_site();
    layout.unit = cfg.storage.matrix == MatrixKind::Free ? site * p.ny * p.nz : site;
    return layout;
}

TracedColumns resolve_run(RunConfig& cfg, const hamiltonians::Model& model)
{
    TracedColumns t = traced_columns(cfg, model);
    if (t.probing) cfg.kpm.probing_distance = t.probing->distance;  // --probing-distance auto, resolved
    const int width = effective_block_width(cfg, t.num_columns);
    cfg.kpm.sweep_width = width;
    OperatorConfig& s = cfg.storage;
    if (s.auto_sell_c) s.sell_chunk_height = default_sell_chunk_height(width, s.device);
    if (s.auto_matrix) {
        const MatrixChoice c = fastest_matrix(model, width, s.precision, s.device, s.sell_options_given);
        s.matrix = c.kind;
        s.matrix_auto = c.why;
    }
    return t;
}

}  // namespace topokpm::app
