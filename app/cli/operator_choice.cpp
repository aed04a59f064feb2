#include "app/cli/operator_choice.hpp"

namespace topokpm::app {

numerics::OperatorSpec operator_spec(const RunConfig& cfg)
{
    numerics::OperatorSpec spec;
    switch (cfg.matrix) {
    case MatrixKind::Sell: spec.kind = numerics::OperatorKind::Sell; break;
    case MatrixKind::Crs: spec.kind = numerics::OperatorKind::Crs; break;
    case MatrixKind::Free: spec.kind = numerics::OperatorKind::Free; break;
    case MatrixKind::Naive: spec.kind = numerics::OperatorKind::Naive; break;
    }
    spec.device = cfg.device == DeviceKind::Cuda ? numerics::Backend::Cuda : numerics::Backend::Cpu;
    spec.precision = cfg.precision;
    spec.sell = {cfg.sell_chunk_height, cfg.sell_sigma};
    return spec;
}

}  // namespace topokpm::app
