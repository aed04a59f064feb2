#pragma once
/// @file start_vectors.hpp
/// Start vectors of the KPM traces (models.md §4), from the counter-based generator
/// so they are identical on any number of ranks, threads or devices.

#include <cstdint>

#include "numerics/base/block_vector.hpp"

namespace topokpm::numerics {

/// Fills columns c = 0..R-1 of `block` with random-phase vector r = first_vector + c:
/// block(j, c) = exp(2 pi i uniform(S_v, r N + j)) for global rows j = row_begin + i,
/// S_v = splitmix64(vector_seed, 2), N = num_global_rows.
void fill_random_phase_vectors(BlockVector& block, std::uint64_t vector_seed,
                               std::int64_t first_vector, global_index num_global_rows,
                               global_index row_begin = 0);

/// Column c of `block` = unit vector |first_row + c> in the block's own row numbering
/// (zero where first_row + c is outside [0, rows); a rank passes global row - row_begin).
void fill_unit_vectors(BlockVector& block, global_index first_row);

}  // namespace topokpm::numerics
