#pragma once
/// @file green_cost.hpp
/// The price of a run's --green phase for `kpm-dos --plan` (app/plan/run_plan.hpp's
/// PhasePricing::green), made by the phase's own code: the same sparse LU analysis as the run
/// (analyse_sparse_lu), the same solves (sparse_direct::green_ldos) timed with the run's
/// thread team, and the run's energy grid (Reconstructor::energies).

#include <vector>

#include "app/cli/run_config.hpp"
#include "app/plan/run_plan.hpp"
#include "hamiltonians/model.hpp"

namespace topokpm::app {

/// Bytes of the --green phase beside the factors: the solves' workspace (blocks of 16
/// right-hand sides) and the matrix copy (32 bytes per nonzero); the run's memory check and
/// price_green_phase count them alike.
double green_solve_bytes(const hamiltonians::Model& model);

/// Analyses the matrix of `model` (ResourceError naming --plan and --green when the analysis
/// would not fit --memory-limit, or this machine's memory), then times green_ldos of `rows`
/// on one energy and on four (E = 0, 0.01, -0.01, 0.02 t and cfg's eta: a factorization's
/// cost does not depend on E): the phase costs fixed + K x per energy with per energy =
/// (four - one) / 3, fixed = one - per energy (never below 0). Memory: the factors, the
/// solves' workspace and the matrix copy, as the run's memory check counts them.
GreenCost price_green_phase(const RunConfig& cfg, const hamiltonians::Model& model, const std::vector<global_index>& rows);

}  // namespace topokpm::app
