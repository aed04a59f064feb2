// The distributed operator's device halo kernels (contract: numerics/distributed/halo_kernels.hpp):
// the gather of the rows other ranks need, and the remote correction from the received halo.
// Both are memory-bound over a few x-planes of rows; one thread per (row, column) entry.
#include <cuda_runtime.h>

#include <type_traits>

#include "numerics/cuda/augmented_common.cuh"
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

}  // namespace

template <class T>
void gather_rows(const local_index* rows, std::int64_t count, int r, const T* x, T* out, Stream stream)
{
    using V2 = typename detail::DeviceComplex<T>::type;
    if (count == 0) return;
    gather_rows_kernel<V2><<<blocks_for(count * r), threads, 0, stream>>>(rows, count, r,
                                                                          reinterpret_cast<const V2*>(x),
                                                                          reinterpret_cast<V2*>(out));
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void remote_correction(std::int64_t num_rows, int r, const local_index* row, const std::int64_t* ptr,
                       const local_index* col, const complex_type* vals, const T* halo, const T* x, T* y,
                       double scale, complex_type* corr, complex_type* xg, Stream stream)
{
    using V2 = typename detail::DeviceComplex<T>::type;
    if (num_rows == 0) return;
    remote_correction_kernel<V2><<<blocks_for(num_rows * r), threads, 0, stream>>>(
        num_rows, r, row, ptr, col, reinterpret_cast<const double2*>(vals), reinterpret_cast<const V2*>(halo),
        reinterpret_cast<const V2*>(x), reinterpret_cast<V2*>(y), scale, reinterpret_cast<double2*>(corr),
        reinterpret_cast<double2*>(xg));
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
}

#define TOPOKPM_HALO_KERNELS(T)                                                                                     \
    template void gather_rows(const local_index*, std::int64_t, int, const T*, T*, Stream);                         \
    template void remote_correction(std::int64_t, int, const local_index*, const std::int64_t*, const local_index*, \
                                    const complex_type*, const T*, const T*, T*, double, complex_type*,             \
                                    complex_type*, Stream);
TOPOKPM_HALO_KERNELS(complex_double)
TOPOKPM_HALO_KERNELS(complex_single)
#undef TOPOKPM_HALO_KERNELS

}  // namespace topokpm::numerics::kernels::cuda
