#pragma once
/// @file parse.hpp
/// Strict text-to-number conversion for everything a user types (options, input files,
/// lists): the whole text must be the number, written in decimal, and fit the type.
/// Nothing is skipped, wrapped or reinterpreted: " 5", "5 ", "+5", "0x10", "1e3" (as an
/// integer), "-1" (as an unsigned seed), "nan", "inf", "0x1p3" and values beyond the type's
/// range are all rejected (the functions return false; callers name the option).

#include <cstdint>
#include <string>

namespace topokpm::parse {

/// [-]digits, within int64 range.
bool int64(const std::string& text, std::int64_t& out);

/// digits, within uint64 range (no sign).
bool uint64(const std::string& text, std::uint64_t& out);

/// A finite decimal number: [+-]digits[.digits][(e|E)[+-]digits] (a leading or trailing
/// '.' allowed as in "1." or ".5"), no whitespace, no hex, no nan/inf; overflow rejected,
/// underflow to a subnormal or zero accepted.
bool real(const std::string& text, double& out);

}  // namespace topokpm::parse
