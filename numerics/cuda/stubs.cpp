// The CUDA operators in builds without the CUDA backend (TOPOKPM_CUDA=OFF or no nvcc):
// the same entry points, so every call site compiles, throwing NotCompiled when reached.
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/cuda_operator.hpp"
#include "runtime/base/error.hpp"
#include "topokpm/config.hpp"

static_assert(!TOPOKPM_HAVE_CUDA, "numerics/cuda/stubs.cpp is only built without the CUDA backend");

namespace topokpm::numerics {

std::unique_ptr<Operator> make_cuda_sell_operator(std::shared_ptr<const SellMatrix>, int)
{
    throw NotCompiled("cuda", __func__);
}

std::unique_ptr<Operator> make_cuda_sell_operator(std::shared_ptr<const BasicSellMatrix<complex_single>>, int)
{
    throw NotCompiled("cuda", __func__);
}

std::unique_ptr<Operator> make_cuda_stencil_operator(const BlockStencil&, int, Precision)
{
    throw NotCompiled("cuda", __func__);
}

}  // namespace topokpm::numerics

namespace topokpm::numerics::kernels::cuda {

template <class T>
void random_phase_values(T*, global_index, int, int, std::uint64_t, std::int64_t, global_index, global_index)
{
    throw NotCompiled("cuda", "random_phase_values");
}

template void random_phase_values(complex_double*, global_index, int, int, std::uint64_t, std::int64_t, global_index,
                                  global_index);
template void random_phase_values(complex_single*, global_index, int, int, std::uint64_t, std::int64_t, global_index,
                                  global_index);

}  // namespace topokpm::numerics::kernels::cuda
