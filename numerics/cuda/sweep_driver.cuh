#pragma once
// Host-side driver shared by the SELL and stencil sweeps: strip-mining over the compiled
// widths, launch geometry (a grid that fills the GPU once), the second-stage dot reduction
// and the copy of the sums to the host.

#include <cuda_runtime.h>

#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "numerics/cuda/augmented_common.cuh"
#include "numerics/spmmv/reduce_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"
#include "runtime/device/cuda_check.hpp"

namespace topokpm::numerics::kernels::cuda::detail {

/// Sums partials[(q * grid + b) * w + c] over b in fixed order (CUB BlockReduce) into
/// results[q * R + c0 + c], for q = 0, 1, 2 and c < w. One block per (c, q).
void launch_reduce_partials(const double* partials, int grid, int w, double* results, int num_cols, int c0);

/// Resident blocks of `kernel` on the current device at block_threads threads: the grid
/// of a grid-stride sweep. Cached per kernel, by its address: every instance of a kernel
/// template with one parameter list has the same type, and their register counts differ
/// (the single site kernel: 64 registers with one column per thread, 102 with two), so a
/// cache per type gave every instance the occupancy of the first one launched. One device
/// per process in this backend.
template <class Kernel>
int resident_grid(Kernel kernel)
{
    static std::mutex mutex;
    static std::map<const void*, int> blocks;
    const void* key = reinterpret_cast<const void*>(kernel);
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = blocks.find(key);
    if (it != blocks.end()) return it->second;
    int device = 0, sms = 0, per_sm = 0;
    TOPOKPM_CUDA_CHECK(cudaGetDevice(&device));
    TOPOKPM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    TOPOKPM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block_threads, 0));
    return blocks[key] = sms * (per_sm > 0 ? per_sm : 1);
}

/// The launch the kernel choosers (sell::with_sell_kernel, stencil::with_stencil_kernel) hand
/// their kernel to: `kernel(view, x, y, s, partials)` over `units` of `per_unit` threads, on
/// the grid of its resident blocks (the kernels stride over their tiles), with `shared` bytes
/// of dynamic shared memory and, where Dots, the workspace's dot partials (3 x grid x W);
/// returns the grid, as run_strips' launch does.
template <int W, bool Dots, class View, class V2>
auto grid_launch(const View& view, const V2* x, V2* y, const SweepScalars& s, DotWorkspace& workspace)
{
    return [&view, x, y, &s, &workspace](auto kernel, std::int64_t units, int per_unit, std::size_t shared) {
        const int grid = grid_for(units, per_unit, resident_grid(kernel));
        double* partials = Dots ? workspace.partials(3 * static_cast<std::size_t>(grid) * W) : nullptr;
        kernel<<<grid, block_threads, shared>>>(view, x, y, s, partials);
        return grid;
    };
}

/// Whether single-precision sweeps may pair columns (two per thread: the site kernel of
/// stencil_device.cuh, the SELL kernel of sell_device.cuh): yes, unless the environment sets
/// TOPOKPM_CUDA_PAIRED_COLUMNS=0. A measurement switch, read once: the device check runs the
/// single R = 32 sweep both ways until a GPU has measured the pairing (written without one);
/// it then goes, with the losing variant.
inline bool pairing_allowed()
{
    static const bool allowed = [] {
        const char* v = std::getenv("TOPOKPM_CUDA_PAIRED_COLUMNS");
        return v == nullptr || std::string(v) != "0";
    }();
    return allowed;
}

/// Consecutive tiles per block visit (for_each_tile). Measured on H100 (ti 200x200x40,
/// docs/cuda_backend.md): pure grid-stride (1) is best or within 5 % for every width of both
/// kernels (groups of 2, 4, 16 tiles: up to 20 % slower for the stencil at R = 32, up to 5 %
/// faster for SELL at R = 16, 32), so every width takes 1 (the environment knob of that scan
/// is gone; for_each_tile still takes any group).
inline int tile_group(int w)
{
    (void)w;
    return 1;
}

/// Runs one sweep as strips. `launch(width, scalars, dots_tag) -> grid` launches the kernel
/// of compile-time width W = decltype(width)::value (a registered width: strip_widths gives
/// no other) for columns [c0, c0 + W) and returns its grid size; dots_tag is std::true_type
/// when the kernel must write its dot partials, std::false_type otherwise. With
/// DotsKernelsOnly (single precision: only the dots kernels are instantiated, as every sweep
/// of KPM, Lanczos and the rate probe wants dots) it is always std::true_type and a sweep
/// without dots drops the partials.
template <bool DotsKernelsOnly = false, class LaunchStrip>
SweepInfo run_strips(int num_cols, const AugmentedOps& ops, DotWorkspace& workspace, DotSums* dots,
                     LaunchStrip&& launch)
{
    TOPOKPM_REQUIRE(num_cols >= 1, "a CUDA sweep of ", num_cols, " columns");
    SweepInfo info;
    info.strip_widths = strip_widths(num_cols);
    info.specialised = info.strip_widths.size() == 1;
    const bool want_dots = ops.want_dots && dots != nullptr;
    double* results = want_dots ? workspace.results(3 * static_cast<std::size_t>(num_cols)) : nullptr;
    int c0 = 0;
    for (const int w : info.strip_widths) {
        const SweepScalars s{ops.scale, ops.shift, ops.beta, num_cols, c0, tile_group(w)};
        const auto at_width = [&](auto dots_tag) {
            return with_width(w, [&](auto width) {
                constexpr int W = decltype(width)::value;
                TOPOKPM_REQUIRE(W > 0, "no CUDA kernel for strip width ", w);  // 0: the generic width
                return launch(std::integral_constant<int, (W > 0 ? W : 1)>{}, s, dots_tag);
            });
        };
        int grid = 0;
        if constexpr (DotsKernelsOnly) grid = at_width(std::true_type{});
        else grid = want_dots ? at_width(std::true_type{}) : at_width(std::false_type{});
        TOPOKPM_CUDA_CHECK(cudaGetLastError());
        if (want_dots) launch_reduce_partials(workspace.partials(0), grid, w, results, num_cols, c0);
        c0 += w;
    }
    if (want_dots) {
        std::vector<double> host(3 * static_cast<std::size_t>(num_cols));
        // cudaMemcpy waits for the sweep: the dots are what KPM needs before the next one.
        TOPOKPM_CUDA_CHECK(cudaMemcpy(host.data(), results, host.size() * sizeof(double), cudaMemcpyDeviceToHost));
        dots->reset(num_cols);
        for (int c = 0; c < num_cols; ++c) {
            dots->xx[c] = host[c];
            dots->yx[c] = complex_type(host[num_cols + c], host[2 * num_cols + c]);
        }
    }
    return info;
}

}  // namespace topokpm::numerics::kernels::cuda::detail
