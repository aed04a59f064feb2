#pragma once
/// @file run_eigs.hpp
/// The kpm-eigs pipeline (models.md §6): validate the request, the method and the files
/// (collectively, before anything is allocated) -> build the operator (the one factory,
/// or this rank's rows under mpirun) -> spectral bounds (the tolerance's energy scale and
/// the check that a window meets the spectrum) -> eigenpairs -> weights -> result file.
///
/// Methods: `dense` (numerics::dense_eigenpairs, N <= 8192), `lanczos` (thick-restart
/// Lanczos, --extremal), `chebfd` (numerics::chebfd_eigenpairs, --window), `auto` = dense
/// for N <= 4096, else lanczos for --extremal and chebfd for --window. `shift-invert` is
/// refused with InputError until it exists.

#include "app/cli/run_config.hpp"

namespace topokpm::app {

class Distribution;

/// Runs one eigenpair calculation on `distribution`'s ranks; rank 0 reports and writes
/// the result file. Throws topokpm::Error on any failure, leaving no output file.
void run_eigs(const RunConfig& config, Distribution& distribution);

}  // namespace topokpm::app
