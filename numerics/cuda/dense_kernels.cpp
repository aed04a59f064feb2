// The CUDA tile kernels of numerics/dense/dense_kernels.hpp (built when TOPOKPM_HAVE_CUDA):
// cuSOLVER POTRF, cuBLAS TRSM/HERK/GEMM, the QR updates (GEMQRT, TPMQRT with l = 0) as
// compact-WY cuBLAS calls, and the QR panels (GEQRT, TPQRT) on the host: the CPU kernel on
// a page-locked copy, run by the worker's thread. Every call is queued on
// the worker's stream (TaskContext::queue points to it); the runtime waits for the stream
// before the task finishes.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "numerics/cuda/cublas_check.hpp"
#include "numerics/dense/dense_kernels.hpp"
#include "runtime/base/error.hpp"
#include "runtime/device/cuda_check.hpp"
#include "topokpm/config.hpp"

static_assert(TOPOKPM_HAVE_CUDA, "numerics/cuda/dense_kernels.cpp is only built with the CUDA backend");

namespace topokpm::numerics::kernels::cuda {

namespace {

template <class T>
constexpr bool is_double = std::is_same_v<T, complex_double>;

// cuDoubleComplex / cuFloatComplex have the layout of std::complex (two reals).
template <class T>
using Cu = std::conditional_t<is_double<T>, cuDoubleComplex, cuFloatComplex>;
template <class T>
Cu<T>* cu(T* p) { return reinterpret_cast<Cu<T>*>(p); }
template <class T>
const Cu<T>* cu(const T* p) { return reinterpret_cast<const Cu<T>*>(p); }

void check_solver(cusolverStatus_t status, const char* call)
{
    if (status != CUSOLVER_STATUS_SUCCESS)
        throw CudaError(detail::concat(call, " returned cusolverStatus ", static_cast<int>(status)));
}

#define TOPOKPM_CUBLAS(call) cuda_support::check_cublas((call), #call)
#define TOPOKPM_CUSOLVER(call) check_solver((call), #call)

cudaStream_t stream_of(void* queue) { return cuda_support::queue_stream(queue, "tile kernel"); }

/// Per worker thread: library handles, devInfo, a device workspace and a page-locked host
/// buffer, all created on first use on that thread (the worker's device is current).
class Worker {
public:
    ~Worker()
    {
        // At thread exit; errors cannot be reported from here.
        if (work_) (void)cudaFree(work_);
        if (host_) (void)cudaFreeHost(host_);
        if (info_) (void)cudaFree(info_);
        if (host_info_) (void)cudaFreeHost(host_info_);
        if (solver_) (void)cusolverDnDestroy(solver_);
        if (blas_) (void)cublasDestroy(blas_);
    }

    static Worker& on(cudaStream_t stream)
    {
        thread_local Worker w;
        if (!w.blas_) {
            TOPOKPM_CUBLAS(cublasCreate(&w.blas_));
            TOPOKPM_CUSOLVER(cusolverDnCreate(&w.solver_));
            TOPOKPM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&w.info_), sizeof(int)));
            TOPOKPM_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&w.host_info_), sizeof(int)));
        }
        w.stream_ = stream;
        TOPOKPM_CUBLAS(cublasSetStream(w.blas_, stream));
        TOPOKPM_CUSOLVER(cusolverDnSetStream(w.solver_, stream));
        return w;
    }

    cublasHandle_t blas() const { return blas_; }
    cusolverDnHandle_t solver() const { return solver_; }
    cudaStream_t stream() const { return stream_; }
    int* device_info() const { return info_; }

    /// Reads devInfo back (waits for the stream).
    int info()
    {
        TOPOKPM_CUDA_CHECK(cudaMemcpyAsync(host_info_, info_, sizeof(int), cudaMemcpyDeviceToHost, stream_));
        TOPOKPM_CUDA_CHECK(cudaStreamSynchronize(stream_));
        return *host_info_;
    }

    /// Device scratch of >= `count` elements of T, valid for work queued on this stream.
    template <class T>
    T* scratch(std::size_t count)
    {
        const std::size_t bytes = std::max<std::size_t>(1, count) * sizeof(T);
        if (bytes > work_bytes_) {
            TOPOKPM_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the old one may still be in use
            if (work_) TOPOKPM_CUDA_CHECK(cudaFree(work_));
            work_ = nullptr;
            work_bytes_ = 0;
            TOPOKPM_CUDA_CHECK(cudaMalloc(&work_, bytes));
            work_bytes_ = bytes;
        }
        return static_cast<T*>(work_);
    }

    /// Page-locked host scratch of >= `count` elements (the caller synchronizes its copies).
    template <class T>
    T* host(std::size_t count)
    {
        const std::size_t bytes = std::max<std::size_t>(1, count) * sizeof(T);
        if (bytes > host_bytes_) {
            if (host_) TOPOKPM_CUDA_CHECK(cudaFreeHost(host_));
            host_ = nullptr;
            host_bytes_ = 0;
            TOPOKPM_CUDA_CHECK(cudaMallocHost(&host_, bytes));
            host_bytes_ = bytes;
        }
        return static_cast<T*>(host_);
    }

