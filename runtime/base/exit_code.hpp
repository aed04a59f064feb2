#pragma once
/// @file exit_code.hpp
/// The process exit code of an error (docs/reliability.md): the one rule of the
/// one-process run (app/run/run_main.cpp) and of every MPI rank (mpi::exit_code_for).

#include <exception>
#include <new>

#include "runtime/base/error.hpp"

namespace topokpm {

/// 2 InputError; 4 DimensionMismatch (a failed TOPOKPM_REQUIRE: a bug); 3 any other Error
/// and std::bad_alloc (I/O, resources, memory); 4 an exception that is not ours (a bug).
inline int exit_code_for(const std::exception& e)
{
    if (dynamic_cast<const InputError*>(&e) != nullptr) return 2;
    if (dynamic_cast<const DimensionMismatch*>(&e) != nullptr) return 4;
    if (dynamic_cast<const Error*>(&e) != nullptr || dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return 3;
    return 4;
}

}  // namespace topokpm
