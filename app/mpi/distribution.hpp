#pragma once
/// @file distribution.hpp
/// How kpm-dos runs under `mpirun -np P` (docs/scaling.md): the only part of the app that
/// knows about MPI. A serial Distribution (P = 1, no MPI) keeps every code path of the
/// spine as it was; a distributed one agrees on validation collectively, pins each rank's
/// OpenMP threads to its own CPU set, splits the rows by --weights and wraps the rank's
/// part (built by numerics::make_operator over rows()) into a DistributedOperator.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/cli/run_config.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/base/attribute.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/hetero/plan.hpp"

namespace topokpm::numerics {
class RowPermutation;
class DistributedOperator;
}

namespace topokpm::app {

/// True when this process was started by an MPI launcher (mpirun/mpiexec of OpenMPI or a
/// PMI/PMIx launcher such as srun): OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK is set.
/// A plain `kpm-dos ...` does not initialise MPI at all.
bool launched_by_mpi();

/// Sets the OpenMP team of this process to --threads (0 = OMP_NUM_THREADS or all cores,
/// left as it is) and returns its size; idempotent. Distribution::from_mpi calls it before
/// pinning, so it pins and judges (PERFWARNINGs) the team that runs; run_dos and run_eigs
/// take their thread count from it.
int use_threads(const RunConfig& cfg);

/// A process alone (no mpirun, or mpirun -np 1, where nothing is pinned): use_threads(cfg),
/// and the PERFWARNING of topology::threads_warning when that team is larger than the PUs
/// the process may use (omp_get_num_procs: its affinity mask). Returns the team's size.
int use_threads_alone(const RunConfig& cfg);

class Distribution {
public:
    /// One process, no MPI.
    Distribution() = default;
    /// After MPI_Init: rank, size; with P > 1 also the CPU set and thread pinning of this
    /// rank (unless cfg.runtime.pin_threads is false) and the layout PERFWARNINGs for the
    /// team of use_threads(cfg). Collective.
    static Distribution from_mpi(const RunConfig& cfg);

    bool distributed() const { return size_ > 1; }
    int rank() const { return rank_; }
    int size() const { return size_; }
    bool root() const { return rank_ == 0; }

    /// Runs `validate` on every rank and agrees on the outcome: when it throws on any rank,
    /// the lowest such rank prints its message once and every rank throws (CollectiveError
    /// with that rank's exit code), so no rank waits for another in a collective. Serial:
    /// just calls it. Its messages are with_user_messages() ones (flags, no --config values).
    void agree(const std::function<void()>& validate) const;

    /// Splits the rows over the ranks (--decomposition, docs/scaling.md) by the layout
    /// --plan also reads (rank_layout, app/cli/resolved_run.hpp). 1d: by --weights
    /// (`w0:w1:...`, empty = equal, `auto` = each rank's measured rate of the run's
    /// operator), in whole sites, or whole x-planes for --matrix free. 2d: the px x py grid
    /// of (x, y) tiles of whole z-columns with the smallest halo per rank
    /// (hetero::choose_grid on lattice_halo(model)), equal weights only; a rank's rows are
    /// the canonical runs of its tile, kept in that order (rank-major, canonical inside a
    /// rank: numerics::RowPermutation), so its part stays contiguous for the kernels.
    /// auto: 2d when that grid's worst halo is smaller than the px x 1 (1-D) one and no
    /// --weights are given; kpm-eigs always 1d. Collective under mpirun (the decision is
    /// agreed: an impossible 2d ends every rank with one message); serial: one part, all
    /// rows. Records the split for rows(), row_runs(), gershgorin(), layout(), provenance().
    void split_rows(const RunConfig& cfg, const hamiltonians::Model& model);

    /// This rank's rows of the last split_rows() (serial: all of them), as the spec's range
    /// (numerics::OperatorSpec::rows; a 2-D tile as its runs): the operator, the cost model
    /// and the memory check all take the rank's part from here.
    numerics::RowRange rows() const;

    /// The operator the options ask for (app/cli/operator_choice.hpp) over rows(): what this
    /// rank builds and prices. --device cuda under mpirun: node rank k drives GPU k when k
    /// is below the visible count (device::rank_device), else this rank's spec is the CPU.
    numerics::OperatorSpec operator_spec(const RunConfig& cfg) const;

