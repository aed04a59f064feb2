#pragma once
/// @file run_main.hpp
/// The main() of kpm-dos and kpm-eigs: parse -> run -> report, serial or under mpirun.
/// Every failure is a topokpm::Error with a message that names the bad value; it is
/// printed once as "<program>: ..." and the exit code is non-zero, by one rule
/// (exit_code_for, runtime/base/exit_code.hpp): 2 bad input (also a refused --restart), 3 other
/// errors, 4 internal errors (a failed internal check, an exception that is not a
/// topokpm::Error), 75 stopped by SIGTERM/SIGINT after writing a checkpoint (kpm-dos; resume
/// with --restart). Under mpirun the same rule (mpi::exit_code_for), and an error that
/// every rank can find is found inside Distribution::agree: one message, no MPI_Abort.

#include "app/cli/run_config.hpp"

namespace topokpm::app {

/// Runs `program` on the command line; returns the process exit code.
int run_main(int argc, char** argv, Program program);

}  // namespace topokpm::app
