#pragma once
/// @file temp_path.hpp
/// A scratch file name that no other test process uses.

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace topokpm::testing {

/// TempDir()/<pid>_<name>: the name last, so its ending ("_hr.dat", ".mtx") still tells the
/// kind. ctest runs every test of a binary as its own process and, under -j, two at once: a fixed name lets one test overwrite the file another is reading
/// (fresh-clone CI of 05bb1ab: HrDots read the positions HrPositions was rewriting).
inline std::string temp_path(const std::string& name)
{
    return ::testing::TempDir() + std::to_string(::getpid()) + "_" + name;
}

}  // namespace topokpm::testing
