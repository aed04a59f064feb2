// The distributed operator's device halo kernels (contract: numerics/distributed/halo_kernels.hpp):
// the gather of the rows other ranks need, and the remote correction from the received halo.
// Both are memory-bound over a few x-planes of rows; one thread per (row, column) entry.
#include <cuda_runtime.h>

#include "numerics/distributed/halo_kernels.hpp"
#include "runtime/device/cuda_check.hpp"

namespace topokpm::numerics::kernels::cuda {

namespace {

constexpr int threads = 256;

int blocks_for(std::int64_t entries)
{
    const std::int64_t b = (entries + threads - 1) / threads;
    return static_cast<int>(b < 65535 ? b : 65535);  // grid-stride beyond
}

__global__ void gather_rows_kernel(const local_index* __restrict__ rows, std::int64_t count, int r,
                                   const double2* __restrict__ x, double2* __restrict__ out)
{
    const std::int64_t entries = count * r;
    for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < entries;
         t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t k = t / r, c = t % r;
        out[t] = x[static_cast<std::int64_t>(rows[k]) * r + c];
    }
}

__global__ void remote_correction_kernel(std::int64_t num_rows, int r, const local_index* __restrict__ row,
                                         const std::int64_t* __restrict__ ptr, const local_index* __restrict__ col,
                                         const double2* __restrict__ vals, const double2* __restrict__ halo,
                                         const double2* __restrict__ x, double2* __restrict__ y, double scale,
                                         double2* __restrict__ corr, double2* __restrict__ xg)
{
    const std::int64_t entries = num_rows * r;
    for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < entries;
         t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t i = t / r, c = t % r;
        double dr = 0.0, di = 0.0;
        for (std::int64_t e = ptr[i]; e < ptr[i + 1]; ++e) {
            const double2 v = vals[e], h = halo[static_cast<std::int64_t>(col[e]) * r + c];
            dr += v.x * h.x - v.y * h.y;
            di += v.x * h.y + v.y * h.x;
        }
        dr *= scale;
        di *= scale;
        const std::int64_t at = static_cast<std::int64_t>(row[i]) * r + c;
        const double2 old = y[at];
        y[at] = make_double2(old.x + dr, old.y + di);
        if (corr != nullptr) {
            corr[t] = make_double2(dr, di);
            xg[t] = x[at];
        }
    }
}

}  // namespace

void gather_rows(const local_index* rows, std::int64_t count, int r, const complex_type* x, complex_type* out,
                 Stream stream)
{
    if (count == 0) return;
    gather_rows_kernel<<<blocks_for(count * r), threads, 0, stream>>>(rows, count, r, reinterpret_cast<const double2*>(x),
                                                           reinterpret_cast<double2*>(out));
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
}

void remote_correction(std::int64_t num_rows, int r, const local_index* row, const std::int64_t* ptr,
                       const local_index* col, const complex_type* vals, const complex_type* halo,
                       const complex_type* x, complex_type* y, double scale, complex_type* corr, complex_type* xg,
                       Stream stream)
{
    if (num_rows == 0) return;
    remote_correction_kernel<<<blocks_for(num_rows * r), threads, 0, stream>>>(
        num_rows, r, row, ptr, col, reinterpret_cast<const double2*>(vals), reinterpret_cast<const double2*>(halo),
        reinterpret_cast<const double2*>(x), reinterpret_cast<double2*>(y), scale, reinterpret_cast<double2*>(corr),
        reinterpret_cast<double2*>(xg));
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace topokpm::numerics::kernels::cuda
