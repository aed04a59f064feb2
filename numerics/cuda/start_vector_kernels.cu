// The launch of the device start vectors (start_vectors.cuh; contract:
// numerics/kpm/start_vectors.hpp, kernels::cuda::random_phase_values).
#include <cuda_runtime.h>

#include "numerics/cuda/start_vectors.cuh"
#include "numerics/kpm/start_vectors.hpp"
#include "runtime/device/cuda_check.hpp"

namespace topokpm::numerics::kernels::cuda {

template <class T>
void random_phase_values(T* out, global_index rows, int cols, int valid_cols, std::uint64_t vector_seed,
                         std::int64_t first_vector, global_index num_global_rows, global_index row_begin)
{
    using V2 = typename detail::DeviceComplex<T>::type;
    const std::int64_t entries = static_cast<std::int64_t>(rows) * cols;
    if (entries == 0) return;
    constexpr int threads = 256;
    const std::int64_t blocks = (entries + threads - 1) / threads;
    start::random_phase_kernel<V2><<<static_cast<int>(blocks < 65535 ? blocks : 65535), threads>>>(
        reinterpret_cast<V2*>(out), rows, cols, valid_cols, vector_stream_seed(vector_seed),
        static_cast<std::uint64_t>(first_vector), static_cast<std::uint64_t>(num_global_rows),
        static_cast<std::uint64_t>(row_begin));
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
    // Blocking, as the upload it replaces was: a GPU rank's halo gathers x on a stream of its
    // own, which does not wait for the default stream.
    TOPOKPM_CUDA_CHECK(cudaDeviceSynchronize());
}

template void random_phase_values(complex_double*, global_index, int, int, std::uint64_t, std::int64_t, global_index,
                                  global_index);
template void random_phase_values(complex_single*, global_index, int, int, std::uint64_t, std::int64_t, global_index,
                                  global_index);

}  // namespace topokpm::numerics::kernels::cuda
