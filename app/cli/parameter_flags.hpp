#pragma once
/// @file parameter_flags.hpp
/// Lower layers (numerics/, hamiltonians/, analysis/, runtime/) name a parameter in their
/// messages as `{name}` (e.g. "{moments} 1: must be >= 2"); the app turns every such name
/// into the kpm-dos flag the user typed ("--moments 1: must be >= 2") with the one table
/// in parameter_flags.cpp. Names the table does not know are left as they are.

#include <functional>
#include <string>

namespace topokpm::app {

/// `message` with every `{name}` of the table replaced by its flag.
std::string name_flags(const std::string& message);

/// Runs `f`; an InputError, ResourceError, IoError or NumericalError escaping it is
/// rethrown as the same type with name_flags() applied to its message. Other exceptions
/// pass unchanged.
void with_flag_names(const std::function<void()>& f);

}  // namespace topokpm::app
