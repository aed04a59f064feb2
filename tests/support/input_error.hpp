#pragma once
/// @file input_error.hpp
/// The message of the InputError a call throws, for tests that check refusals.

#include <string>

#include "runtime/base/error.hpp"

namespace topokpm::testing {

/// The InputError message of `f()`, or "" when it throws none (other exceptions pass).
template <class F>
std::string input_error(F&& f)
{
    try {
        f();
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace topokpm::testing
