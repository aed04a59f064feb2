#pragma once
/// @file scratch_path.hpp
/// Scratch files that no other test process uses.

#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <system_error>

namespace topokpm::testing {

/// <tmp>/topokpm_<tag>_<pid>/<name>; the directory is created, and removed with everything
/// in it when the process ends normally. ctest runs every test of a binary as its own process
/// and, under -j, two at once: a fixed name in a shared directory lets one test rewrite the
/// file another is reading (fresh-clone CI of 05bb1ab: HrDots read the positions file
/// HrPositions was rewriting). The name is kept whole, so its ending ("_hr.dat", ".mtx")
/// still tells the kind.
inline std::filesystem::path scratch_path(const std::string& tag, const std::string& name)
{
    const auto dir = std::filesystem::temp_directory_path() / ("topokpm_" + tag + "_" + std::to_string(::getpid()));
    struct Created {
        std::set<std::filesystem::path> dirs;
        ~Created()
        {
            std::error_code ignored;
            for (const auto& d : dirs) std::filesystem::remove_all(d, ignored);
        }
    };
    static Created created;
    std::filesystem::create_directories(dir);
    created.dirs.insert(dir);
    return dir / name;
}

}  // namespace topokpm::testing
