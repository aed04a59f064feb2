#pragma once
/// @file backends.hpp
/// Which backends this build and this machine can run, with the reason when one cannot,
/// so backend tests skip *visibly* (CTest lists them as skipped, the log says why).

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "runtime/device/device.hpp"
#include "topokpm/config.hpp"

namespace topokpm::testing {

/// True when the CUDA kernels are compiled in (TOPOKPM_HAVE_CUDA).
inline constexpr bool cuda_compiled = TOPOKPM_HAVE_CUDA != 0;

/// Why CUDA tests cannot run here ("no CUDA device visible: cudaGetDeviceCount returned 35
/// (...)" or "this build has no CUDA kernels (...)"), or nullopt when device 0 is usable.
inline std::optional<std::string> cuda_unavailable_reason()
{
    std::string why;
    if (device::visible_device_count(&why) > 0) return std::nullopt;
    if (!cuda_compiled) return why;
    return "no CUDA device visible: " + why;
}

}  // namespace topokpm::testing

/// GTEST_SKIP()s the current test, with the reason, unless a CUDA device is usable.
#define TOPOKPM_SKIP_UNLESS_CUDA_DEVICE()                                              \
    do {                                                                               \
        if (const auto topokpm_skip_reason_ = ::topokpm::testing::cuda_unavailable_reason()) \
            GTEST_SKIP() << *topokpm_skip_reason_;                                     \
    } while (0)
