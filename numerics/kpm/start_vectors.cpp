#include "numerics/kpm/start_vectors.hpp"

#include <cmath>

#include "numerics/base/counter_rng.hpp"

namespace topokpm::numerics {

void fill_random_phase_vectors(BlockVector& block, std::uint64_t vector_seed,
                               std::int64_t first_vector, global_index num_global_rows,
                               global_index row_begin)
{
    const std::uint64_t stream = vector_stream_seed(vector_seed);
    const global_index n = block.num_rows();
    const int r = block.num_cols();
    const double two_pi = 2.0 * M_PI;
#pragma omp parallel for schedule(static)
    for (global_index i = 0; i < n; ++i) {
        const auto j = static_cast<std::uint64_t>(row_begin + i);
        for (int c = 0; c < r; ++c) {
            const auto vec = static_cast<std::uint64_t>(first_vector + c);
            const double phase = two_pi * uniform(stream, vec * static_cast<std::uint64_t>(num_global_rows) + j);
            block(i, c) = complex_type(std::cos(phase), std::sin(phase));
        }
    }
}

void fill_unit_vectors(BlockVector& block, global_index first_row)
{
    const global_index n = block.num_rows();
    const int r = block.num_cols();
#pragma omp parallel for schedule(static)
    for (global_index i = 0; i < n; ++i)
        for (int c = 0; c < r; ++c) block(i, c) = complex_type(i == first_row + c ? 1.0 : 0.0, 0.0);
}

}  // namespace topokpm::numerics
