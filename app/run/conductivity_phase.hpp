#pragma once
/// @file conductivity_phase.hpp
/// kpm-dos --conductivity ab (models.md §9): the velocity operators of the model (SELL-8-1
/// from hamiltonians::VelocityRows), the two-index moments over the run's start vectors (R random
/// vectors of --vector-seed, or all N with --trace exact; numerics/kpm/two_index.hpp) at
/// block width W, sigma_ab(mu, --temperature) on the run's Chebyshev grid
/// (analysis/conductivity.hpp) and the /conductivity group of the result (docs/format.md).
/// One rank, one realization (the capability table and the options refuse the rest). Not
/// checkpointed: a signal (SignalCatcher) stops it after the current sweep with
/// RunInterrupted (exit 75), no result written; the run is then repeated from the start.

#include <array>
#include <complex>
#include <cstdint>
#include <vector>

#include "analysis/reconstruct.hpp"
#include "app/cli/run_config.hpp"
#include "app/run/run_result.hpp"
#include "hamiltonians/velocity.hpp"
#include "numerics/kpm/kpm.hpp"

namespace topokpm::app {

/// Bytes the phase holds at block width `width`: numerics::two_index_bytes and the two
/// velocity matrices (SELL-8-1, priced by the cost model with H's nonzeros). Validates the
/// component for the model first (InputError naming --conductivity).
double conductivity_bytes(const RunConfig& cfg, const hamiltonians::Model& model, int width);

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
};

/// Runs the phase on `h` (the run's operator, one rank) with the run's scaling and bounds.
ConductivityOutcome compute_conductivity(const RunConfig& cfg, const hamiltonians::Model& model, const Operator& h,
                                         const numerics::KpmScaling& scaling, const SpectralBounds& bounds, int width);

/// /conductivity/energy [K], /conductivity/sigma [K] (and sigma_stderr [K] with R >= 2
/// random vectors), /conductivity/moments [M, M] and the
/// group's attributes (component, temperature, kernel, unit, area or volume, ...).
void write_conductivity(RunResult& out, const RunConfig& cfg, const ConductivityOutcome& c);

}  // namespace topokpm::app
