#pragma once
/// @file plan.hpp
/// Multi-rank run planner: rows, nonzeros, memory, halo traffic and predicted time per
/// rank, from sizes alone (nothing proportional to the matrix is allocated; the cost
/// is O(ranks)). The model and its assumptions are in docs/scaling.md:
///
/// - rows: split_rows() over the rank weights, boundaries at whole sites (`block` rows) or
///   whole `split_unit`s (x-planes of the matrix-free operator);
/// - nonzeros of a rank: the global count times its row fraction (uniform rows);
/// - halo: rows are ordered x slowest, so a rank owns an x-slab [begin, end) and the
///   nearest-neighbour x hopping couples row r to r +- plane, plane = ny*nz*block.
///   The halo is every row of [begin - plane, end + plane) that the rank does not own:
///   two planes for an inner rank, clipped at open x ends, wrapped and capped at the
///   other ranks' rows when periodic in x. Exact for ranks holding at least one plane;
///   an upper bound for thinner ranks (kept simple on purpose);
/// - operator bytes of a rank: a_nnz nnz + a_row rows, held and read once per sweep, with
///   the coefficients of the operator the run builds (numerics::operator_cost_model(): SELL
///   double a_nnz = 20, matrix-free a_row = 8 bytes per potential entry per row);
/// - the R vectors (start vectors: the traced columns of an LDOS or A(k, E) run) run in
///   ceil(R / W) blocks of W columns (W: the width the run resolves, default R);
///   v bytes per vector entry (16);
/// - memory: operator bytes, two v*rows*W vector blocks, a receive and a send buffer of
///   v*halo_rows*W each (a slab sends what it receives);
/// - time: one sweep gives two moments of W columns and streams operator bytes + 3*v*rows*W
///   (read x, read and write y) at the rank's memory bandwidth b; an operator that fuses
///   two sweeps per pass over memory (`sweeps_per_pass` 2: the CPU stencil's temporal
///   blocking on 2-D lattices, one rank) streams operator bytes + 4*v*rows*W (read x and y,
///   write both) per pass, half of that per sweep; a rank receives
///   v*halo_rows*W bytes at the network bandwidth; a GPU rank also moves its send and
///   receive rows over PCIe. Without overlap:
///   seconds per moment = blocks * (sweep_bytes / b + comm_seconds) / 2; with perfect
///   overlap the sum becomes a max. The slowest rank sets the pace: total = K M * max over ranks
///   (K realizations). On one CPU rank with a measured rate (measured_rows_per_second: the
///   kernel swept on a sample past the caches) a sweep takes rows / that rate instead.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/system.hpp"
#include "runtime/hetero/work_split.hpp"

