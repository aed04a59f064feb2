#include "app/run/run_main.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <optional>

#include "app/cli/capabilities.hpp"
#include "app/cli/parameter_flags.hpp"
#include "app/mpi/distribution.hpp"
#include "app/plan/run_plan.hpp"
#include "app/run/conductivity_phase.hpp"
#include "app/run/green_cost.hpp"
#include "app/run/interrupt.hpp"
#include "app/run/moments_job.hpp"
#include "app/run/run_dos.hpp"
#include "app/run/run_eigs.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/exit_code.hpp"
#include "runtime/base/system.hpp"
#include "runtime/mpi/environment.hpp"

namespace topokpm::app {
namespace {

/// Before any library constructor (the executable's pre-initialisation array runs first):
/// OpenBLAS maps a 128 MiB buffer per thread as it starts and retries a failing mmap forever,
/// so a tight ulimit -v would hang the program; it is refused here instead (exit 3). The
/// threads OpenBLAS starts with: OMP_NUM_THREADS, at most the online CPUs.
void check_start(int argc, char** argv, char** /*envp*/)
{
    const char* name = argc > 0 && argv[0] != nullptr ? argv[0] : "topokpm";
    if (const char* slash = std::strrchr(name, '/')) name = slash + 1;
    const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
    const char* omp = std::getenv("OMP_NUM_THREADS");
    const long asked = omp != nullptr ? std::atol(omp) : 0;
    check_address_space_at_start(name, static_cast<int>(asked > 0 ? std::min(asked, cpus) : cpus));
}
[[gnu::section(".preinit_array"), gnu::used]] void (*const kCheckStart)(int, char**, char**) = check_start;

/// The run a parsed configuration asks for, on `dist`'s ranks. Its input errors (values
/// checked after parsing) leave out the values of the --config file (with_user_messages).
void dispatch(const RunConfig& config, Distribution& dist)
{
    with_user_messages(config.provenance, [&] {
        // The one capability table (app/cli/capabilities.hpp), for runs and plans alike;
        // agreed, so under mpirun the refusal is one message.
        dist.agree([&] { require_supported(config, dist.size()); });
        if (config.program == Program::Eigs) {
            run_eigs(config, dist);
        } else if (config.runtime.plan.enabled) {
            // Rank 0 plans (no collective inside); the others wait, so its refusal is one message.
            // With the run's thread team (--threads): the plan's triad and its --green timing.
            use_threads(config);
            dist.agree([&] { if (dist.root()) run_plan(config, {price_green_phase, conductivity_bytes}); });
        } else {
            run_dos(config, dist);
        }
    });
}

/// Under mpirun: MPI up (MULTIPLE, so --comm-mode task may call MPI from its thread),
/// every rank parses the same command line; errors agreed collectively or, when only
/// one rank sees one mid-run, MPI_Abort (runtime/mpi/environment.hpp). Exit codes as
/// above; 75 when the ranks stopped together after writing their checkpoint.
int run_under_mpi(int argc, char** argv, Program program)
{
    mpi::Environment env(&argc, &argv, mpi::ThreadLevel::multiple);
    int stopped = 0;  // every rank stops together (the decision is agreed, app/run/moments_job.hpp)
    const int rc = mpi::run_guarded([&] { with_flag_names([&] {
        std::optional<RunConfig> config;
        mpi::agree_or_throw([&] { config = parse_command_line(argc, argv, program); });
        if (!config) return;  // --help / --version
        if (config->runtime.comm_mode == "task") env.require(mpi::ThreadLevel::serialized, "--comm-mode task");
        Distribution dist = Distribution::from_mpi(*config);
        try {
            dispatch(*config, dist);
        } catch (const RunInterrupted& e) {
            // Not a failure: the checkpoint is complete; rank 0 says how to resume.
            if (dist.root()) std::fprintf(stderr, "%s: %s\n", program_name(program).c_str(), e.what());
            stopped = kExitInterrupted;
        } catch (const StopFailed& e) {
            if (dist.root()) std::fprintf(stderr, "%s: error: %s\n", program_name(program).c_str(), e.what());
            stopped = 3;
        }
    }); });
    return rc != 0 ? rc : stopped;
}

/// Prints the one line of a run that failed and returns its exit code (exit_code_for,
/// runtime/base/exit_code.hpp, the rule mpirun's ranks follow too): "input error" for 2,
/// "internal error" for 4 (a bug), "error" for 3; a failed allocation (exit 3) says that the
/// memory estimate missed it, naming the size when the program's operator new or
/// allocate_pages saw it (AllocationFailed).
int report_failure(const std::string& name, const std::exception& e)
{
    const int code = exit_code_for(e);
    if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
        const bool sized = dynamic_cast<const AllocationFailed*>(&e) != nullptr;
        std::fprintf(stderr,
                     "%s: error: %s; the run's memory estimate missed this allocation: lower the sizes or "
                     "raise the memory limit\n",
                     name.c_str(), sized ? e.what() : "out of memory: an allocation failed");
    } else {
        const char* kind = code == 2 ? "input error" : code == 4 ? "internal error" : "error";
        std::fprintf(stderr, "%s: %s: %s\n", name.c_str(), kind, e.what());
    }
    return code;
}

}  // namespace

int run_main(int argc, char** argv, Program program)
{
    survive_lost_output();
    if (launched_by_mpi()) return run_under_mpi(argc, argv, program);
    const std::string name = program_name(program);
    try {
        // Lower layers name parameters; the messages printed below name the flags.
        with_flag_names([&] {
            const std::optional<RunConfig> config = parse_command_line(argc, argv, program);
            if (!config) return;  // --help / --version
            use_threads_alone(*config);
            Distribution serial;
            dispatch(*config, serial);
        });
        return 0;
    } catch (const RunInterrupted& e) {
        // Not a failure: the checkpoint is complete and the message says how to resume.
        std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
        return kExitInterrupted;
    } catch (const std::exception& e) {
        return report_failure(name, e);
    }
}

}  // namespace topokpm::app
