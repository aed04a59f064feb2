// kpm-dos: parse -> run -> report. Every failure is a topokpm::Error with a message that
// names the bad value; it is printed once and the exit code is non-zero.
#include <cstdio>
#include <exception>

#include "app/cli/run_config.hpp"
#include "app/cli/run_dos.hpp"
#include "runtime/base/error.hpp"

int main(int argc, char** argv)
{
    try {
        const std::optional<topokpm::app::RunConfig> config = topokpm::app::parse_command_line(argc, argv);
        if (!config) return 0;  // --help / --version
        topokpm::app::run_dos(*config);
        return 0;
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
