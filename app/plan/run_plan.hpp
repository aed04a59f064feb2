#pragma once
/// @file run_plan.hpp
/// `kpm-dos --plan`: the per-rank plan of a distributed run (rows, nonzeros, memory, halo,
/// predicted time per moment from the KPM performance model), without allocating.

#include "app/cli/run_config.hpp"

namespace topokpm::app {

/// Prints the plan for cfg.runtime.plan.ranks ranks; throws ResourceError ("needs X GiB per rank,
/// have Y GiB") when a rank would not fit --memory-limit (or this machine's memory).
void run_plan(const RunConfig& cfg);

}  // namespace topokpm::app
