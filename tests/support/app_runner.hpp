#pragma once
/// @file app_runner.hpp
/// Helpers for integration tests that drive the kpm-dos pipeline in-process: a per-process
/// scratch directory (scratch_path.hpp) and argv-style parsing into a RunConfig (with --quiet).

#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli/run_config.hpp"
#include "tests/support/scratch_path.hpp"

namespace topokpm::testing {

/// Parses kpm-dos arguments (without the program name) as the executable would.
inline app::RunConfig parse_kpm_dos(std::vector<std::string> args)
{
    args.insert(args.begin(), "kpm-dos");
    args.push_back("--quiet");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    auto cfg = app::parse_command_line(static_cast<int>(argv.size()), argv.data());
    if (!cfg) throw std::runtime_error("parse_command_line returned no config (--help?)");
    return *cfg;
}

}  // namespace topokpm::testing
