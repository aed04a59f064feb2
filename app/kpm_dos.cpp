// kpm-dos: parse -> run -> report. Every failure is a topokpm::Error with a message that
// names the bad value; it is printed once and the exit code is non-zero: 2 bad input
// (also a refused --restart), 3 other errors, 4 internal errors, 75 stopped by
// SIGTERM/SIGINT after writing a checkpoint (resume with --restart).
#include <cstdio>
#include <exception>
#include <optional>

#include "app/mpi/distribution.hpp"
#include "app/run/interrupt.hpp"
#include "app/run/moments_job.hpp"
#include "app/cli/parameter_flags.hpp"
#include "app/cli/run_config.hpp"
#include "app/run/run_dos.hpp"
#include "app/plan/run_plan.hpp"
#include "runtime/base/error.hpp"
#include "runtime/mpi/environment.hpp"

namespace {

/// Under mpirun: MPI up (MULTIPLE, so --comm-mode task may call MPI from its thread),
/// every rank parses the same command line; errors agreed collectively or, when only
/// one rank sees one mid-run, MPI_Abort (runtime/mpi/environment.hpp). Exit codes as
/// below; no checkpoints, so no 75.
int run_under_mpi(int argc, char** argv)
{
    namespace app = topokpm::app;
    topokpm::mpi::Environment env(&argc, &argv, topokpm::mpi::ThreadLevel::multiple);
    return topokpm::mpi::run_guarded([&] { app::with_flag_names([&] {
        std::optional<app::RunConfig> config;
        topokpm::mpi::agree_or_throw([&] { config = app::parse_command_line(argc, argv); });
        if (!config) return;  // --help / --version
        if (config->runtime.comm_mode == "task")
            env.require(topokpm::mpi::ThreadLevel::serialized, "--comm-mode task");
        if (config->runtime.plan.enabled) {
            if (topokpm::mpi::rank() == 0) app::run_plan(*config);
            return;
        }
        app::Distribution dist = app::Distribution::from_mpi(*config);
        app::run_dos(*config, dist);
    }); });
}

}  // namespace

int main(int argc, char** argv)
{
    topokpm::app::survive_lost_output();
    if (topokpm::app::launched_by_mpi()) return run_under_mpi(argc, argv);
    try {
        // Lower layers name parameters; the messages printed below name the flags.
        topokpm::app::with_flag_names([&] {
            const std::optional<topokpm::app::RunConfig> config = topokpm::app::parse_command_line(argc, argv);
            if (!config) return;  // --help / --version
            if (config->runtime.plan.enabled)
                topokpm::app::run_plan(*config);
            else
                topokpm::app::run_dos(*config);
        });
        return 0;
    } catch (const topokpm::app::RunInterrupted& e) {
        // Not a failure: the checkpoint is complete and the message says how to resume.
        std::fprintf(stderr, "kpm-dos: %s\n", e.what());
        return topokpm::app::kExitInterrupted;
    } catch (const topokpm::InputError& e) {
        std::fprintf(stderr, "kpm-dos: input error: %s\n", e.what());
        return 2;
    } catch (const topokpm::Error& e) {
        std::fprintf(stderr, "kpm-dos: error: %s\n", e.what());
        return 3;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kpm-dos: internal error: %s\n", e.what());
        return 4;
    }
}
