#pragma once
// The random-phase start vectors of models.md §4 made in device memory (start_vector_kernels.cu
// launches it; contract: numerics/kpm/start_vectors.hpp): entry (i, c) of a row-major block of
// `rows` x `cols` values is exp(2 pi i uniform(S_v, (first_vector + c) N + row_begin + i)) for
// c < valid_cols, zero after; one thread per entry, grid-stride. The counter-based generator
// is the host's own constexpr function (numerics/base/counter_rng.hpp), so the phases are the
// host's bit for bit; cos and sin are the device's (within 2 ulp of the host's). Apart from
// the launch so that tests/unit/cuda/emulated_kernels_test.cpp runs it on the host.

#include <cuda_runtime.h>

#include <cstdint>

#include "numerics/base/counter_rng.hpp"
#include "numerics/cuda/augmented_common.cuh"

namespace topokpm::numerics::kernels::cuda::start {

template <class V2>
__global__ void random_phase_kernel(V2* __restrict__ out, std::int64_t rows, int cols, int valid_cols,
                                    std::uint64_t stream, std::uint64_t first_vector, std::uint64_t num_global_rows,
                                    std::uint64_t row_begin)
{
    const std::int64_t entries = rows * cols;
    const double two_pi = 6.283185307179586;  // 2 pi rounded to double, as the host's 2.0 * M_PI
    for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < entries;
         t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t i = t / cols;
        const int c = static_cast<int>(t - i * cols);
        if (c >= valid_cols) {
            out[t] = detail::Lanes<V2>::make(0.0, 0.0);
            continue;
        }
        const std::uint64_t counter = (first_vector + static_cast<std::uint64_t>(c)) * num_global_rows + row_begin +
                                      static_cast<std::uint64_t>(i);
        const double phase = two_pi * uniform(stream, counter);
        double s, co;
        sincos(phase, &s, &co);
        out[t] = detail::Lanes<V2>::make(co, s);
    }
}

}  // namespace topokpm::numerics::kernels::cuda::start
