#pragma once
/// @file run_dos.hpp
/// The kpm-dos pipeline: validate -> size -> build operator -> bounds -> moments ->
/// reconstruct -> write. Wiring only; the work is done by the library layers.

#include <memory>
#include <vector>

#include "app/cli/run_config.hpp"
#include "numerics/base/operator.hpp"

namespace topokpm::hamiltonians {
class Model;
}

namespace topokpm::app {

class Distribution;

/// One kpm-dos run as a pipeline of small phases over shared state. run() calls them in
/// order; each needs the ones before it (a test may stop after any of them):
///   validate  the model, the traced quantity, the files and rank layout, a --restart's
///             parameters, this rank's rows (Distribution::split_rows; `--weights auto`
///             probes a sample), the memory (and GPU) estimate of this rank's part and the
///             checkpoint state, agreed collectively; builds no operator and allocates no
///             vectors (InputError, ResourceError, IoError otherwise)
///   build     the operator of the options over this rank's rows (make_operator)
///   bounds    the spectral bounds (given, Gershgorin or Lanczos; the union over the
///             disorder realizations) and the KPM scaling
///   moments   the Chebyshev moments of every slot and realization (checkpoints, signals)
///   conductivity  with --conductivity: the two-index moments and sigma_ab(mu) (one rank)
///   green     with --green: the exact LDOS of the --ldos rows by the sparse LU (models.md §7)
///   bands     for A(k, E) of a clean lattice: the Bloch bands at the momenta
///   result    the result file (models.md §5), written atomically by rank 0 (an LDOS
///             under mpirun by every rank collectively: each its own rows)
///   report    the closing summary lines; removes the checkpoints the run has made spent
class DosRun {
public:
    DosRun(const RunConfig& config, Distribution& distribution);
    ~DosRun();

    void run();

    void validate();
    void build();
    void bounds();
    void moments();
    void conductivity();
    void green();
    void bands();
    void result();
    void report();

    /// What the phases produced so far (nullptr / empty before the phase ran).
    const hamiltonians::Model* model() const;       ///< after validate (realization 0)
    const Operator* op() const;                      ///< after build
    SpectralBounds spectral_bounds() const;          ///< after bounds
    const std::vector<std::vector<double>>& slot_moments() const;  ///< after moments, until result
    const std::vector<double>& band_energies() const;  ///< after bands

private:
    struct State;
    std::unique_ptr<State> s_;
};

/// Runs one DOS calculation; throws topokpm::Error on any failure, leaving no output file.
void run_dos(const RunConfig& config);

/// The same under mpirun (app/mpi/distribution.hpp): every rank calls it; rank 0 reports
/// and writes the result file (an LDOS: every rank its own rows, collectively).
void run_dos(const RunConfig& config, Distribution& distribution);

}  // namespace topokpm::app
