#pragma once
/// @file cuda_check.hpp
/// TOPOKPM_CUDA_CHECK(call): throws CudaError naming the call, file:line, the error's name
/// and text. Only for translation units built with the CUDA toolkit (runtime/device,
/// numerics/cuda, bench); everything else goes through device.hpp.

#include <cuda_runtime.h>

#include "runtime/device/device.hpp"

namespace topokpm::device::cuda_detail {
[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line)
{
    throw CudaError(::topokpm::detail::concat(file, ":", line, ": ", call, " returned ", static_cast<int>(code),
                                              " (", cudaGetErrorName(code), ": ", cudaGetErrorString(code), ")"));
}
}  // namespace topokpm::device::cuda_detail

#define TOPOKPM_CUDA_CHECK(call)                                                             \
    do {                                                                                     \
        const cudaError_t topokpm_cuda_status_ = (call);                                     \
        if (topokpm_cuda_status_ != cudaSuccess)                                             \
            ::topokpm::device::cuda_detail::throw_cuda_error(topokpm_cuda_status_, #call, __FILE__, \
                                                        __LINE__);                           \
    } while (0)
