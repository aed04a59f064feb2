#pragma once
/// @file two_index_kernels.hpp
/// The CUDA kernel of the two-index trace's cuda store (numerics/cuda/two_index_cuda.cpp,
/// numerics/kpm/two_index_store.hpp), plain C++: implemented by two_index_kernels.cu, CUDA
/// builds only. Pointers are device pointers of the current device.

#include <cstdint>

#include "numerics/base/types.hpp"

namespace topokpm::numerics::kernels::cuda {

/// to[c * n + j] = from[j * w + c] for j < n, c < w: a row-major N x W block (BlockVector's
/// layout) into its W columns one after another. Queued on the legacy default stream, where
/// the CUDA operators sweep and cuBLAS's default handle works.
void transpose_columns(const complex_type* from, std::int64_t n, int w, complex_type* to);

}  // namespace topokpm::numerics::kernels::cuda
