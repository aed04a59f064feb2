#pragma once
/// @file dense_kernels.hpp
/// Per-tile kernels of the tile Cholesky and QR factorizations (docs/dense.md), the
/// contract every backend implements. All tiles are column major with leading dimension
/// `ld*` >= rows. T is complex_double or complex_single. The CPU backend
/// (numerics/cpu/dense_kernels.cpp) calls LAPACKE/CBLAS; each call runs on the calling
/// thread only when that thread has omp_set_num_threads(1) (the dataflow runtime's
/// workers do). A CUDA backend would declare the same functions in kernels::cuda.
///
/// Flops (LAWN 41, complex: 6 real flops per complex multiply-add) are counted by the
/// callers, not here.

#include "numerics/base/types.hpp"

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
