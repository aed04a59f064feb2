#include "runtime/mpi/environment.hpp"

#include <mpi.h>

#include <cstdio>
#include <exception>
#include <new>

#include "runtime/base/exit_code.hpp"

namespace topokpm::mpi {

namespace {

int to_mpi(ThreadLevel level)
{
    switch (level) {
    case ThreadLevel::single: return MPI_THREAD_SINGLE;
    case ThreadLevel::funneled: return MPI_THREAD_FUNNELED;
    case ThreadLevel::serialized: return MPI_THREAD_SERIALIZED;
    case ThreadLevel::multiple: return MPI_THREAD_MULTIPLE;
    }
    return MPI_THREAD_SINGLE;
}

ThreadLevel from_mpi(int level)
{
    if (level == MPI_THREAD_MULTIPLE) return ThreadLevel::multiple;
    if (level == MPI_THREAD_SERIALIZED) return ThreadLevel::serialized;
    if (level == MPI_THREAD_FUNNELED) return ThreadLevel::funneled;
    return ThreadLevel::single;
}

void print_error(int origin, const char* message)
{
    std::fprintf(stderr, "error (rank %d): %s\n", origin, message);
    std::fflush(stderr);
}

/// Node-local communicator, created on first use and kept for the process lifetime
/// (MPI_Finalize frees it).
MPI_Comm node_comm()
{
    static MPI_Comm comm = [] {
        MPI_Comm c = MPI_COMM_NULL;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c);
        return c;
    }();
    return comm;
}

}  // namespace

std::string level_name(ThreadLevel level)
{
    switch (level) {
    case ThreadLevel::single: return "MPI_THREAD_SINGLE";
    case ThreadLevel::funneled: return "MPI_THREAD_FUNNELED";
    case ThreadLevel::serialized: return "MPI_THREAD_SERIALIZED";
    case ThreadLevel::multiple: return "MPI_THREAD_MULTIPLE";
    }
    return "unknown MPI thread level";
}

void check_thread_level(ThreadLevel provided, ThreadLevel needed, const std::string& purpose)
{
    if (static_cast<int>(provided) < static_cast<int>(needed))
        throw Error(detail::concat(purpose, " needs ", level_name(needed), "; this MPI library provided ",
                                   level_name(provided),
                                   " (use a communication mode without a communication thread, or an "
                                   "MPI built with thread support)"));
}

Environment::Environment(int* argc, char*** argv, ThreadLevel required) : requested_(required)
{
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (initialized) {
        MPI_Query_thread(&provided);
    } else {
        if (MPI_Init_thread(argc, argv, to_mpi(required), &provided) != MPI_SUCCESS)
            throw Error(detail::concat("MPI_Init_thread(", level_name(required), ") failed"));
        owns_ = true;
    }
    provided_ = from_mpi(provided);
}

Environment::~Environment()
{
    if (!owns_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

void Environment::require(ThreadLevel needed, const std::string& purpose) const
{
    check_thread_level(provided_, needed, purpose);
}

int rank()
{
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int size()
{
    int s = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

int node_rank()
{
    int r = 0;
    MPI_Comm_rank(node_comm(), &r);
    return r;
}

int node_size()
{
    int s = 1;
    MPI_Comm_size(node_comm(), &s);
    return s;
}

int exit_code_for(const std::exception& e)
{
    if (const auto* c = dynamic_cast<const CollectiveError*>(&e)) return c->exit_code();
    return topokpm::exit_code_for(e);
}

void agree_or_throw(const std::function<void()>& validate)
{
    const int me = rank();
    const int ranks = size();
    std::string message;
    int code = 0;
    try {
        validate();
    } catch (const std::exception& e) {
        message = e.what();
        code = exit_code_for(e);
    } catch (...) {
        message = "unknown exception during validation";
        code = 4;
    }
    // (failing ? rank : size) reduced with MIN gives the lowest failing rank; its exit
    // code follows in a second small reduction only when something failed.
    int candidate = code != 0 ? me : ranks;
    int origin = ranks;
    MPI_Allreduce(&candidate, &origin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (origin == ranks) return;
    int origin_code = me == origin ? code : 0;
    int agreed_code = 0;
    MPI_Allreduce(&origin_code, &agreed_code, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (me == origin) print_error(origin, message.c_str());
    throw CollectiveError(detail::concat("validation failed on rank ", origin), origin, agreed_code);
}

bool all_ok(bool local_ok)
{
    int local = local_ok ? 1 : 0;
    int global = 0;
    MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return global != 0;
}

int run_guarded(const std::function<void()>& fn)
{
    try {
        fn();
        return 0;
    } catch (const CollectiveError& e) {
        return e.exit_code();
    } catch (const std::exception& e) {
        print_error(rank(), e.what());
        MPI_Abort(MPI_COMM_WORLD, exit_code_for(e));
    } catch (...) {
        print_error(rank(), "unknown exception");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    return 4;  // not reached: MPI_Abort does not return
}

}  // namespace topokpm::mpi
