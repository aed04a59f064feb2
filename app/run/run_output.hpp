#pragma once
/// @file run_output.hpp
/// Turns the moments of a finished run into the result file (models.md §5 plus the
/// additions documented in docs/physics.md): reconstruction with the configured kernel and
/// grid, error bars from independent samples, and the groups of each quantity.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/reconstruct.hpp"
#include "analysis/result_file.hpp"
#include "app/cli/run_config.hpp"
#include "app/cli/selection.hpp"
#include "app/run/run_result.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/sparse_direct/sparse_lu.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::app {

class Distribution;

/// Reconstructs rho(E) of moment vectors on the run's energy grid.
class Reconstructor {
public:
    Reconstructor(const RunConfig& config, const numerics::KpmScaling& scaling);
    analysis::Spectrum operator()(const std::vector<double>& moments) const;
    /// The energies of the run's grid (those operator() returns), e.g. for --green.
    std::vector<double> energies() const;
    /// rho at one energy (Clenshaw).
    double at(const std::vector<double>& moments, double energy) const;
    /// Integral of a spectrum of this grid (Gauss-Chebyshev, or trapezoid on a user grid).
    double integral(const analysis::Spectrum& spectrum) const;

private:
    const RunConfig* config_;
    numerics::KpmScaling scaling_;
    std::vector<double> g_;
};

/// What the moments phase produced, per realization: slot moments [slots, M].
struct MomentsOutcome {
    std::vector<std::vector<double>> slot_moments;
    std::vector<std::uint64_t> disorder_seeds, vector_seeds;
};

/// The averaged DOS moments and the DOS written to /kpm and /dos (with error bars).
struct DosSummary {
    std::vector<double> moments;
    analysis::Spectrum dos;
    double integral = 0.0;
    bool has_stderr = false;
};

/// Writes /kpm/moments (+ per_vector, stderr), /dos/*, /realizations/* for a DOS run.
DosSummary write_dos(RunResult& out, const RunConfig& config, const Reconstructor& rec,
                     const MomentsOutcome& m);

/// The LDOS rows a process reconstructs and writes: the indices i of the selection whose row
/// rows[i] is in `row_runs` (Distribution::row_runs: sorted, disjoint, any number of runs),
/// increasing, and the same as runs of i (its rows of /ldos/rho). Serial: all of them.
struct LdosShare {
    std::vector<std::size_t> slots;
    std::vector<analysis::RowRun> runs;
};
LdosShare ldos_share(const std::vector<global_index>& rows,
                     const std::vector<std::pair<global_index, global_index>>& row_runs);

/// Writes /ldos/* (and /ldos_map/* for a layer with --ldos-map-energy), then /kpm/moments
/// and /dos/* for the mean over the selected rows. Each process reconstructs the rows of its
/// `share` and writes them (ResultWriter::write_rows; collective under mpirun); the map and
/// the mean moments are summed over `dist`'s ranks. Every rank calls it. `map_rows`: the
/// map's value of every selected row (probing's Nystrom map); nullptr: from the moments.
DosSummary write_ldos(RunResult& out, const RunConfig& config, const Reconstructor& rec,
                      const MomentsOutcome& m, const LdosSelection& selection, const LdosShare& share,
                      const Distribution& dist, const std::vector<double>* map_rows = nullptr);

/// Writes /spectral/* (bands if given), then /kpm/moments and /dos/* for the mean over k.
DosSummary write_spectral(RunResult& out, const RunConfig& config, const Reconstructor& rec,
                          const MomentsOutcome& m, const MomentumList& momenta, int states_per_k,
                          const std::vector<double>& bands);

/// One number printed with a printf `format` ("%.3f"), for the summary lines.
std::string fmt(const char* format, double v);

/// The summary's phase times: " build 0.123 s, bounds 0.456 s, ... total 1.234 s".
std::string phase_times(const PhaseTimers& timers, double total_seconds);

/// The sparse LU analysis (ordering, supernodes, factor size) of the model's matrix, for
/// kpm-dos --green and kpm-eigs --method shift-invert. A ti site's 4 orbitals are kept
/// together; graphene's atoms are sites of one row (grouping a cell's two atoms densifies the
/// quotient graph: docs/sparse_direct.md). Throws what SparseLU's analysis throws.
std::unique_ptr<sparse_direct::SparseLU> analyse_sparse_lu(const hamiltonians::Model& model);
/// Peak bytes of analyse_sparse_lu() while it runs (the CSR copy, the graph and the ordering's
/// work): 96 per nonzero of H, measured 88-92 on ti 64x64x16 and 128x128x16 (kpm-eigs
/// shift-invert refused right after the analysis, VmHWM less the process's baseline). The
/// memory checks price it before the analysis starts; its factors' size is known only after.
inline double sparse_lu_analysis_bytes(const hamiltonians::Model& model)
{
    return 96.0 * static_cast<double>(model.estimated_nonzeros());
}

}  // namespace topokpm::app
