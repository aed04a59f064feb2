#include "app/cli/operator_choice.hpp"

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

}  // namespace topokpm::app
