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

/// The values of fill_random_phase_vectors for `rows` rows of `cols` columns at `out`
/// (row-major), columns from `valid_cols` on zero; T = complex_double, or complex_single (the
/// double values rounded to nearest, as convert_block rounds them). The host's loop, for host
/// memory and the host stand-in's "device" memory.
template <class T>
void random_phase_values(T* out, global_index rows, int cols, int valid_cols, std::uint64_t vector_seed,
                         std::int64_t first_vector, global_index num_global_rows, global_index row_begin);

/// random_phase_values into the memory of `device` (a block's device copy): the host
/// stand-in's (device::host_standin: the host loop, the same bits) or a CUDA device's (the
/// kernel of numerics/cuda/start_vectors.cuh: the same phases, the device's cos and sin,
/// within 2 ulp of the host's). NotCompiled for a CUDA device in a CPU-only build.
template <class T>
void random_phase_values_on(int device, T* out, global_index rows, int cols, int valid_cols,
                            std::uint64_t vector_seed, std::int64_t first_vector, global_index num_global_rows,
                            global_index row_begin);

/// Column c of `block` = unit vector |first_row + c> in the block's own row numbering
/// (zero where first_row + c is outside [0, rows); a rank passes global row - row_begin).
void fill_unit_vectors(BlockVector& block, global_index first_row);

}  // namespace topokpm::numerics

namespace topokpm::numerics::kernels::cuda {

/// random_phase_values on the current CUDA device, `out` in its memory; returns when they
/// are written. numerics/cuda/start_vector_kernels.cu;
/// NotCompiled in CPU-only builds (numerics/cuda/stubs.cpp).
template <class T>
void random_phase_values(T* out, global_index rows, int cols, int valid_cols, std::uint64_t vector_seed,
                         std::int64_t first_vector, global_index num_global_rows, global_index row_begin);

}  // namespace topokpm::numerics::kernels::cuda
