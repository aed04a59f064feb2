// The CUDA tile kernel table (numerics/dense/dense_kernels.hpp) in builds without the
// CUDA backend: asking for it throws NotCompiled.
#include "numerics/dense/dense_kernels.hpp"
#include "runtime/base/error.hpp"
#include "topokpm/config.hpp"

static_assert(!TOPOKPM_HAVE_CUDA, "numerics/cuda/dense_stubs.cpp is only built without the CUDA backend");

namespace topokpm::numerics::kernels::cuda {

template <class T>
const TileKernels<T>& table()
{
    throw NotCompiled("cuda", "numerics::kernels::cuda::table (dense tile kernels)");
}

template const TileKernels<complex_double>& table<complex_double>();
template const TileKernels<complex_single>& table<complex_single>();

}  // namespace topokpm::numerics::kernels::cuda
