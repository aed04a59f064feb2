#pragma once
/// @file operator_choice.hpp
/// The one place where kpm-dos options become the operator to build: --matrix, --device,
/// --precision, --sell-C and --sell-sigma mapped onto numerics::OperatorSpec. The serial
/// run, the ranks of a distributed run, the `auto` weights probe, the memory check and
/// --plan all take the spec from here, so they build and price the same operator.

#include "app/cli/run_config.hpp"
#include "numerics/spmmv/operator_factory.hpp"

namespace topokpm::app {

numerics::OperatorSpec operator_spec(const RunConfig& cfg);

}  // namespace topokpm::app
