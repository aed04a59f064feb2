#pragma once
/// @file halo_kernels.hpp
/// The CUDA contract of the distributed operator's device halo (halo_device.hpp), plain
/// C++: implemented by numerics/cuda/halo_kernels.cu and halo_device_cuda.cpp in CUDA
/// builds, by numerics/cuda/halo_stubs.cpp (NotCompiled) otherwise. Every pointer below is
/// a device pointer of the current device; row-major blocks, element (i, c) at [i * r + c].
/// Both launchers are asynchronous on `stream` (a cudaStream_t; nullptr is the legacy default
/// stream, on which the local SpMMV operators run).

#include <cstdint>
#include <memory>

#include "numerics/base/types.hpp"
#include "numerics/distributed/halo_device.hpp"

struct CUstream_st;  // cudaStream_t without a CUDA header

namespace topokpm::numerics::kernels::cuda {

using Stream = CUstream_st*;

/// out[k * r + c] = x[rows[k] * r + c] for k < count, c < r. T = complex_double or
/// complex_single (--precision single: the blocks and the halo in float).
template <class T>
void gather_rows(const local_index* rows, std::int64_t count, int r, const T* x, T* out, Stream stream);

/// For every remote row i < num_rows and column c < r:
///     d = scale * sum_{e = ptr[i]}^{ptr[i+1]-1} vals[e] * halo[col[e] * r + c]    (in double)
///     y[row[i] * r + c] += d;   corr[i * r + c] = d;   xg[i * r + c] = x[row[i] * r + c]
/// (corr and xg null: not written). The rows row[] are distinct, so no two threads write
/// one y entry. <corr|xg> per column is this rank's remote share of yx. T = complex_single:
/// the float halo is widened, y + d is rounded once to float and corr is the change y took,
/// y_new - y_old in double (remote_correction_host's arithmetic); corr and xg are double
/// in both precisions.
template <class T>
void remote_correction(std::int64_t num_rows, int r, const local_index* row, const std::int64_t* ptr,
                       const local_index* col, const complex_type* vals, const T* halo, const T* x, T* y,
                       double scale, complex_type* corr, complex_type* xg, Stream stream);

/// The CUDA HaloDevice of halo_device.hpp on device `device` (uploads the pattern), in T's
/// precision.
template <class T>
std::unique_ptr<BasicHaloDevice<T>> make_cuda_halo_device(HaloPattern pattern, int device);

}  // namespace topokpm::numerics::kernels::cuda