private:
    cublasHandle_t blas_ = nullptr;
    cusolverDnHandle_t solver_ = nullptr;
    cudaStream_t stream_ = nullptr;
    int* info_ = nullptr;
    int* host_info_ = nullptr;
    void* work_ = nullptr;
    std::size_t work_bytes_ = 0;
    void* host_ = nullptr;
    std::size_t host_bytes_ = 0;
};

cublasOperation_t op_of(char trans)
{
    TOPOKPM_REQUIRE(trans == 'N' || trans == 'C', "trans must be 'N' or 'C', got '", trans, "'");
    return trans == 'C' ? CUBLAS_OP_C : CUBLAS_OP_N;
}

// ---- thin typed wrappers over cuBLAS (Z for double, C for single) ----

template <class T>
void gemm(Worker& w, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, T alpha, const T* a, int lda,
          const T* b, int ldb, T beta, T* c, int ldc)
{
    if (m == 0 || n == 0) return;
    if constexpr (is_double<T>)
        TOPOKPM_CUBLAS(cublasZgemm(w.blas(), ta, tb, m, n, k, cu(&alpha), cu(a), lda, cu(b), ldb, cu(&beta), cu(c), ldc));
    else
        TOPOKPM_CUBLAS(cublasCgemm(w.blas(), ta, tb, m, n, k, cu(&alpha), cu(a), lda, cu(b), ldb, cu(&beta), cu(c), ldc));
}

/// C := op(A) B with A triangular (left side), out of place.
template <class T>
void trmm_left(Worker& w, cublasFillMode_t uplo, cublasOperation_t op, cublasDiagType_t diag, int m, int n,
               const T* a, int lda, const T* b, int ldb, T* c, int ldc)
{
    const T one(1);
    if constexpr (is_double<T>)
        TOPOKPM_CUBLAS(cublasZtrmm(w.blas(), CUBLAS_SIDE_LEFT, uplo, op, diag, m, n, cu(&one), cu(a), lda, cu(b), ldb,
                                   cu(c), ldc));
    else
        TOPOKPM_CUBLAS(cublasCtrmm(w.blas(), CUBLAS_SIDE_LEFT, uplo, op, diag, m, n, cu(&one), cu(a), lda, cu(b), ldb,
                                   cu(c), ldc));
}

/// C := C - B (m x n; in place, as cublasXgeam allows for C == A with ldc == lda).
template <class T>
void subtract(Worker& w, int m, int n, const T* b, int ldb, T* c, int ldc)
{
    const T one(1), minus_one(-1);
    if constexpr (is_double<T>)
        TOPOKPM_CUBLAS(cublasZgeam(w.blas(), CUBLAS_OP_N, CUBLAS_OP_N, m, n, cu(&one), cu(c), ldc, cu(&minus_one),
                                   cu(b), ldb, cu(c), ldc));
    else
        TOPOKPM_CUBLAS(cublasCgeam(w.blas(), CUBLAS_OP_N, CUBLAS_OP_N, m, n, cu(&one), cu(c), ldc, cu(&minus_one),
                                   cu(b), ldb, cu(c), ldc));
}

