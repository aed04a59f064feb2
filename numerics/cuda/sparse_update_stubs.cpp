// The CUDA table of numerics/sparse_direct/update_kernels.hpp in builds without the CUDA
// backend: asking for it throws NotCompiled.
#include "numerics/sparse_direct/update_kernels.hpp"
#include "runtime/base/error.hpp"
#include "topokpm/config.hpp"

static_assert(!TOPOKPM_HAVE_CUDA, "numerics/cuda/sparse_update_stubs.cpp is only built without the CUDA backend");

namespace topokpm::sparse_direct::cuda {

const UpdateKernels& update_kernels()
{
    throw NotCompiled("cuda", "sparse_direct::cuda::update_kernels (HALO Schur update on a GPU)");
}

}  // namespace topokpm::sparse_direct::cuda
