// cuBLAS and cuSOLVER, opened when first called instead of when the program starts.
//
// Linked the ordinary way, libcublas pulls in libcublasLt, whose load-time constructors take
// some 0.3-0.8 s of every start of kpm-dos and kpm-eigs (docs/performance.md, session 25),
// GPU or not, although only the CUDA tile workers (numerics/cuda/dense_kernels.cpp) and the
// sparse LU's GPU update (sparse_update_kernels.cu) call them. This file defines the entry
// points those two use, each forwarding to the library's own function, which dlopen/dlsym
// find at the first call; the callers and the headers stay the toolkit's. A signature that
// differs from the header's declaration does not compile (extern "C" redeclaration).
// The libraries: TOPOKPM_CUBLAS_LIBRARY / TOPOKPM_CUSOLVER_LIBRARY (full paths, set by CMake
// from the toolkit found at configure time), then the bare sonames (the loader's search path).

#include <cublas_v2.h>
#include <cusolverDn.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "runtime/base/error.hpp"
#include "runtime/device/device.hpp"

namespace {

struct Library {
    const char* path;    ///< as found at configure time
    const char* soname;  ///< fallback: the loader's search path
    void* handle = nullptr;
    std::string error{};
    std::once_flag once{};
};

Library& cublas()
{
    static Library lib{TOPOKPM_CUBLAS_LIBRARY, TOPOKPM_CUBLAS_SONAME, nullptr, {}, {}};
    return lib;
}

Library& cusolver()
{
    static Library lib{TOPOKPM_CUSOLVER_LIBRARY, TOPOKPM_CUSOLVER_SONAME, nullptr, {}, {}};
    return lib;
}

/// The address of `name` in `lib`, opening it on the first call; CudaError naming the
/// library and the loader's reason when it cannot be opened or lacks the symbol.
void* resolve(Library& lib, const char* name)
{
    std::call_once(lib.once, [&lib] {
        lib.handle = dlopen(lib.path, RTLD_NOW | RTLD_LOCAL);
        if (lib.handle == nullptr) {
            const char* why = dlerror();
            const std::string first = why ? why : lib.path;
            lib.handle = dlopen(lib.soname, RTLD_NOW | RTLD_LOCAL);
            if (lib.handle == nullptr) {
                why = dlerror();
                lib.error = first + "; " + (why ? why : lib.soname);
            }
        }
    });
    if (lib.handle == nullptr)
        throw topokpm::CudaError(topokpm::detail::concat("cannot open ", lib.soname, " for ", name, ": ", lib.error));
    void* f = dlsym(lib.handle, name);
    if (f == nullptr)
        throw topokpm::CudaError(topokpm::detail::concat(lib.soname, " has no symbol ", name));
    return f;
}

}  // namespace

// Defines `ret name params` forwarding `args` to the library's `name` (resolved once).
#define TOPOKPM_FORWARD(lib, ret, name, params, args)                                 \
    extern "C" ret name params                                                        \
    {                                                                                 \
        using Fn = ret(*) params;                                                     \
        static const Fn fn = reinterpret_cast<Fn>(resolve(lib(), #name));             \
        return fn args;                                                               \
    }

// ---- cuBLAS ----
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle), (handle))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle), (handle))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),
                (handle, stream))