    /// The operator of the run: `local` (this rank's part) itself when serial, else the
    /// DistributedOperator with `local` as its local part and the halo exchange of the
    /// other columns (--comm-mode, --reduce-every-sweep). `matrix` is the whole matrix whose
    /// rows() `local` holds: the model itself, or another operator on the model's rows
    /// (--conductivity's velocities, hamiltonians::VelocityRows), which gets the same split
    /// (bounds, 2-D order), so a block of local rows means the same rows for both. `local`
    /// lives where operator_spec(cfg) says (its halo is put there). Collective. With
    /// `judge_halo`, rank 0 prints a PERFWARNING for each rank weighted below half the mean
    /// share whose halo has more than half as many rows as it owns (its exchange per sweep
    /// then rivals its share of the sweep; with GPU and CPU ranks mixed, the advice is one
    /// rank per GPU).
    std::shared_ptr<const Operator> wrap(const RunConfig& cfg, const RowSource& matrix,
                                         std::shared_ptr<const Operator> local, bool judge_halo = true) const;

    /// The rows this rank receives per sweep of a matrix with the model's couplings on its
    /// rows() (the halo a DistributedOperator of the last split_rows() holds, priced before
    /// it is built): the lattice's halo model (lattice_halo) on the rank's 2-D tile, or on
    /// an x-slab of equal 1-D split (the faces a slab has whatever its thickness; a split
    /// inside a plane adds a few rows); all other rows when the model has no halo model or
    /// fewer x-planes than ranks (a bound); 0 when serial.
    global_index halo_rows(const hamiltonians::Model& model) const;

    /// Sum over ranks of one value (serial: the value).
    double sum(double value) const;

    /// Element-wise maximum over the ranks, in place (serial: unchanged). Collective.
    void max(std::vector<std::int64_t>& values) const;

    /// The global canonical rows this rank holds, as sorted [begin, end) runs in the order
    /// of its local rows (the 1-D split: one run; a 2-D tile: one per x-plane of the tile;
    /// serial: all rows [0, N) of `num_rows`): what a rank writes of a global vector, e.g.
    /// a checkpoint's.
    std::vector<std::pair<global_index, global_index>> row_runs(global_index num_rows) const;

    /// The identity of the decomposition: "1 rank", "1d rows b0:b1:...:bP" or
    /// "2d grid PXxPY x x0:..:xPX y y0:..:yPY" after split_rows(). Two runs with the same
    /// layout hold the same rows on the same ranks in the same order.
    std::string layout() const;

    /// Gershgorin bounds of the whole matrix: each rank scans the discs of its rows of the
    /// last split_rows(), then min/max over the ranks. Collective.
    SpectralBounds gershgorin(const RowSource& source) const;

    /// The balance of the ranks' work in the sweeps of `op` (the run's operator, as wrap()
    /// returned it): each rank's busy seconds per sweep (pack + local + remote part, the
    /// halo wait excluded) since it was built, gathered: attributes
    /// sweep_busy_seconds_slowest / _mean, sweep_wait_seconds_mean and rank_imbalance =
    /// slowest / mean (1 = balanced; the others wait that much longer than needed). Empty
    /// when serial. Collective.
    AttributeList imbalance(const Operator& op) const;

    /// /provenance attributes of the layout: ranks, weights, rows per rank, comm mode,
    /// each rank's CPU set (gathered). Collective.
    AttributeList provenance(const RunConfig& cfg) const;

    /// Element-wise sum over the ranks, in place (serial: unchanged): e.g. each rank's
    /// share of an LDOS map or of the mean moments. Collective.
    void sum(std::vector<double>& values) const;

private:
    void warn_about_halo(const numerics::DistributedOperator& op, bool gpu) const;

    int rank_ = 0;
    int size_ = 1;
    ProvenanceConfig provenance_;        ///< from_mpi's: which values came from the --config file
    std::string cpuset_;                 ///< this rank's CPU set ("0-3"), empty when unpinned
    std::vector<double> weights_;        ///< used for the last split
    std::vector<global_index> bounds_;   ///< P + 1 row bounds of the last split (2-D: of the permuted order)
    hetero::ProcessGrid grid_;           ///< 2-D: the process grid (x_cuts empty for 1-D)
    RowRuns runs_;                       ///< this rank's canonical runs, in local order
    std::shared_ptr<const numerics::RowPermutation> order_;  ///< 2-D with py > 1: rank-major order
};

}  // namespace topokpm::app
