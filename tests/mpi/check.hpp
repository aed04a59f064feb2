#pragma once
/// @file check.hpp
/// What every MPI check program shares (run_mpi_check.sh runs them under mpiexec on 1-4
/// ranks): a failure count whose messages name the rank, the verdict summed over the ranks
/// (a failure on any rank fails the job on every rank), and main()'s frame.

#include <cstdio>
#include <functional>
#include <string>

#include "runtime/mpi/communicator.hpp"
#include "runtime/mpi/environment.hpp"

namespace topokpm::testing::mpi_check {

inline int failures = 0;

/// Counts a failure and prints it with the rank.
inline void expect(bool ok, const std::string& what)
{
    if (ok) return;
    std::fprintf(stderr, "rank %d: FAILED %s\n", mpi::rank(), what.c_str());
    ++failures;
}

/// 0 when no rank counted a failure (rank 0 then prints "<what> on P ranks: ok", the line
/// run_mpi_check.sh looks for), else 1. Collective.
inline int verdict(const std::string& what)
{
    const int all = mpi::allreduce_sum(failures);
    if (all == 0 && mpi::rank() == 0) std::printf("%s on %d ranks: ok\n", what.c_str(), mpi::size());
    return all == 0 ? 0 : 1;
}

/// main() of a check: MPI initialised asking for `level` (multiple for the checks that run
/// the task communication mode, which refuse less than serialized), `run` inside
/// mpi::run_guarded (an exception on one rank ends every rank); run()'s exit code, or the
/// guard's when it threw.
inline int run_check(int argc, char** argv, mpi::ThreadLevel level, const std::function<int()>& run)
{
    mpi::Environment env(&argc, &argv, level);
    if (level == mpi::ThreadLevel::multiple) env.require(mpi::ThreadLevel::serialized, "the task communication mode");
    int rc = 0;
    const int guarded = mpi::run_guarded([&] { rc = run(); });
    return guarded != 0 ? guarded : rc;
}

}  // namespace topokpm::testing::mpi_check
