#pragma once
/// @file plan.hpp
/// Multi-rank run planner: rows, nonzeros, memory, halo traffic and predicted time per
/// rank, from sizes alone (nothing proportional to the matrix is allocated; the cost
/// is O(ranks)). The model and its assumptions are in docs/scaling.md:
///
/// - rows: split_rows() over the rank weights, boundaries at whole sites (`block` rows);
/// - nonzeros of a rank: the global count times its row fraction (uniform rows);
/// - halo: rows are ordered x slowest, so a rank owns an x-slab [begin, end) and the
///   nearest-neighbour x hopping couples row r to r +- plane, plane = ny*nz*block.
///   The halo is every row of [begin - plane, end + plane) that the rank does not own:
///   two planes for an inner rank (also for a rank thinner than one plane), clipped at
///   open x ends, wrapped and capped at the other ranks' rows when periodic in x;
/// - memory: matrix 20 B/nnz (16 B value + 4 B column), two 16*rows*R vector blocks,
///   two 16*halo_rows*R halo blocks;
/// - time: one sweep gives two moments and streams 20*nnz + 48*rows*R bytes (matrix,
///   read x, read and write y) at the rank's memory bandwidth, and receives
///   16*halo_rows*R bytes at the network bandwidth without overlap:
///   seconds per moment = (sweep_bytes / b + halo_bytes / net) / 2. The slowest rank
///   sets the pace: total = moments * max over ranks.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/hetero/work_split.hpp"

namespace topokpm::hetero {

/// Default network bandwidth per rank: 10 GB/s (one 100 Gb/s link share, stated in
/// docs/scaling.md); pass a measured value where one exists.
inline constexpr double default_network_gbs = 10.0;

struct PlanInput {
    std::uint64_t rows = 0;       ///< N, global rows
    std::uint64_t nnz = 0;        ///< global stored nonzeros
    std::uint64_t block = 1;      ///< orbitals per site (4 ti, 2 graphene)
    std::uint64_t nx = 1, ny = 1, nz = 1;  ///< lattice; rows = nx*ny*nz*block, x slowest
    bool periodic_x = true;
    int vectors = 1;              ///< R
    int moments = 2;              ///< M
    int ranks = 1;                ///< P
    std::vector<double> weights;  ///< empty: equal; else one per rank (parse_weights)
    /// Memory bandwidth per rank in GB/s (1e9 B/s): one value for all ranks, or one per
    /// rank. No built-in default: pass the measured value (STREAM triad).
    std::vector<double> memory_gbs;
    double network_gbs = default_network_gbs;
};

struct RankPlan {
    RowRange range;
    std::uint64_t nnz = 0;
    std::uint64_t halo_rows = 0;
    double memory_bytes = 0;        ///< matrix + vectors + halo
    double halo_bytes_per_sweep = 0;  ///< received per sweep
    double sweep_bytes = 0;         ///< memory traffic per sweep
    double seconds_per_moment = 0;
};

struct Plan {
    PlanInput input;
    std::vector<RankPlan> ranks;
    double seconds_per_moment = 0;  ///< slowest rank
    double total_seconds = 0;       ///< moments * seconds_per_moment
    double max_memory_bytes = 0;
};

/// Builds the plan. Throws InputError for inconsistent sizes (rows != nx*ny*nz*block,
/// non-positive R, M, P or bandwidths, fewer sites than ranks).
Plan make_plan(const PlanInput& input);

/// Throws ResourceError "rank R needs X GiB per rank, have Y GiB" when the largest rank
/// exceeds `available_bytes_per_rank`.
void require_fits(const Plan& plan, double available_bytes_per_rank);

/// Nonzeros of the TI model on nx*ny*nz sites, periodic in x and y, open in z:
/// 13 per row, minus 2 per row on the two open z surfaces (nz == 1: one surface layer
/// with both neighbours missing, 9 per row).
std::uint64_t ti_nnz(std::uint64_t nx, std::uint64_t ny, std::uint64_t nz);

/// Printable table with units in every column: one line per rank for P <= 16, else
/// min / max / mean over the ranks; then the totals.
std::string format_plan(const Plan& plan);

}  // namespace topokpm::hetero