namespace topokpm::hetero {

/// Default network bandwidth per rank: 10 GB/s (a 100 Gb/s link, or a Cray Aries
/// injection share; stated in docs/scaling.md); pass a measured value where one exists.
inline constexpr double default_network_gbs = 10.0;
/// Default host-device bandwidth of a GPU rank's halo staging: 25 GB/s (PCIe 4.0 x16
/// sustained; Piz Daint's PCIe 2.0 K20X links give ~6 GB/s: pass that to model them).
inline constexpr double default_host_device_gbs = 25.0;

/// One in-plane coupling of the lattice model: row site s couples to column site
/// s + (dx, dy, 0) through the column orbitals set in `columns` (bit b: orbital b), in
/// every z layer. Couplings with dx = dy = 0 never leave a rank of a (x, y) decomposition
/// and are not listed.
struct HaloCoupling {
    int dx = 0, dy = 0;
    std::uint32_t columns = 0;
};

/// What the exact halo of an (x, y) tile depends on: the lattice and the couplings.
struct LatticeHalo {
    std::uint64_t nx = 1, ny = 1, nz = 1, block = 1;
    bool periodic_x = true, periodic_y = true;
    std::vector<HaloCoupling> couplings;
};

/// A px x py process grid over the (x, y) sites, whole z-columns per rank: rank
/// p = i py + j owns x in [x_cuts[i], x_cuts[i+1]), y in [y_cuts[j], y_cuts[j+1]).
/// px x 1 is the 1-D split into whole x-planes.
struct ProcessGrid {
    int px = 1, py = 1;
    std::vector<std::uint64_t> x_cuts, y_cuts;
    int ranks() const { return px * py; }
};

/// Equal cuts (split_rows with equal weights: tile widths differ by at most one site).
/// Throws InputError when px > nx or py > ny.
ProcessGrid make_grid(std::uint64_t nx, std::uint64_t ny, int px, int py);

/// The halo of rank `rank` of `grid`: every row (site, orbital) outside its tile that one
/// of its rows couples to, counted once (periodic wraps folded, open edges dropped), in
/// total and per owning rank (ascending rank). Exact for the couplings given; costs
/// O(reach^2 x couplings) whatever the tile's size (reach: the largest |dx|, |dy|), and
/// allocates nothing proportional to the lattice.
struct TileHalo {
    std::uint64_t rows = 0;
    std::vector<std::pair<int, std::uint64_t>> per_neighbour;
};
TileHalo tile_halo(const LatticeHalo& lattice, const ProcessGrid& grid, int rank);

/// The px x py = ranks grid with the smallest halo on its worst rank (ties: the smallest
/// total halo, then the larger px, so px x 1 wins a tie: no permutation). Throws
/// InputError when no grid fits (ranks > nx ny).
ProcessGrid choose_grid(const LatticeHalo& lattice, int ranks);

/// The decomposition of `ranks` ranks for the option value `mode` (--decomposition):
///   "1d"     an empty grid (x-slabs of the 1-D split);
///   "2d"     choose_grid();
///   "PXxPY"  that grid (InputError unless PX PY = ranks);
///   "auto"   choose_grid() when it beats px x 1 (py > 1) and `weighted` is false (the
///            tiles are equal; --weights ask for the 1-D split), else empty.
/// `weighted` with "2d" or a grid is an InputError naming {weights}. One rank: empty.
ProcessGrid choose_decomposition(const std::string& mode, int ranks, bool weighted, const LatticeHalo& lattice);

struct PlanInput {
    std::uint64_t rows = 0;       ///< N, global rows
    std::uint64_t nnz = 0;        ///< global stored nonzeros
    std::uint64_t block = 1;      ///< orbitals per site (4 ti, 2 graphene)
    /// Rows the 1-D split keeps on one rank, a multiple of `block` dividing `rows` (a site, or
    /// an x-plane for the matrix-free operator); 0: `block`.
    std::uint64_t split_unit = 0;
    std::uint64_t nx = 1, ny = 1, nz = 1;  ///< lattice; rows = nx*ny*nz*block, x slowest
    bool periodic_x = true;
    /// x-planes a row couples to on each side: the 1-D halo of a rank is `x_reach` planes
    /// beyond each end of its rows (1 for ti and graphene; a _hr.dat's largest |R1|; a
    /// matrix without a lattice, whose plane is one row: its bandwidth).
    std::uint64_t x_reach = 1;
    int vectors = 1;              ///< R
    int block_width = 0;          ///< W columns per sweep, 1 <= W <= R (kpm-dos: the run's resolved W); 0: W = R
    /// Operator bytes per stored nonzero and per row (held and read per sweep), and bytes
    /// per vector entry: numerics::OperatorCostModel of the operator the run builds. The
    /// defaults are SELL-C-σ in double precision.
    double matrix_bytes_per_nonzero = 20;
    double matrix_bytes_per_row = 0;
    double value_bytes = 16;
    /// Sweeps per pass over memory of the operator (Operator::fused_steps at W: 1 or 2); 2
    /// is priced only on one CPU rank (the distributed operator sweeps one step at a time).
    int sweeps_per_pass = 1;
    /// Rows per second of the operator's sweeps measured on a sample past the caches
    /// (app::probe_kernel): on one CPU rank the sweep takes rows / this instead of the
    /// traffic model's time (which the temporal blocking's in-core bound can beat); 0: not
    /// measured, the traffic model. Priced only on one CPU rank, as sweeps_per_pass.
    double measured_rows_per_second = 0;
    int moments = 2;              ///< M, even: the moments each block's sweeps run
    int realizations = 1;         ///< K disorder realizations, each the whole trace again
    int ranks = 1;                ///< P, all ranks (CPU and GPU)
    /// Weights, one per rank; empty: proportional to each rank's memory bandwidth
    /// (equal for identical ranks), GHOST's first guess (seed 000 §4.1).
    std::vector<double> weights;
    /// Memory bandwidth of a CPU rank in GB/s (1e9 B/s): one value for all, or one per
    /// rank (GPU ranks' entries are then ignored). No built-in default: measure it.
    std::vector<double> memory_gbs;
    double network_gbs = default_network_gbs;  ///< per rank, for the halo exchange
    int gpus = 0;                 ///< G: the last G ranks drive one GPU each
    double gpu_memory_gbs = 0;    ///< device memory bandwidth of a GPU rank, GB/s
    double host_device_gbs = default_host_device_gbs;  ///< halo staging over PCIe
    /// 2-D decomposition (--decomposition 2d): grid.ranks() == ranks and `halo` set; rows
    /// and halo per rank then come from the tiles (tile_halo); weights must be equal.
    /// Default (an empty grid): the 1-D split above.
    ProcessGrid grid;
    LatticeHalo halo;
};

struct RankPlan {
    RowRange range;
    bool gpu = false;
    std::uint64_t nnz = 0;
    std::uint64_t halo_rows = 0;
    double memory_bytes = 0;          ///< operator + two vector blocks + send/receive buffers
    double halo_bytes_per_sweep = 0;  ///< received per sweep (the same amount is sent)
    double sweep_bytes = 0;           ///< memory traffic per sweep of W columns (a pass's / sweeps_per_pass)
    double seconds_per_moment = 0;    ///< halo exchange not overlapped
    double seconds_per_moment_overlap = 0;  ///< halo exchange hidden behind the sweep
    double sweep_seconds = 0;         ///< memory part of one sweep of W columns
    double comm_seconds = 0;          ///< halo part of one sweep (network, plus PCIe on a GPU rank)
    std::vector<std::pair<int, std::uint64_t>> neighbours;  ///< 2-D: halo rows per owning rank
};

struct Plan {
    PlanInput input;
    std::vector<double> weights;     ///< the weights used (given or from bandwidths)
    std::vector<RankPlan> ranks;
    double seconds_per_moment = 0;  ///< slowest rank, no overlap
    double seconds_per_moment_overlap = 0;  ///< slowest rank, perfect overlap
    double total_seconds = 0;       ///< realizations * moments * seconds_per_moment
    double sweeps = 0;              ///< sweeps of W columns per rank: K x ceil(R / W) blocks x M / 2
    double max_memory_bytes = 0;     ///< over CPU ranks
    double max_gpu_memory_bytes = 0; ///< over GPU ranks (device memory)
};

/// Builds the plan. Throws InputError for inconsistent sizes (rows != nx*ny*nz*block,
/// R < 1, odd M, P < 1, G outside [0, P], missing or non-positive bandwidths, fewer
/// sites than ranks, weights of the wrong count).
Plan make_plan(const PlanInput& input);

/// Throws ResourceError "rank r (cpu|gpu) of P needs X GiB per rank, <which limit>" when a
/// CPU rank exceeds `host` (memory_limit(): {memory_limit} or this machine) or a GPU rank
/// exceeds `gpu_bytes_per_rank` (0: not checked).
void require_fits(const Plan& plan, const MemoryLimit& host, double gpu_bytes_per_rank = 0);

/// Printable table with units in every column: one line per rank for P <= 16, else
/// min / max / mean over the ranks of each kind (cpu, gpu); then the totals.
std::string format_plan(const Plan& plan);

}  // namespace topokpm::hetero