TOPOKPM_FORWARD(cublas, const char*, cublasGetStatusName, (cublasStatus_t status), (status))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasCgeam,
                (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, const cuComplex* alpha,
                 const cuComplex* a, int lda, const cuComplex* beta, const cuComplex* b, int ldb, cuComplex* c,
                 int ldc),
                (h, ta, tb, m, n, alpha, a, lda, beta, b, ldb, c, ldc))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasZgeam,
                (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                 const cuDoubleComplex* alpha, const cuDoubleComplex* a, int lda, const cuDoubleComplex* beta,
                 const cuDoubleComplex* b, int ldb, cuDoubleComplex* c, int ldc),
                (h, ta, tb, m, n, alpha, a, lda, beta, b, ldb, c, ldc))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasCgemm_v2,
                (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                 const cuComplex* alpha, const cuComplex* a, int lda, const cuComplex* b, int ldb,
                 const cuComplex* beta, cuComplex* c, int ldc),
                (h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasZgemm_v2,
                (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                 const cuDoubleComplex* alpha, const cuDoubleComplex* a, int lda, const cuDoubleComplex* b, int ldb,
                 const cuDoubleComplex* beta, cuDoubleComplex* c, int ldc),
                (h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasCherk_v2,
                (cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t t, int n, int k, const float* alpha,
                 const cuComplex* a, int lda, const float* beta, cuComplex* c, int ldc),
                (h, uplo, t, n, k, alpha, a, lda, beta, c, ldc))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasZherk_v2,
                (cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t t, int n, int k, const double* alpha,
                 const cuDoubleComplex* a, int lda, const double* beta, cuDoubleComplex* c, int ldc),
                (h, uplo, t, n, k, alpha, a, lda, beta, c, ldc))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasCtrmm_v2,
                (cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, cublasOperation_t t,
                 cublasDiagType_t diag, int m, int n, const cuComplex* alpha, const cuComplex* a, int lda,
                 const cuComplex* b, int ldb, cuComplex* c, int ldc),
                (h, side, uplo, t, diag, m, n, alpha, a, lda, b, ldb, c, ldc))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasZtrmm_v2,
                (cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, cublasOperation_t t,
                 cublasDiagType_t diag, int m, int n, const cuDoubleComplex* alpha, const cuDoubleComplex* a,
                 int lda, const cuDoubleComplex* b, int ldb, cuDoubleComplex* c, int ldc),
                (h, side, uplo, t, diag, m, n, alpha, a, lda, b, ldb, c, ldc))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasCtrsm_v2,
                (cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, cublasOperation_t t,
                 cublasDiagType_t diag, int m, int n, const cuComplex* alpha, const cuComplex* a, int lda,
                 cuComplex* b, int ldb),
                (h, side, uplo, t, diag, m, n, alpha, a, lda, b, ldb))
TOPOKPM_FORWARD(cublas, cublasStatus_t, cublasZtrsm_v2,
                (cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo, cublasOperation_t t,
                 cublasDiagType_t diag, int m, int n, const cuDoubleComplex* alpha, const cuDoubleComplex* a,
                 int lda, cuDoubleComplex* b, int ldb),
                (h, side, uplo, t, diag, m, n, alpha, a, lda, b, ldb))

// ---- cuSOLVER ----
TOPOKPM_FORWARD(cusolver, cusolverStatus_t, cusolverDnCreate, (cusolverDnHandle_t * handle), (handle))
TOPOKPM_FORWARD(cusolver, cusolverStatus_t, cusolverDnDestroy, (cusolverDnHandle_t handle), (handle))
TOPOKPM_FORWARD(cusolver, cusolverStatus_t, cusolverDnSetStream, (cusolverDnHandle_t handle, cudaStream_t stream),
                (handle, stream))
TOPOKPM_FORWARD(cusolver, cusolverStatus_t, cusolverDnCpotrf_bufferSize,
                (cusolverDnHandle_t h, cublasFillMode_t uplo, int n, cuComplex* a, int lda, int* lwork),
                (h, uplo, n, a, lda, lwork))
TOPOKPM_FORWARD(cusolver, cusolverStatus_t, cusolverDnZpotrf_bufferSize,
                (cusolverDnHandle_t h, cublasFillMode_t uplo, int n, cuDoubleComplex* a, int lda, int* lwork),
                (h, uplo, n, a, lda, lwork))
TOPOKPM_FORWARD(cusolver, cusolverStatus_t, cusolverDnCpotrf,
                (cusolverDnHandle_t h, cublasFillMode_t uplo, int n, cuComplex* a, int lda, cuComplex* work,
                 int lwork, int* info),
                (h, uplo, n, a, lda, work, lwork, info))
TOPOKPM_FORWARD(cusolver, cusolverStatus_t, cusolverDnZpotrf,
                (cusolverDnHandle_t h, cublasFillMode_t uplo, int n, cuDoubleComplex* a, int lda,
                 cuDoubleComplex* work, int lwork, int* info),
                (h, uplo, n, a, lda, work, lwork, info))
