// The transpose of the two-index trace's cuda store (contract: two_index_kernels.hpp): one
// thread per value, in the order of the destination (coalesced writes; the reads stride by
// W <= 32 values, within a few cache lines per warp).
#include <cuda_runtime.h>

#include "numerics/cuda/two_index_kernels.hpp"
#include "runtime/device/cuda_check.hpp"

namespace topokpm::numerics::kernels::cuda {

namespace {

constexpr int threads = 256;

__global__ void transpose_columns_kernel(const double2* __restrict__ from, std::int64_t n, int w,
                                         double2* __restrict__ to)
{
    const std::int64_t values = n * w;
    for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < values;
         t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t c = t / n, j = t % n;
        to[t] = from[j * w + c];
    }
}

}  // namespace

void transpose_columns(const complex_type* from, std::int64_t n, int w, complex_type* to)
{
    const std::int64_t values = n * w;
    if (values == 0) return;
    const std::int64_t blocks = (values + threads - 1) / threads;
    transpose_columns_kernel<<<static_cast<int>(blocks < 65535 ? blocks : 65535), threads>>>(
        reinterpret_cast<const double2*>(from), n, w, reinterpret_cast<double2*>(to));
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace topokpm::numerics::kernels::cuda