template <class T>
void copy_matrix(Worker& w, int m, int n, const T* src, int lds, T* dst, int ldd, cudaMemcpyKind kind)
{
    if (m == 0 || n == 0) return;
    TOPOKPM_CUDA_CHECK(cudaMemcpy2DAsync(dst, std::size_t(ldd) * sizeof(T), src, std::size_t(lds) * sizeof(T),
                                         std::size_t(m) * sizeof(T), std::size_t(n), kind, w.stream()));
}

// ---- the table's entries ----

template <class T>
int potrf(void* queue, int n, T* a, int lda)
{
    if (n == 0) return 0;
    Worker& w = Worker::on(stream_of(queue));
    int lwork = 0;
    if constexpr (is_double<T>) {
        TOPOKPM_CUSOLVER(cusolverDnZpotrf_bufferSize(w.solver(), CUBLAS_FILL_MODE_LOWER, n, cu(a), lda, &lwork));
        TOPOKPM_CUSOLVER(cusolverDnZpotrf(w.solver(), CUBLAS_FILL_MODE_LOWER, n, cu(a), lda, cu(w.scratch<T>(lwork)),
                                          lwork, w.device_info()));
    } else {
        TOPOKPM_CUSOLVER(cusolverDnCpotrf_bufferSize(w.solver(), CUBLAS_FILL_MODE_LOWER, n, cu(a), lda, &lwork));
        TOPOKPM_CUSOLVER(cusolverDnCpotrf(w.solver(), CUBLAS_FILL_MODE_LOWER, n, cu(a), lda, cu(w.scratch<T>(lwork)),
                                          lwork, w.device_info()));
    }
    // devInfo = i > 0: the leading minor of order i is not positive (as LAPACK's info).
    const int info = w.info();
    TOPOKPM_REQUIRE(info >= 0, "cusolverDn potrf rejected argument ", -info);
    return info;
}

template <class T>
void trsm_right_lower_conj(void* queue, int m, int n, const T* l, int ldl, T* b, int ldb)
{
    if (m == 0 || n == 0) return;
    Worker& w = Worker::on(stream_of(queue));
    const T one(1);
    if constexpr (is_double<T>)
        TOPOKPM_CUBLAS(cublasZtrsm(w.blas(), CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C,
                                   CUBLAS_DIAG_NON_UNIT, m, n, cu(&one), cu(l), ldl, cu(b), ldb));
    else
        TOPOKPM_CUBLAS(cublasCtrsm(w.blas(), CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C,
                                   CUBLAS_DIAG_NON_UNIT, m, n, cu(&one), cu(l), ldl, cu(b), ldb));
}

template <class T>
void herk_minus(void* queue, int n, int k, const T* a, int lda, T* c, int ldc)
{
    if (n == 0) return;
    Worker& w = Worker::on(stream_of(queue));
    if constexpr (is_double<T>) {
        const double minus_one = -1, one = 1;
        TOPOKPM_CUBLAS(cublasZherk(w.blas(), CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &minus_one, cu(a), lda, &one,
                                   cu(c), ldc));
    } else {
        const float minus_one = -1, one = 1;
        TOPOKPM_CUBLAS(cublasCherk(w.blas(), CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &minus_one, cu(a), lda, &one,
                                   cu(c), ldc));
    }
}

template <class T>
void gemm_minus_conj(void* queue, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T* c, int ldc)
{
    Worker& w = Worker::on(stream_of(queue));
    gemm<T>(w, CUBLAS_OP_N, CUBLAS_OP_C, m, n, k, T(-1), a, lda, b, ldb, T(1), c, ldc);
}

