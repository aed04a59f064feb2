// kpm-dos: parse -> run -> report. Every failure is a topokpm::Error with a message that
// names the bad value; it is printed once and the exit code is non-zero: 2 bad input
// (also a refused --restart), 3 other errors, 4 internal errors, 75 stopped by
// SIGTERM/SIGINT after writing a checkpoint (resume with --restart).
#include <cstdio>
#include <exception>

#include "app/cli/moments_job.hpp"
#include "app/cli/run_config.hpp"
#include "app/cli/run_dos.hpp"
#include "app/cli/run_plan.hpp"
#include "runtime/base/error.hpp"

int main(int argc, char** argv)
{
    try {
        const std::optional<topokpm::app::RunConfig> config = topokpm::app::parse_command_line(argc, argv);
        if (!config) return 0;  // --help / --version
        if (config->plan)
            topokpm::app::run_plan(*config);
        else
            topokpm::app::run_dos(*config);
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
