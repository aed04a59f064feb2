// cuda_memory_space.hpp in builds without the CUDA backend.
#include "runtime/device/cuda_memory_space.hpp"
#include "runtime/base/error.hpp"
#include "topokpm/config.hpp"

static_assert(!TOPOKPM_HAVE_CUDA, "cuda_memory_space_stub.cpp is only built without the CUDA backend");

namespace topokpm::device {

std::unique_ptr<tasks::MemorySpace> make_cuda_memory_space(int) { throw NotCompiled("cuda", __func__); }

}  // namespace topokpm::device
