#pragma once
/// @file two_index_store.hpp
/// The device seam of the two-index trace (two_index.hpp): WHERE it keeps its vectors and
/// HOW it forms a batch's products. two_index_moments() is written once against it; the
/// store only holds vectors and multiplies them.
///
/// A store of a trace of N rows, block width W, M moments and batches of B left vectors
/// keeps M right vectors R_i and B left vectors L_l, each an N x W block transposed per
/// column: column c of vector i at (i W + c) N, so the N x M matrix of one column's R_i has
/// the leading dimension W N (likewise the L_l). products() forms, per column c, the B' x M
/// matrix L_c^H R_c over the N rows (B' <= B: the batch filled so far) by one ZGEMM and
/// copies it to host memory; the trace adds it to its double sums on the host, in the same
/// order whatever the store.
///
///   device                  store    the kept vectors                 transposes, ZGEMM
///   device::no_device (-1)  host     host arrays                       CPU loops on data(), cblas_zgemm
///   device::host_standin    standin  separate host arrays ("device")   the same, reading the blocks'
///                                                                     host-standin mirrors (never their
///                                                                     host arrays): the device path's
///                                                                     logic without a GPU (tests)
///   d >= 0 (a CUDA device)  cuda     device buffers on d               a transpose kernel on the blocks'
///                                                                     CUDA mirrors, cublasZgemm; only the
///                                                                     B' x M products per column copied back
///
/// Pick the store from where H runs (the run's numerics::OperatorSpec: the device of its
/// operator); H, v_a and v_b then leave their blocks there, so no block crosses the bus
/// during the recurrences. The cuda store needs (M + B) N W + W B M complex doubles of free
/// memory on d (two_index_store_bytes; ResourceError before allocating otherwise),
/// is NotCompiled in CPU-only builds, and its ZGEMM sums each column's products in cuBLAS's
/// order: the moments equal the host store's to rounding, not bit for bit. The host and
/// stand-in stores give identical bits. A store is used by one host thread.

#include <memory>
#include <string>

#include "numerics/base/block_vector.hpp"
#include "numerics/base/types.hpp"

namespace topokpm::numerics {

class TwoIndexStore {
public:
    virtual ~TwoIndexStore() = default;
    /// "host", "host-standin" or "cuda:D".
    virtual std::string name() const = 0;
    /// Keeps `v` (N x W, read where its operator left it) as R_i, 0 <= i < M.
    virtual void keep_right(int i, const BlockVector& v) = 0;
    /// Keeps `v` as L_l of the batch, 0 <= l < B.
    virtual void keep_left(int l, const BlockVector& v) = 0;
    /// For every column c < `columns` (<= W): out[c B M + j B + l] = sum over the rows r of
    /// conj(L_l(r, c)) R_j(r, c), l < `filled` (<= B), j < M; `out` holds W B M values (host).
    virtual void products(int filled, int columns, complex_type* out) = 0;
};

/// The store for `device` (table above). InputError for an index that is none of the three,
/// NotCompiled for a CUDA device in a CPU-only build, ResourceError when the cuda store does
/// not fit the device's free memory, InputError when N W exceeds the 32-bit leading dimension
/// of BLAS (naming --block-width).
std::unique_ptr<TwoIndexStore> make_two_index_store(int device, global_index rows, int width, int num_moments,
                                                    int batch);

/// Bytes of a store (on the host or its device) and of one batch's products: (M + B) N W +
/// W B M values of 16 bytes.
double two_index_store_bytes(global_index rows, int width, int num_moments, int batch);

/// The cuda store (numerics/cuda/two_index_cuda.cpp; NotCompiled in CPU-only builds,
/// numerics/cuda/two_index_stubs.cpp). Called by make_two_index_store only.
std::unique_ptr<TwoIndexStore> make_cuda_two_index_store(int device, global_index rows, int width, int num_moments,
                                                         int batch);

}  // namespace topokpm::numerics
