#pragma once
/// @file dense_kernels.hpp
/// Per-tile kernels of the tile Cholesky and QR factorizations (docs/dense.md), the
/// contract every backend implements. All tiles are column major with leading dimension
/// `ld*` >= rows. T is complex_double or complex_single. The CPU backend
/// (numerics/cpu/dense_kernels.cpp) calls LAPACKE/CBLAS; each call runs on the calling
/// thread only when that thread has omp_set_num_threads(1) (the dataflow runtime's
/// workers do). The algorithms call them through the per-device table TileKernels
/// (tile_kernels(kind)), so one task body serves the host and a CUDA worker.
///
/// Flops (LAWN 41, complex: 6 real flops per complex multiply-add) are counted by the
/// callers, not here.

#include "numerics/base/types.hpp"
#include "runtime/tasks/dataflow.hpp"

namespace topokpm::numerics::kernels::cpu {

/// Lower Cholesky in place: A = L L^H of the n x n tile (upper triangle untouched).
/// Returns 0, or the 1-based order of the first leading minor that is not positive.
template <class T>
int potrf(int n, T* a, int lda);

/// B := B L^{-H} (right side, L lower n x n, B m x n): the TRSM of tile Cholesky.
template <class T>
void trsm_right_lower_conj(int m, int n, const T* l, int ldl, T* b, int ldb);

/// C := C - A A^H on the lower triangle (C n x n, A n x k): the HERK update.
template <class T>
void herk_minus(int n, int k, const T* a, int lda, T* c, int ldc);

/// C := C - A B^H (C m x n, A m x k, B n x k): the GEMM update.
template <class T>
void gemm_minus_conj(int m, int n, int k, const T* a, int lda, const T* b, int ldb, T* c, int ldc);

/// C := alpha A^H B + beta C (C n x k, A m x n, B m x k).
template <class T>
void gemm_conj_plain(int n, int k, int m, T alpha, const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc);

/// Householder QR of the m x n tile with inner block ib (xGEQRT): R on and above the
/// diagonal, V below, the ib x min(m,n) block reflector factors in T (ldt >= ib).
template <class T>
void geqrt(int m, int n, int ib, T* a, int lda, T* t, int ldt);

/// Widest block geqrt_recursive factors unblocked.
inline constexpr int kGeqrtBaseColumns = 16;

/// The result of geqrt(m, n, ib = n, ...) (one n x n block reflector: R, V below it, T
/// upper triangular; m >= n, ldt >= n) by xGEQRT3's recursion on column halves, but with
/// blocks of <= kGeqrtBaseColumns columns factored unblocked instead of recursing to single
/// columns: the same reflectors to rounding, faster on tall blocks. The leaf QR of TSQR.
/// The unblocked kernel does xGEQR2 + xLARFT's work in n + 1 passes over the rows (one per
/// reflector, where xGEQR2 makes three); a column whose sum of squares leaves the normal
/// range (below min / eps, or not finite) and the columns after it go to LAPACK's scaled
/// xGEQR2, and T then to xLARFT. Where both halves of a recursion step are unblocked, the
/// kernel also forms the step's m-long products V_1^H A_2 (left half) and V_1^H V_2 (right
/// half) in its last pass instead of two GEMMs (the same multiply-adds; LAPACK's path where a
/// column went to xGEQR2). The result's bits do not depend on where the block lies
/// in memory (the unblocked kernel aligns its vectors to the address but sums each row in
/// the same order), so copies of one block factor identically.
template <class T>
void geqrt_recursive(int m, int n, T* a, int lda, T* t, int ldt);

/// C := op(Q) C for the Q of geqrt (xGEMQRT, left side); op = 'N' or 'C'. V is m x k.
template <class T>
void gemqrt(char trans, int m, int n, int k, int ib, const T* v, int ldv, const T* t, int ldt, T* c, int ldc);

/// QR of [R; B] with R n x n upper triangular (in A) and B m x n (xTPQRT, l = 0 for a
/// full B, l = n for an upper-triangular B): R updated, V in B, factors in T.
template <class T>
void tpqrt(int m, int n, int l, int ib, T* a, int lda, T* b, int ldb, T* t, int ldt);

/// [A; B] := op(Q) [A; B] for the Q of tpqrt (xTPMQRT, left side; A k x n, B m x n,
/// V m x k); op = 'N' or 'C'.
template <class T>
void tpmqrt(char trans, int m, int n, int k, int l, int ib, const T* v, int ldv, const T* t, int ldt, T* a,
            int lda, T* b, int ldb);

/// A := Q [C; 0] in place (A m x k, m >= k; C k x k), where A holds on input the
/// output of geqrt(m, k, ib = k, A, lda, T, ldt): V below its diagonal, one block
/// reflector Q = I - V T V^H with T k x k upper triangular. The explicit Q of TSQR's
/// leaves: W = T V_1^H C (V_1 the top k x k, unit lower), then A_2 = -V_2 W (one GEMM of
/// (m - k) x k x k, row chunks of V_2 staged in a per-thread buffer) and A_1 = C - V_1 W,
/// 8 m k^2 real flops (complex) against 16 m k^2 for xGEMQRT on [C; 0]. T may lie in A's
/// own upper triangle (t = a, ldt = lda: V_1 is unit lower, so its diagonal and above are
/// free once R is copied out): T is read before A is written.
template <class T>
void q_times_top(int m, int k, T* a, int lda, const T* t, int ldt, const T* c, int ldc);

/// B := B R^{-1} (R n x n upper, B m x n): the triangular solve of CholQR.
template <class T>
void trsm_right_upper(int m, int n, const T* r, int ldr, T* b, int ldb);

/// Reciprocal 1-norm condition estimate of the HPD n x n matrix whose Cholesky factor
/// (upper, A = U^H U) is in `u`, given ||A||_1 (xPOCON).
template <class T>
double pocon_upper(int n, const T* u, int ldu, double anorm);

/// Upper Cholesky in place: A = U^H U (lower triangle untouched); returns as potrf.
template <class T>
int potrf_upper(int n, T* a, int lda);

}  // namespace topokpm::numerics::kernels::cpu

