// The two-index trace's cuda store in builds without the CUDA backend: the entry point
// make_two_index_store calls, throwing NotCompiled when reached.
#include "numerics/kpm/two_index_store.hpp"
#include "runtime/base/error.hpp"
#include "topokpm/config.hpp"

static_assert(!TOPOKPM_HAVE_CUDA, "numerics/cuda/two_index_stubs.cpp is only built without the CUDA backend");

namespace topokpm::numerics {

std::unique_ptr<TwoIndexStore> make_cuda_two_index_store(int, global_index, int, int, int)
{
    throw NotCompiled("cuda", __func__);
}

}  // namespace topokpm::numerics
