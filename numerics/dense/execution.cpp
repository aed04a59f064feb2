#include "numerics/dense/execution.hpp"

#include "runtime/base/error.hpp"

namespace topokpm::numerics::dense {

int column_owner(int j, int slices, int accelerators)
{
    if (accelerators <= 0) return 0;
    if (j % slices != slices - 1) return 0;
    return 1 + (j / slices) % accelerators;
}

std::unique_ptr<tasks::DataflowRuntime> make_runtime(const DenseExecution& execution)
{
    TOPOKPM_USER_REQUIRE(execution.host_workers >= 1, "{host_workers} must be >= 1, got ", execution.host_workers);
    TOPOKPM_USER_REQUIRE(execution.device_workers >= 0, "{device_workers} must be >= 0, got ",
                         execution.device_workers);
    TOPOKPM_USER_REQUIRE(execution.slices >= 1, "{slices} must be >= 1, got ", execution.slices);
    TOPOKPM_USER_REQUIRE(execution.inner_block >= 1, "{inner_block} must be >= 1, got ", execution.inner_block);
    tasks::DataflowRuntime::Options options;
    options.devices = {tasks::DeviceConfig{tasks::DeviceKind::host, execution.host_workers, execution.host_pus}};
    if (execution.device_workers > 0)
        options.devices.push_back(
            tasks::DeviceConfig{tasks::DeviceKind::host_memory, execution.device_workers, execution.device_pus});
    options.window = execution.window;
    options.topology = execution.topology;
    return std::make_unique<tasks::DataflowRuntime>(options);
}

}  // namespace topokpm::numerics::dense
