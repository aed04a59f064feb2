// The distributed operator's CUDA halo (numerics/distributed/halo_kernels.hpp) in builds
// without the CUDA backend: asking for it throws NotCompiled.
#include "numerics/distributed/halo_kernels.hpp"
#include "runtime/base/error.hpp"
#include "topokpm/config.hpp"

static_assert(!TOPOKPM_HAVE_CUDA, "numerics/cuda/halo_stubs.cpp is only built without the CUDA backend");

namespace topokpm::numerics::kernels::cuda {

template <class T>
void gather_rows(const local_index*, std::int64_t, int, const T*, T*, Stream)
{
    throw NotCompiled("cuda", __func__);
}

template <class T>
void remote_correction(std::int64_t, int, const local_index*, const std::int64_t*, const local_index*,
                       const complex_type*, const T*, const T*, T*, double, complex_type*, complex_type*, Stream)
{
    throw NotCompiled("cuda", __func__);
}

template <class T>
std::unique_ptr<BasicHaloDevice<T>> make_cuda_halo_device(HaloPattern, int)
{
    throw NotCompiled("cuda", __func__);
}

#define TOPOKPM_HALO_STUBS(T)                                                                                       \
    template void gather_rows(const local_index*, std::int64_t, int, const T*, T*, Stream);                         \
    template void remote_correction(std::int64_t, int, const local_index*, const std::int64_t*, const local_index*, \
                                    const complex_type*, const T*, const T*, T*, double, complex_type*,             \
                                    complex_type*, Stream);                                                         \
    template std::unique_ptr<BasicHaloDevice<T>> make_cuda_halo_device(HaloPattern, int);
TOPOKPM_HALO_STUBS(complex_double)
TOPOKPM_HALO_STUBS(complex_single)
#undef TOPOKPM_HALO_STUBS

}  // namespace topokpm::numerics::kernels::cuda
