#pragma once
/// @file app_runner.hpp
/// Helpers for integration tests that drive the kpm-dos pipeline in-process: a per-process
/// scratch directory and argv-style parsing into a RunConfig (with --quiet).

#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli/run_config.hpp"

namespace topokpm::testing {

/// <tmp>/topokpm_<tag>_<pid>/<name>; the directory is created.
inline std::filesystem::path scratch_path(const std::string& tag, const std::string& name)
{
    const auto dir = std::filesystem::temp_directory_path() / ("topokpm_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir / name;
}

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
