// The MPI-free parts of runtime/mpi/environment.hpp; the collective parts run under
// mpiexec in tests/mpi/.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

#include "runtime/base/error.hpp"
#include "runtime/base/exit_code.hpp"
#include "runtime/mpi/environment.hpp"

using namespace topokpm;
using topokpm::mpi::ThreadLevel;

TEST(MpiThreadLevel, NamesFollowMpi)
{
    EXPECT_EQ(mpi::level_name(ThreadLevel::funneled), "MPI_THREAD_FUNNELED");
    EXPECT_EQ(mpi::level_name(ThreadLevel::multiple), "MPI_THREAD_MULTIPLE");
}

TEST(MpiThreadLevel, RefusesTooLowAProvidedLevel)
{
    EXPECT_NO_THROW(mpi::check_thread_level(ThreadLevel::multiple, ThreadLevel::funneled, "OpenMP ranks"));
    EXPECT_NO_THROW(mpi::check_thread_level(ThreadLevel::multiple, ThreadLevel::multiple, "the task mode"));
    try {
        mpi::check_thread_level(ThreadLevel::funneled, ThreadLevel::multiple, "the task communication mode");
        FAIL() << "no Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("the task communication mode needs MPI_THREAD_MULTIPLE; this MPI "
                                             "library provided MPI_THREAD_FUNNELED"),
                  std::string::npos)
            << e.what();
    }
}

// The codes of the one-process run (app/run/run_main.cpp, docs/reliability.md): one rule,
// topokpm::exit_code_for (runtime/base/exit_code.hpp), which the ranks follow too.
TEST(MpiExitCodes, SameAsTheOneProcessRun)
{
    const auto both = [](const std::exception& e) {
        EXPECT_EQ(mpi::exit_code_for(e), topokpm::exit_code_for(e)) << e.what();
        return topokpm::exit_code_for(e);
    };
    EXPECT_EQ(both(InputError("bad --weights")), 2);
    EXPECT_EQ(both(ResourceError("needs 2 GiB")), 3);
    EXPECT_EQ(both(IoError("cannot write")), 3);
    EXPECT_EQ(both(std::bad_alloc()), 3);
    EXPECT_EQ(both(DimensionMismatch("internal check failed")), 4);
    EXPECT_EQ(both(std::runtime_error("not ours")), 4);
    EXPECT_EQ(mpi::exit_code_for(mpi::CollectiveError("validation failed on rank 1", 1, 2)), 2);
    EXPECT_EQ(mpi::exit_code_for(mpi::CollectiveError("validation failed on rank 0", 0, 4)), 4);
}
