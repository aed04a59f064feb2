// The launches of the distributed operator's device halo kernels (halo_kernels.cuh; contract:
// numerics/distributed/halo_kernels.hpp): the gather of the rows other ranks need, and the
// remote correction from the received halo.
#include <cuda_runtime.h>

#include <type_traits>

#include "numerics/cuda/augmented_common.cuh"
#include "numerics/cuda/halo_kernels.cuh"
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

}  // namespace

template <class T>
void gather_rows(const local_index* rows, std::int64_t count, int r, const T* x, T* out, Stream stream)
{
    using V2 = typename detail::DeviceComplex<T>::type;
    if (count == 0) return;
    halo::gather_rows_kernel<V2><<<blocks_for(count * r), threads, 0, stream>>>(
        rows, count, r, reinterpret_cast<const V2*>(x), reinterpret_cast<V2*>(out));
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void remote_correction(std::int64_t num_rows, int r, const local_index* row, const std::int64_t* ptr,
                       const local_index* col, const complex_type* vals, const T* halo, const T* x, T* y,
                       double scale, complex_type* corr, complex_type* xg, Stream stream)
{
    using V2 = typename detail::DeviceComplex<T>::type;
    if (num_rows == 0) return;
    halo::remote_correction_kernel<V2><<<blocks_for(num_rows * r), threads, 0, stream>>>(
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
