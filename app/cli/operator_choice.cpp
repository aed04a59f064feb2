#include "app/cli/operator_choice.hpp"

#include "runtime/base/error.hpp"

namespace topokpm::app {

numerics::OperatorSpec operator_spec(const RunConfig& cfg)
{
    numerics::OperatorSpec spec;
    switch (cfg.storage.matrix) {
    case MatrixKind::Sell: spec.kind = numerics::OperatorKind::Sell; break;
    case MatrixKind::Crs: spec.kind = numerics::OperatorKind::Crs; break;
    case MatrixKind::Free: spec.kind = numerics::OperatorKind::Free; break;
    case MatrixKind::Naive: spec.kind = numerics::OperatorKind::Naive; break;
    }
    spec.device = cfg.storage.device == DeviceKind::Cuda ? numerics::Backend::Cuda : numerics::Backend::Cpu;
    spec.precision = cfg.storage.precision;
    spec.sell = {cfg.storage.sell_chunk_height, cfg.storage.sell_sigma};
    return spec;
}

MatrixChoice fastest_matrix(const std::string& model, int width, Precision precision, DeviceKind device,
                            bool sell_asked)
{
    (void)precision;  // the same winner in both precisions (docs/performance.md)
    const std::string at = detail::concat(" this run R = ", width);
    if (sell_asked) return {MatrixKind::Sell, "--sell-C/--sell-sigma given"};
    if (device == DeviceKind::Cuda) return {MatrixKind::Sell, "SELL-32 on the GPU"};
    if (model == "ti") return {MatrixKind::Free, "free, the fastest measured for ti at R = 1, 8 and 32;" + at};
    if (width == 1)  // real couplings: sweeps as fast as real-valued sell, no matrix to build
        return {MatrixKind::Free, "free, the fastest measured run for " + model + " at R = 1;" + at};
    return {MatrixKind::Sell, "sell with real values, the fastest measured for " + model + " at R = 8 and 32;" + at};
}

}  // namespace topokpm::app