/// A matrix operand of a host-staged kernel: rows x cols at `device` with leading dimension ld.
template <class T>
struct Operand {
    const T* device;
    int ld, rows, cols;
    bool written;
};

/// Runs `cpu_kernel(host pointers)` on page-locked copies of the operands (leading
/// dimension = rows), then copies the written ones back; returns when they are on the device.
template <class T, std::size_t N, class F>
void on_host(Worker& w, const Operand<T> (&ops)[N], F cpu_kernel)
{
    std::size_t total = 0;
    for (const auto& op : ops) total += std::size_t(std::max(op.rows, 1)) * op.cols;
    T* buffer = w.host<T>(total);
    T* host[N];
    std::size_t at = 0;
    for (std::size_t i = 0; i < N; ++i) {
        host[i] = buffer + at;
        at += std::size_t(std::max(ops[i].rows, 1)) * ops[i].cols;
        copy_matrix(w, ops[i].rows, ops[i].cols, ops[i].device, ops[i].ld, host[i], std::max(ops[i].rows, 1),
                    cudaMemcpyDeviceToHost);
    }
    TOPOKPM_CUDA_CHECK(cudaStreamSynchronize(w.stream()));
    cpu_kernel(host);
    for (std::size_t i = 0; i < N; ++i)
        if (ops[i].written)
            copy_matrix(w, ops[i].rows, ops[i].cols, static_cast<const T*>(host[i]), std::max(ops[i].rows, 1),
                        const_cast<T*>(ops[i].device), ops[i].ld, cudaMemcpyHostToDevice);
    // The buffer is reused by the next staged call of this thread.
    TOPOKPM_CUDA_CHECK(cudaStreamSynchronize(w.stream()));
}

template <class T>
void geqrt(void* queue, int m, int n, int ib, T* a, int lda, T* t, int ldt)
{
    Worker& w = Worker::on(stream_of(queue));
    const int k = std::min(m, n);
    const Operand<T> ops[] = {{a, lda, m, n, true}, {t, ldt, std::min(ib, ldt), k, true}};
    on_host(w, ops, [&](T* const* h) { cpu::geqrt(m, n, ib, h[0], std::max(m, 1), h[1], std::max(ops[1].rows, 1)); });
}

template <class T>
void tpqrt(void* queue, int m, int n, int l, int ib, T* a, int lda, T* b, int ldb, T* t, int ldt)
{
    Worker& w = Worker::on(stream_of(queue));
    const Operand<T> ops[] = {{a, lda, n, n, true}, {b, ldb, m, n, true}, {t, ldt, std::min(ib, ldt), n, true}};
    on_host(w, ops, [&](T* const* h) {
        cpu::tpqrt(m, n, l, ib, h[0], std::max(n, 1), h[1], std::max(m, 1), h[2], std::max(ops[2].rows, 1));
    });
}

/// Block j of the compact-WY factor: columns [i, i + kb) of V and T (T_j = kb x kb upper
/// triangular at T + i ldt). Blocks go first to last for Q^H (trans 'C'), last to first
/// for Q, as in LAPACK's xGEMQRT/xTPMQRT.
template <class F>
void for_each_block(char trans, int k, int ib, F apply)
{
    const int nb = std::max(1, std::min(ib, k));
    if (trans == 'C') {
        for (int i = 0; i < k; i += nb) apply(i, std::min(nb, k - i));
    } else {
        for (int i = ((k - 1) / nb) * nb; i >= 0; i -= nb) apply(i, std::min(nb, k - i));
    }
}

