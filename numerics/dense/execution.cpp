#include "numerics/dense/execution.hpp"

#include <algorithm>

#include "numerics/dense/dense_kernels.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics::dense {

int column_owner(int j, int slices, int accelerators)
{
    if (accelerators <= 0) return 0;
    if (j % slices != slices - 1) return 0;
    return 1 + (j / slices) % accelerators;
}

std::vector<int> hybrid_widths(global_index cols, int large, int slices, int host_width)
{
    TOPOKPM_USER_REQUIRE(cols >= 1, "a hybrid layout needs >= 1 column, got ", cols);
    TOPOKPM_USER_REQUIRE(slices >= 2, "{slices} must be >= 2 for hybrid tiles, got ", slices);
    TOPOKPM_USER_REQUIRE(host_width >= slices - 1 && host_width % (slices - 1) == 0 && host_width < large,
                         "{host_width} must be a positive multiple of {slices} - 1 = ", slices - 1,
                         " below the large tile size ", large, ", got ", host_width);
    const int narrow = host_width / (slices - 1);
    std::vector<int> widths;
    for (global_index c0 = 0; c0 < cols; c0 += large) {
        int left = static_cast<int>(std::min<global_index>(large, cols - c0));
        for (int d = 0; d < slices - 1 && left > 0; ++d) {
            widths.push_back(std::min(narrow, left));
            left -= widths.back();
        }
        if (left > 0) widths.push_back(left);
    }
    return widths;
}


void require_host_addressable(const DenseExecution& execution, const char* what)
{
    TOPOKPM_USER_REQUIRE(execution.device_workers == 0 || execution.device_kind != tasks::DeviceKind::cuda, what,
                         " runs on host and host-memory workers only, got {device_kind} cuda");
}

std::unique_ptr<tasks::DataflowRuntime> make_runtime(const DenseExecution& execution)
{
    TOPOKPM_USER_REQUIRE(execution.host_workers >= 1, "{host_workers} must be >= 1, got ", execution.host_workers);
    TOPOKPM_USER_REQUIRE(execution.device_workers >= 0, "{device_workers} must be >= 0, got ",
                         execution.device_workers);
    TOPOKPM_USER_REQUIRE(execution.slices >= 1, "{slices} must be >= 1, got ", execution.slices);
    TOPOKPM_USER_REQUIRE(execution.inner_block >= 1, "{inner_block} must be >= 1, got ", execution.inner_block);
    TOPOKPM_USER_REQUIRE(execution.device_kind != tasks::DeviceKind::host,
                         "{device_kind} must be host_memory or cuda (the host is device 0)");
    tasks::DataflowRuntime::Options options;
    const KernelRates& rates = execution.rates;
    TOPOKPM_USER_REQUIRE(rates.host >= 0 && rates.device >= 0 && rates.link >= 0,
                         "{rates} must be >= 0, got host ", rates.host, ", device ", rates.device, ", link ",
                         rates.link);
    // Per worker for the runtime; rated only when both sides are (else placement by owner).
    const bool rated = execution.device_workers > 0 && rates.host > 0 && rates.device > 0;
    options.devices = {tasks::DeviceConfig{tasks::DeviceKind::host, execution.host_workers, execution.host_pus, 0,
                                           rated ? rates.host / execution.host_workers : 0.0}};
    if (execution.device_workers > 0)
        options.devices.push_back(tasks::DeviceConfig{execution.device_kind, execution.device_workers,
                                                      execution.device_pus, execution.gpu,
                                                      rated ? rates.device / execution.device_workers : 0.0,
                                                      rates.link});
    options.window = execution.window;
    options.topology = execution.topology;
    return std::make_unique<tasks::DataflowRuntime>(options);
}

}  // namespace topokpm::numerics::dense

namespace topokpm::numerics::kernels {

template <class T>
const TileKernels<T>& tile_kernels(tasks::DeviceKind kind)
{
    return kind == tasks::DeviceKind::cuda ? cuda::table<T>() : cpu::table<T>();
}

template const TileKernels<complex_double>& tile_kernels<complex_double>(tasks::DeviceKind);
template const TileKernels<complex_single>& tile_kernels<complex_single>(tasks::DeviceKind);

}  // namespace topokpm::numerics::kernels
