#pragma once
/// @file error.hpp
/// Exception hierarchy and check macros (see docs/architecture.md, "Errors").
///
/// Library code never calls exit(): it throws. The application's main() catches
/// topokpm::Error, prints "error: <message>" and returns a non-zero exit code.

#include <sstream>
#include <stdexcept>
#include <string>

namespace topokpm {

/// Base of every error the program reports; what() is the user-facing message.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A bad user value: the message names the option, the value and the allowed range.
class InputError : public Error {
public:
    using Error::Error;
};

/// A run that would not fit: the message says how much it needs and how much there is.
class ResourceError : public Error {
public:
    using Error::Error;
};

/// Unreadable input, unwritable output (path and the system's reason).
class IoError : public Error {
public:
    using Error::Error;
};

/// Internal contract violation between objects (a bug, not a user error).
class DimensionMismatch : public Error {
public:
    using Error::Error;
};

/// A backend that this build does not contain (e.g. "cuda" in a CPU-only build).
class NotCompiled : public Error {
public:
    NotCompiled(const std::string& backend, const std::string& function)
        : Error("this build has no " + backend + " kernels (" + function +
                "); reconfigure with the " + backend + " toolkit available") {}
};

/// Numerical breakdown (e.g. Lanczos with a zero start vector).
class NumericalError : public Error {
public:
    using Error::Error;
};

namespace detail {
/// Streams any number of arguments into one string (GCC 12 has no <format>).
template <typename... Args>
std::string concat(const Args&... args)
{
    std::ostringstream os;
    (os << ... << args);
    return os.str();
}
}  // namespace detail

}  // namespace topokpm

/// Always-on internal check: throws DimensionMismatch with file:line on failure.
#define TOPOKPM_REQUIRE(cond, ...)                                                      \
    do {                                                                                \
        if (!(cond))                                                                    \
            throw ::topokpm::DimensionMismatch(::topokpm::detail::concat(               \
                __FILE__, ":", __LINE__, ": internal check failed (" #cond "): ",       \
                __VA_ARGS__));                                                          \
    } while (0)

/// User-input check: throws InputError with the given message (name the option,
/// the value and the allowed range).
#define TOPOKPM_USER_REQUIRE(cond, ...)                                                 \
    do {                                                                                \
        if (!(cond)) throw ::topokpm::InputError(::topokpm::detail::concat(__VA_ARGS__)); \
    } while (0)