namespace topokpm::numerics::kernels {

/// The task kernels of tile Cholesky and tile QR of one backend. Each entry takes the
/// executing worker's queue (TaskContext::queue; ignored on the host), then the
/// arguments of the kernels::cpu function of the same name, with pointers into the
/// executing device's memory (TaskContext::data). Entries may return before the work is
/// done (the runtime waits for the queue before the task finishes); potrf's return value
/// (0, or the order of the first non-positive leading minor) is final when it returns.
template <class T>
struct TileKernels {
    int (*potrf)(void* queue, int n, T* a, int lda);
    void (*trsm_right_lower_conj)(void* queue, int m, int n, const T* l, int ldl, T* b, int ldb);
    void (*herk_minus)(void* queue, int n, int k, const T* a, int lda, T* c, int ldc);
    void (*gemm_minus_conj)(void* queue, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T* c,
                            int ldc);
    void (*geqrt)(void* queue, int m, int n, int ib, T* a, int lda, T* t, int ldt);
    void (*gemqrt)(void* queue, char trans, int m, int n, int k, int ib, const T* v, int ldv, const T* t, int ldt,
                   T* c, int ldc);
    void (*tpqrt)(void* queue, int m, int n, int l, int ib, T* a, int lda, T* b, int ldb, T* t, int ldt);
    void (*tpmqrt)(void* queue, char trans, int m, int n, int k, int l, int ib, const T* v, int ldv, const T* t,
                   int ldt, T* a, int lda, T* b, int ldb);
};

/// The table for a device kind: the CPU kernels for host and host_memory devices, the
/// CUDA kernels (numerics/cuda/dense_kernels.cpp: cuSOLVER/cuBLAS) for cuda. Throws
/// NotCompiled for cuda in a CPU-only build.
template <class T>
const TileKernels<T>& tile_kernels(tasks::DeviceKind kind);

namespace cpu {
template <class T>
const TileKernels<T>& table();
}

namespace cuda {
/// POTRF: cusolverDn{Z,C}potrf (info read back, so it is synchronous); TRSM, HERK, GEMM:
/// cuBLAS; GEMQRT and TPMQRT: compact WY per inner block as cuBLAS TRMM/GEMM/GEAM
/// (C -= V T^H V^H C), TPMQRT for l = 0 only (DimensionMismatch otherwise); the panel
/// kernels GEQRT and TPQRT run the CPU kernel on the worker's thread on a page-locked host
/// copy of their operands (seed 001 keeps the QR panels on the host). Throws NotCompiled
/// in a CPU-only build.
template <class T>
const TileKernels<T>& table();
}  // namespace cuda

}  // namespace topokpm::numerics::kernels
