#pragma once
/// @file update_kernels.hpp
/// The kernels of one Schur-complement update of the supernodal LU (sparse_lu.hpp), the
/// contract each backend implements: GEMM W := L(R, k) U(k, R[c0:c1]) into a work array,
/// then SCATTER (panel entry -= W(i, j)) by the relative indices of a ScatterPlan, plus a
/// fill for the HALO shadow's initialization. The algorithm (numeric.cpp, halo.cpp) is
/// written once against the table of the executing worker's device kind: the CPU table
/// (numeric.cpp: CBLAS, loops) for the host and the host-memory device, the CUDA table
/// (numerics/cuda/sparse_update_kernels.cu: cuBLAS zgemm, a scatter and a fill kernel on the
/// worker's stream) for a GPU. In a CPU-only build cuda::update_kernels() throws NotCompiled.

#include <cstddef>
#include <vector>

#include "numerics/base/types.hpp"

namespace topokpm::sparse_direct {

/// One rectangle of a SCATTER: work rows [r0, r1) x work columns [j0, j1) go to
/// base[index[col_offset + j - j0] + index[row_offset + i - r0]] -= W(i, j). `base` is in the
/// executing device's memory.
struct ScatterBlock {
    complex_double* base;
    global_index r0, r1, j0, j1;
    global_index row_offset, col_offset;
};

/// The SCATTER of one update (SparseLU::scatter_plan), in host memory. No two (i, j) of one
/// plan address the same entry, so the blocks may be applied in any order or concurrently,
/// and each entry gets exactly one subtraction: the result does not depend on the backend.
struct ScatterPlan {
    std::vector<ScatterBlock> blocks;
    std::vector<global_index> index;  ///< relative indices, referenced by the blocks
    void clear()
    {
        blocks.clear();
        index.clear();
    }
};

/// The kernels of one backend. `queue` is the executing worker's TaskContext::queue (its
/// cudaStream_t for a GPU; ignored on the host); pointers are in that device's memory unless
/// stated. Entries may return before the work is done (queued on the stream); work queued
/// later on the same queue sees the results.
struct UpdateKernels {
    /// W := L U with W m x w (leading dimension ldw), L m x nc (ldl), U nc x w (ldu).
    void (*gemm)(void* queue, int m, int w, int nc, const complex_double* l, int ldl, const complex_double* u,
                 int ldu, complex_double* work, int ldw);
    /// Applies `plan` (host memory; its bases on the device) to W (leading dimension ldw).
    void (*scatter)(void* queue, const ScatterPlan& plan, const complex_double* work, int ldw);
    /// dst[0, count) := value.
    void (*fill)(void* queue, complex_double* dst, std::size_t count, complex_double value);
    /// Scratch of >= count entries on the device, owned by the calling thread, valid until
    /// its next call on that thread (a larger request may reallocate).
    complex_double* (*scratch)(void* queue, std::size_t count);
    /// Returns when everything queued on `queue` has completed (the host: at once).
    void (*synchronize)(void* queue);
    /// true: the GEMMs of a step's update pieces go into one work array, then one SCATTER
    /// (one kernel launch per step: the GPU); false: GEMM and SCATTER piece by piece (the
    /// host: the work array stays in cache).
    bool whole_step;
};

namespace cpu {
const UpdateKernels& update_kernels();
}
namespace cuda {
/// Throws NotCompiled in a CPU-only build.
const UpdateKernels& update_kernels();
}

}  // namespace topokpm::sparse_direct
