#pragma once
// The device code of the distributed operator's halo on a GPU rank (halo_kernels.cu launches
// it; contract: numerics/distributed/halo_kernels.hpp): the gather of the rows other ranks
// need, and the remote correction from the received halo. Both are memory-bound over a few
// x-planes of rows, one thread per (row, column) entry, grid-stride. Apart from the launches
// so that tests/unit/cuda/emulated_kernels_test.cpp runs them on the host.

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "numerics/base/types.hpp"

namespace topokpm::numerics::kernels::cuda::halo {

template <class V2>
__global__ void gather_rows_kernel(const local_index* __restrict__ rows, std::int64_t count, int r,
                                   const V2* __restrict__ x, V2* __restrict__ out)
{
    const std::int64_t entries = count * r;
    for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < entries;
         t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t k = t / r, c = t % r;
        out[t] = x[static_cast<std::int64_t>(rows[k]) * r + c];
    }
}

/// V2 = double2: y += d. V2 = float2: the float halo widened, d in double, y + d rounded
/// once and corr = the change y took (remote_correction_host's single-precision arithmetic).
template <class V2>
__global__ void remote_correction_kernel(std::int64_t num_rows, int r, const local_index* __restrict__ row,
                                         const std::int64_t* __restrict__ ptr, const local_index* __restrict__ col,
                                         const double2* __restrict__ vals, const V2* __restrict__ halo,
                                         const V2* __restrict__ x, V2* __restrict__ y, double scale,
                                         double2* __restrict__ corr, double2* __restrict__ xg)
{
    const std::int64_t entries = num_rows * r;
    for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < entries;
         t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t i = t / r, c = t % r;
        double dr = 0.0, di = 0.0;
        for (std::int64_t e = ptr[i]; e < ptr[i + 1]; ++e) {
            const double2 v = vals[e];
            const V2 h = halo[static_cast<std::int64_t>(col[e]) * r + c];
            const double hr = h.x, hi = h.y;
            dr += v.x * hr - v.y * hi;
            di += v.x * hi + v.y * hr;
        }
        dr *= scale;
        di *= scale;
        const std::int64_t at = static_cast<std::int64_t>(row[i]) * r + c;
        const V2 old = y[at];
        if constexpr (std::is_same_v<V2, double2>) {
            y[at] = make_double2(old.x + dr, old.y + di);
        } else {
            const float2 now = make_float2(static_cast<float>(old.x + dr), static_cast<float>(old.y + di));
            y[at] = now;
            dr = double(now.x) - double(old.x);
            di = double(now.y) - double(old.y);
        }
        if (corr != nullptr) {
            corr[t] = make_double2(dr, di);
            const V2 xv = x[at];
            xg[t] = make_double2(xv.x, xv.y);
        }
    }
}

}  // namespace topokpm::numerics::kernels::cuda::halo
