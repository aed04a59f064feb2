#pragma once
/// @file run_dos.hpp
/// The kpm-dos pipeline: validate -> size -> build operator -> bounds -> moments ->
/// reconstruct -> write. Wiring only; the work is done by the library layers.

#include "app/cli/run_config.hpp"

namespace topokpm::app {

class Distribution;

/// Runs one DOS calculation; throws topokpm::Error on any failure, leaving no output file.
void run_dos(const RunConfig& config);

/// The same under mpirun (app/mpi/distribution.hpp): every rank calls it; rank 0 reports
/// and writes the result file.
void run_dos(const RunConfig& config, Distribution& distribution);

}  // namespace topokpm::app
