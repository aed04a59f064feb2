#pragma once
/// @file cublas_check.hpp
/// Shared by the CUDA kernel tables (numerics/cuda/dense_kernels.cpp,
/// sparse_update_kernels.cu); only for translation units built with the CUDA toolkit.
/// - check_cublas(status, call): throws CudaError naming the call and cuBLAS's status name.
/// - queue_stream(queue, what): the CUDA stream a TaskContext::queue points to; a null queue
///   (a kernel of the table called off a cuda worker) is a bug naming `what`.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "runtime/base/error.hpp"
#include "runtime/device/device.hpp"

namespace topokpm::numerics::cuda_support {

inline void check_cublas(cublasStatus_t status, const char* call)
{
    if (status != CUBLAS_STATUS_SUCCESS)
        throw CudaError(detail::concat(call, " returned ", static_cast<int>(status), " (", cublasGetStatusName(status),
                                       ")"));
}

inline cudaStream_t queue_stream(void* queue, const char* what)
{
    TOPOKPM_REQUIRE(queue != nullptr, "a CUDA ", what, " was called without a worker queue (not on a cuda worker?)");
    return *static_cast<cudaStream_t*>(queue);
}

}  // namespace topokpm::numerics::cuda_support
