#pragma once
/// @file resolved_run.hpp
/// The decisions of a run that need the model as well as the options, made once: what it
/// traces (the --ldos rows, the momenta of --k-points/--k-path, the start vectors), the
/// block width W it sweeps with, and the operator chosen for that width (--matrix auto,
/// --sell-C auto). The serial run, every rank under mpirun, kpm-eigs and kpm-dos --plan
/// all resolve the configuration here, so they build, price and plan the same operator at
/// the same width.

#include <cstdint>
#include <optional>

#include "app/cli/run_config.hpp"
#include "app/cli/selection.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/kpm/block_trace.hpp"
#include "runtime/hetero/plan.hpp"

namespace topokpm::app {

/// What a kpm-dos run traces: `num_columns` start vectors in all, giving `num_slots` spectra.
///   stochastic DOS: R random vectors, R slots;  exact DOS: the N unit vectors, 1 slot;
///   LDOS: one unit vector per selected row, one slot each (--ldos-method probing: one
///   random-phase vector per colour and draw, the trace running trace_moments);
///   A(k, E): S plane waves per momentum (S = lattice.states_per_cell), one slot per momentum.
struct TracedColumns {
    std::optional<LdosSelection> selection;  ///< --ldos
    std::optional<MomentumList> momenta;     ///< --k-points / --k-path
    numerics::PlaneWaveLattice lattice;      ///< A(k, E) only
    std::optional<numerics::ProbingColours> probing;  ///< --ldos-method probing
    global_index num_columns = 0;
    std::int64_t num_slots = 0;
    int trace_moments = 0;                   ///< moments the trace runs (probing: to reach v_{M-1}); else M
    /// Probing with --ldos-map-energy and a positive kernel (jackson, lorentz): the trace
    /// also filters its vectors at the map energy (numerics::probing_plan's filter, in
    /// num_slots past the rows'), for the Nystrom map (numerics::probing_nystrom).
    bool map_filter = false;
    /// With map_filter: numerics::probing_filter_rank_estimate of the distinct selected rows.
    double map_rank_estimate = 0.0;
};

/// --probing-distance auto without --ldos-map-energy: the probed moments' distance (their
/// error is the cross terms beyond it; docs/physics.md).
inline constexpr int kSurveyProbingDistance = 6;

/// --probing-distance auto with a map energy: the rank it sizes the vectors for is at least
/// this many states. The estimate is an average; where it is a few states, a finite layer's
/// discrete spectrum and its degeneracies (Kramers pairs, +-k) put more than that near E (ti
/// 12x12x4 at 0.6 t, M = 2048: estimate 3.8, rank above 8: no gap with 8 vectors).
inline constexpr double kMinMapRank = 32;

/// The traced columns of `cfg` on `model` (--probing-distance auto: with a map filter the
/// smallest distance whose colours x draws reach twice the larger of kMinMapRank and
/// numerics::probing_filter_rank_estimate of the distinct selected rows, else
/// kSurveyProbingDistance); InputError for a selection or path the model
/// does not have, and for --trace exact beyond 2 000 000 rows.
TracedColumns traced_columns(const RunConfig& cfg, const hamiltonians::Model& model);

/// The block width W (start vectors per sweep) of a run tracing `num_columns` columns:
/// --block-width (0 = R) for the stochastic DOS, else R (--vectors); at most num_columns.
/// kpm-eigs, whose methods size their own blocks, has W = R, the width its operator is
/// chosen for.
int effective_block_width(const RunConfig& cfg, global_index num_columns);

/// How the rows of `model` are split over `ranks` ranks (--decomposition, docs/scaling.md):
/// the one rule of a run under mpirun (Distribution::split_rows) and of --plan.
///   `grid` set (2-D): the px x py tiles of hetero::choose_decomposition on lattice_halo();
///   `grid` empty (1-D): x-slabs of whole `unit`s of rows by the weights: a site
///   (orbitals_per_site rows), or for --matrix free a whole x-plane (the stencil's slabs).
/// 1d is taken by kpm-eigs (InputError for another --decomposition than 1d or auto), by
/// `auto` on a model without a halo model (lattice_halo(): matrix-market, a _hr.dat of more
/// than 8 orbitals per cell; InputError for 2d or PXxPY there), with --weights, and by
/// --plan `auto` with --gpus (the plan weighs GPU ranks by their bandwidth).
struct RankLayout {
    hetero::ProcessGrid grid;
    global_index unit = 1;
};
RankLayout rank_layout(const RunConfig& cfg, const hamiltonians::Model& model, int ranks);

/// Resolves `cfg` for `model`: cfg.kpm.sweep_width = effective_block_width(),
/// cfg.kpm.probing_distance = the distance the probing colours were made for, and where
/// --matrix or --sell-C is `auto`, the kind and chunk height for that width
/// (fastest_matrix, default_sell_chunk_height). Returns the traced columns.
TracedColumns resolve_run(RunConfig& cfg, const hamiltonians::Model& model);

}  // namespace topokpm::app
