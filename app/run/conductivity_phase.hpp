#pragma once
/// @file conductivity_phase.hpp
/// kpm-dos --conductivity ab (models.md §9): the velocity operators of the model (SELL-8-1
/// from hamiltonians::VelocityRows), the two-index moments over the run's start vectors (R random
/// vectors of --vector-seed, or all N with --trace exact; numerics/kpm/two_index.hpp) at
/// block width W, sigma_ab(mu, --temperature) on the run's Chebyshev grid
/// (analysis/conductivity.hpp) and the /conductivity group of the result (docs/format.md).
/// CPU ranks, or one GPU (--device cuda without mpirun: H and the velocities CUDA operators on
/// it, the two-index trace's vectors kept there, numerics/kpm/two_index_store.hpp), one
/// realization (the capability table and the options refuse the rest). Under
/// mpirun (1-D or 2-D decomposition) the velocities are distributed like H (Distribution::
/// wrap of the same split) and each rank's partial sums are summed once at the end: the
/// result equals the one-rank run's to rounding.
/// Checkpointed like the DOS moments (ConductivityCheckpoints): a signal stops it at the next
/// resumable point of the two-index trace (within one sweep of a right pass or one batch of
/// kLeftBatch left vectors; under mpirun the ranks agree on it at every such point) with a
/// checkpoint and RunInterrupted (exit 75); --restart then takes the DOS moments and the
/// two-index state from the file and ends bit-identical to an uninterrupted run (same
/// --threads, and under mpirun the same ranks and layout: app/checkpoint/checkpoint.hpp).

#include <array>
#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/reconstruct.hpp"
#include "app/checkpoint/checkpoint.hpp"
#include "app/cli/run_config.hpp"
#include "app/mpi/distribution.hpp"
#include "app/run/run_result.hpp"
#include "hamiltonians/velocity.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/kpm/two_index.hpp"
#include "runtime/base/files.hpp"

namespace topokpm::app {

/// Bytes one rank holds in the phase at block width `width`, its part being `rows` rows that
/// receive `halo_rows` rows per sweep (serial: N and 0; Distribution::halo_rows):
/// numerics::two_index_bytes on those rows, the two velocity matrices (SELL on the run's
/// device, priced by the cost model with the rank's share of H's nonzeros) with their halo
/// buffers, and the copy of the two-index state a checkpoint writes. With --device cuda the
/// run checks its total (this included) against the device's free memory and the host's.
/// Validates the component for the model first (InputError naming --conductivity).
double conductivity_bytes(const RunConfig& cfg, const hamiltonians::Model& model, global_index rows,
                          global_index halo_rows, int width);

struct ConductivityOutcome {
    std::array<hamiltonians::Axis, 2> axes{};
    std::vector<std::complex<double>> gamma;  ///< [M x M]
    analysis::Spectrum sigma;                 ///< energy, rho = sigma in e^2/h
    std::vector<double> sigma_stderr;         ///< [K], from the vectors' sigma (stochastic trace, R >= 2); else empty
    hamiltonians::ConductivityMeasure measure;
    int width = 1;
    std::int64_t sweeps = 0;  ///< sweeps of H (block columns of width W)
    double seconds = 0.0;     ///< the moments
    double gflops = 0.0;      ///< of the H sweeps and velocity products in that time
    int checkpoints_written = 0;
    std::optional<files::FileId> checkpoint_id;  ///< the last checkpoint the phase wrote (removed once the result is)
};

/// When and where the phase checkpoints, as the DOS moments do: on SIGTERM/SIGINT/SIGUSR1 and
/// before the deadline (checkpoint, then RunInterrupted), every `every_s` seconds (a failed
/// periodic write is warned once and the run goes on). The file is `header` (the run's, its
/// DOS moments finished: trace.blocks_done = all blocks) with the two-index state.
struct ConductivityCheckpoints {
    CheckpointData header;
    std::string path;
    std::string resume_command;            ///< printed after a stop
    bool previous_intact = false;          ///< a checkpoint of this run exists (written before, or resumed)
    double every_s = 0.0;                  ///< 0 = only on a signal or before the deadline
    double deadline = 0.0;                 ///< wall_seconds() by which the run must have stopped; 0 = none
    std::optional<numerics::TwoIndexState> resume;  ///< from --restart (moved into the trace)
    CheckpointRanks ranks;                 ///< this rank's part of the file (its sum is set from H)
};

/// Runs the phase on `h` (the run's operator: Distribution::wrap's, on this rank's rows of
/// `dist`'s last split) with the run's scaling and bounds. Collective under mpirun; every
/// rank gets the whole outcome.
ConductivityOutcome compute_conductivity(const RunConfig& cfg, const hamiltonians::Model& model,
                                         const Distribution& dist, const Operator& h,
                                         const numerics::KpmScaling& scaling, const SpectralBounds& bounds, int width,
                                         ConductivityCheckpoints checkpoints);

/// /conductivity/energy [K], /conductivity/sigma [K] (and sigma_stderr [K] with R >= 2
/// random vectors), /conductivity/moments [M, M] and the
/// group's attributes (component, temperature, kernel, unit, area or volume, ...).
void write_conductivity(RunResult& out, const RunConfig& cfg, const ConductivityOutcome& c);

}  // namespace topokpm::app
