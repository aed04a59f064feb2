// The distributed operator's CUDA halo (numerics/distributed/halo_kernels.hpp) in builds
// without the CUDA backend: asking for it throws NotCompiled.
#include "numerics/distributed/halo_kernels.hpp"
#include "runtime/base/error.hpp"
#include "topokpm/config.hpp"

static_assert(!TOPOKPM_HAVE_CUDA, "numerics/cuda/halo_stubs.cpp is only built without the CUDA backend");

namespace topokpm::numerics::kernels::cuda {

void gather_rows(const local_index*, std::int64_t, int, const complex_type*, complex_type*, Stream)
{
    throw NotCompiled("cuda", __func__);
}

void remote_correction(std::int64_t, int, const local_index*, const std::int64_t*, const local_index*,
                       const complex_type*, const complex_type*, const complex_type*, complex_type*, double,
                       complex_type*, complex_type*, Stream)
{
    throw NotCompiled("cuda", __func__);
}

std::unique_ptr<HaloDevice> make_cuda_halo_device(HaloPattern, int) { throw NotCompiled("cuda", __func__); }

}  // namespace topokpm::numerics::kernels::cuda
