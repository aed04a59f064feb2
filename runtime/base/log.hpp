#pragma once
/// @file log.hpp
/// Minimal leveled logger. Messages go to stderr (warnings, perf warnings) or stdout
/// (info), prefixed "[topokpm]". `set_quiet(true)` silences info; errors and warnings
/// always print. PERFWARNING (GHOST) marks a slow path taken, not a wrong result.

#include <string>

#include "runtime/base/error.hpp"

namespace topokpm::log {

void set_quiet(bool quiet);
bool quiet();

void info_line(const std::string& message);
void warning_line(const std::string& message);
void perf_warning_line(const std::string& message);

template <typename... Args>
void info(const Args&... args) { info_line(detail::concat(args...)); }
template <typename... Args>
void warning(const Args&... args) { warning_line(detail::concat(args...)); }
template <typename... Args>
void perf_warning(const Args&... args) { perf_warning_line(detail::concat(args...)); }

}  // namespace topokpm::log
