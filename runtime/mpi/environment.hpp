#pragma once
/// @file environment.hpp
/// MPI lifetime (RAII) and the error discipline of a multi-rank run (docs/scaling.md):
///
/// 1. validate the configuration on every rank inside agree_or_throw(): a failure seen
///    by any rank is reported once (by the lowest failing rank) and every rank leaves
///    with the same CollectiveError, so nobody waits in a collective that never comes;
/// 2. do the work inside run_guarded(): an exception that only one rank sees (a failed
///    allocation, an I/O error) prints "error (rank R): <message>" once and calls
///    MPI_Abort, which ends every rank.
///
/// This header does not include mpi.h: thread levels are a small enum here.

#include <exception>
#include <functional>
#include <string>

#include "runtime/base/error.hpp"

namespace topokpm::mpi {

/// MPI thread support levels, in increasing order (MPI_THREAD_SINGLE ... MULTIPLE).
enum class ThreadLevel {
    single = 0,      ///< one thread in the process
    funneled = 1,    ///< threads, MPI called by the main thread only (the OpenMP default)
    serialized = 2,  ///< any thread calls MPI, one at a time
    multiple = 3,    ///< any thread calls MPI concurrently (a communication thread/task)
};

/// "MPI_THREAD_FUNNELED" etc.
std::string level_name(ThreadLevel level);

/// Throws Error "<purpose> needs <needed>; this MPI library provided <provided>" when
/// `provided` is below `needed`. Pure function (no MPI call), so it is unit-testable.
void check_thread_level(ThreadLevel provided, ThreadLevel needed, const std::string& purpose);

/// Initialises MPI with MPI_Init_thread in the constructor and finalises it in the
/// destructor. If MPI was already initialised (by a test harness, say), it queries the
/// level and does neither. Not copyable. The provided level may be lower than the
/// requested one: callers that need a level use require().
class Environment {
public:
    /// @param required  the level to ask for: funneled for MPI+OpenMP with MPI calls
    ///                  on the main thread, multiple for the communication-task mode.
    /// Throws Error when MPI_Init_thread fails.
    Environment(int* argc, char*** argv, ThreadLevel required = ThreadLevel::funneled);
    ~Environment();
    Environment(const Environment&) = delete;
    Environment& operator=(const Environment&) = delete;

    ThreadLevel requested_level() const { return requested_; }
    ThreadLevel provided_level() const { return provided_; }
    /// check_thread_level(provided_level(), needed, purpose): refuses e.g. the task
    /// communication mode on an MPI library without MPI_THREAD_MULTIPLE.
    void require(ThreadLevel needed, const std::string& purpose) const;

private:
    ThreadLevel requested_;
    ThreadLevel provided_ = ThreadLevel::single;
    bool owns_ = false;
};

/// Rank and size in MPI_COMM_WORLD.
int rank();
int size();
/// Rank and size among the ranks of this node (MPI_Comm_split_type, shared memory);
/// used to give each rank of a node its own CPU set. Collective on the first call.
int node_rank();
int node_size();

/// Exit code for an exception: a CollectiveError carries the code of the rank that failed;
/// any other, topokpm::exit_code_for (runtime/base/exit_code.hpp), the one-process run's rule.
int exit_code_for(const std::exception& e);

/// Thrown on every rank by agree_or_throw() when validation failed somewhere. All ranks
/// hold it at the same time, so they can unwind and finalise normally; run_guarded()
/// returns exit_code() on every rank without MPI_Abort and prints nothing (the failing
/// rank already did).
class CollectiveError : public Error {
public:
    CollectiveError(const std::string& message, int origin_rank, int exit_code)
        : Error(message), origin_rank_(origin_rank), exit_code_(exit_code) {}
    int origin_rank() const { return origin_rank_; }  ///< lowest rank that failed
    int exit_code() const { return exit_code_; }      ///< exit_code_for() of that rank's exception

private:
    int origin_rank_;
    int exit_code_;
};

/// Collective: runs `validate` on every rank and agrees on the outcome with one
/// MPI_Allreduce. Returns normally when every rank's `validate` returned. Otherwise
/// the lowest failing rank prints "error (rank R): <its message>" to stderr (once), and
/// every rank throws CollectiveError with that rank, the exit code of its exception and
/// the message "validation failed on rank R" (the text is printed only by rank R).
void agree_or_throw(const std::function<void()>& validate);

/// Collective over MPI_COMM_WORLD: true when every rank passes true (MPI_LAND).
bool all_ok(bool local_ok);

/// Runs fn and returns the process exit code: 0 when fn returns; CollectiveError's code
/// (no printing, no abort: every rank holds it). For any other exception prints
/// "error (rank R): <message>" once to stderr and calls MPI_Abort(MPI_COMM_WORLD,
/// exit_code_for(e)), which ends every rank (the others may be waiting in a collective):
/// mpirun then prints its MPI_ABORT banner, so every error the ranks can see alike (input,
/// files, sizes, memory checks) must be found inside agree_or_throw instead.
int run_guarded(const std::function<void()>& fn);

}  // namespace topokpm::mpi
