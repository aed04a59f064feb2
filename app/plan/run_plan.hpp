#pragma once
/// @file run_plan.hpp
/// `kpm-dos --plan` and `--plan-json`: the per-rank plan of a run (rows, nonzeros, memory,
/// halo, predicted time from the KPM performance model of runtime/hetero/plan.hpp), for
/// the run the options ask for (DOS, LDOS exact or probing, A(k, E)), without allocating;
/// with --green also the sparse LU phase and with --conductivity the two-index phase's memory,
/// priced by the run's own code (PhasePricing).
/// The plan is computed once (plan_run) and printed as a table or as one JSON object.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "app/cli/run_config.hpp"
#include "hamiltonians/model.hpp"
#include "runtime/base/system.hpp"
#include "runtime/hetero/plan.hpp"

namespace topokpm::app {

/// One run's plan: the runtime/hetero plan of the columns, block width, trace moments and
/// operator the run resolves (app/cli/resolved_run.hpp), and what a user sizes a job by.
struct RunPlan {
    hetero::Plan plan;               ///< per rank; plan.input.moments: the sweeps' moments (even)
    std::string quantity;            ///< dos | ldos | spectral
    std::string ldos_method;         ///< exact | probing; empty unless quantity is ldos
    std::string matrix;              ///< the operator kind the run builds (auto resolved)
    std::string precision;           ///< double | single
    int moments = 0;                 ///< M asked for (--moments)
    std::int64_t columns = 0;        ///< start vectors traced (R, rows, colours x draws, plane waves)
    double checkpoint_bytes = 0;     ///< largest checkpoint file (app/checkpoint: checkpoint_file_bytes)
    bool bandwidth_measured = false; ///< --plan-bandwidth 0: this machine's STREAM triad
    bool lattice_halo = false;       ///< the model has a halo model (plan.input.halo): 2-D layouts priced
    MemoryLimit limit;               ///< per rank: --memory-limit, else this machine's
    /// --green: the sparse LU phase after the moments (GreenCost; every rank factors its share
    /// of the energies and holds one set of factors, added to every rank's memory).
    int green_energies = 0;          ///< on the busiest rank
    double green_seconds_per_energy = 0;
    double green_seconds = 0;        ///< fixed + energies x per energy
    double green_memory_bytes = 0;
    double predicted_seconds = 0;    ///< the moments' (plan.total_seconds) + green_seconds
    /// --conductivity: the largest rank's bytes of the two-index phase (app/run/conductivity_phase.hpp,
    /// conductivity_bytes on its rows and halo), added to every rank's memory (a GPU rank's:
    /// device memory, where its vectors are kept), and its time: per block 2 (M - 1) sweeps of
    /// H and M + 1 velocity products at the plan's time per sweep, plus 8 M^2 N W flops of
    /// ZGEMM (the busiest rank's rows) at the rate of one ZGEMM of the trace's shape timed on
    /// this machine, or on a GPU (--ranks 1 --gpus 1) at the rate its device traffic allows at
    /// --plan-gpu-bandwidth (each batch of 32 reads the M kept and the 32 left columns once).
    double conductivity_memory_bytes = 0;
    double conductivity_seconds = 0;
    double zgemm_gflops = 0;            ///< measured here, or the GPU's bound, for the estimate
    bool zgemm_on_gpu = false;          ///< zgemm_gflops is the GPU's bound
};

/// The --green phase on one rank, as the run's own code prices it (app/run/green_cost.hpp:
/// its sparse LU analysis, calls of one and of four energies timed, its energy grid).
struct GreenCost {
    int energies = 0;                 ///< of the run's grid, all ranks together
    double seconds_fixed = 0;         ///< a call's setup
    double seconds_per_energy = 0;    ///< one factorization and the rows' solves
    double memory_bytes = 0;          ///< factors, solves and the matrix copy
};
/// The phases after the moments, priced by the run's own code (app/run), which the plan
/// cannot include: the caller passes them in (app/run/run_main.cpp).
struct PhasePricing {
    /// --green: app/run/green_cost.hpp's price_green_phase (one analysis and five energies:
    /// the only part of a plan that computes).
    std::function<GreenCost(const RunConfig&, const hamiltonians::Model&, const std::vector<global_index>& rows)> green;
    /// --conductivity: app/run/conductivity_phase.hpp's conductivity_bytes on a rank's rows
    /// and halo rows at block width `width`.
    std::function<double(const RunConfig&, const hamiltonians::Model&, global_index rows, global_index halo_rows,
                         int width)>
        conductivity_bytes;
};

/// The plan of `cfg` on cfg.runtime.plan.ranks ranks; InputError as the run would give.
/// With --green the phase is priced by pricing.green, its energies dealt over the ranks;
/// with --conductivity every rank's memory by pricing.conductivity_bytes.
RunPlan plan_run(const RunConfig& cfg, const PhasePricing& pricing = {});

/// The plan as one JSON object on one line (its keys: docs/cluster.md, section 1).
std::string plan_json(const RunPlan& plan);

/// --plan: prints the table (--plan-json: the JSON object, to stdout for `-`, else to that
/// file, IoError naming it when it cannot be written); throws ResourceError ("needs X GiB
/// per rank, ...") when a rank would not fit --memory-limit (or this machine's memory).
void run_plan(const RunConfig& cfg, const PhasePricing& pricing = {});

}  // namespace topokpm::app