template <class T>
void gemqrt(void* queue, char trans, int m, int n, int k, int ib, const T* v, int ldv, const T* t, int ldt, T* c,
            int ldc)
{
    const cublasOperation_t op = op_of(trans);
    if (m == 0 || n == 0 || k == 0) return;
    Worker& w = Worker::on(stream_of(queue));
    const int nb = std::max(1, std::min(ib, k));
    T* w1 = w.scratch<T>(2 * std::size_t(nb) * n);
    T* w2 = w1 + std::size_t(nb) * n;
    // H_j = I - V_j T_j V_j^H with V_j = [V1 (kb x kb unit lower); V2]; C_j = rows i.. of C.
    for_each_block(trans, k, ib, [&](int i, int kb) {
        const T* v1 = v + i + std::size_t(i) * ldv;
        const T* v2 = v1 + kb;
        const T* tj = t + std::size_t(i) * ldt;
        T* c1 = c + i;
        T* c2 = c1 + kb;
        const int r2 = m - i - kb;
        trmm_left(w, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, CUBLAS_DIAG_UNIT, kb, n, v1, ldv, c1, ldc, w1, nb);
        gemm<T>(w, CUBLAS_OP_C, CUBLAS_OP_N, kb, n, r2, T(1), v2, ldv, c2, ldc, T(1), w1, nb);      // W = V^H C
        trmm_left(w, CUBLAS_FILL_MODE_UPPER, op, CUBLAS_DIAG_NON_UNIT, kb, n, tj, ldt, w1, nb, w2, nb);  // op(T) W
        gemm<T>(w, CUBLAS_OP_N, CUBLAS_OP_N, r2, n, kb, T(-1), v2, ldv, w2, nb, T(1), c2, ldc);     // C2 -= V2 W
        trmm_left(w, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, kb, n, v1, ldv, w2, nb, w1, nb);
        subtract(w, kb, n, w1, nb, c1, ldc);                                                            // C1 -= V1 W
    });
}

template <class T>
void tpmqrt(void* queue, char trans, int m, int n, int k, int l, int ib, const T* v, int ldv, const T* t, int ldt,
            T* a, int lda, T* b, int ldb)
{
    const cublasOperation_t op = op_of(trans);
    if (n == 0 || k == 0) return;
    // Only the rectangular V of TSMQR is on the GPU: the triangular one (l > 0, TTMQR) is
    // used by the block-cyclic QR and TSQR, which refuse a cuda device.
    TOPOKPM_REQUIRE(l == 0, "the CUDA tpmqrt takes l = 0 (TSMQR) only, got l = ", l);
    Worker& w = Worker::on(stream_of(queue));
    const int nb = std::max(1, std::min(ib, k));
    T* w1 = w.scratch<T>(2 * std::size_t(nb) * n);
    T* w2 = w1 + std::size_t(nb) * n;
    // H_j = I - [I; V_j] T_j [I; V_j]^H on [A_j; B], A_j = rows [i, i + kb) of A.
    for_each_block(trans, k, ib, [&](int i, int kb) {
        const T* vj = v + std::size_t(i) * ldv;
        const T* tj = t + std::size_t(i) * ldt;
        T* aj = a + i;
        copy_matrix(w, kb, n, static_cast<const T*>(aj), lda, w1, nb, cudaMemcpyDeviceToDevice);
        gemm<T>(w, CUBLAS_OP_C, CUBLAS_OP_N, kb, n, m, T(1), vj, ldv, b, ldb, T(1), w1, nb);        // W = A_j + V^H B
        trmm_left(w, CUBLAS_FILL_MODE_UPPER, op, CUBLAS_DIAG_NON_UNIT, kb, n, tj, ldt, w1, nb, w2, nb);  // op(T) W
        subtract(w, kb, n, w2, nb, aj, lda);                                                            // A_j -= W
        gemm<T>(w, CUBLAS_OP_N, CUBLAS_OP_N, m, n, kb, T(-1), vj, ldv, w2, nb, T(1), b, ldb);      // B -= V W
    });
}

}  // namespace

template <class T>
const TileKernels<T>& table()
{
    static const TileKernels<T> kernels{potrf<T>, trsm_right_lower_conj<T>, herk_minus<T>, gemm_minus_conj<T>,
                                        geqrt<T>, gemqrt<T>,               tpqrt<T>,      tpmqrt<T>};
    return kernels;
}

template const TileKernels<complex_double>& table<complex_double>();
template const TileKernels<complex_single>& table<complex_single>();

}  // namespace topokpm::numerics::kernels::cuda
