#include "runtime/base/parse.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace topokpm::parse {
namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }

/// Whether text[i..] is one or more digits to the end.
bool all_digits(const std::string& text, std::size_t i)
{
    if (i >= text.size()) return false;
    for (; i < text.size(); ++i)
        if (!digit(text[i])) return false;
    return true;
}

}  // namespace

bool int64(const std::string& text, std::int64_t& out)
{
    if (!all_digits(text, !text.empty() && text[0] == '-' ? 1 : 0)) return false;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), nullptr, 10);
    if (errno != 0) return false;
    out = v;
    return true;
}

bool uint64(const std::string& text, std::uint64_t& out)
{
    if (!all_digits(text, 0)) return false;
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno != 0) return false;
    out = v;
    return true;
}

bool real(const std::string& text, double& out)
{
    std::size_t i = 0;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    std::size_t mantissa = 0;
    while (i < text.size() && digit(text[i])) ++i, ++mantissa;
    if (i < text.size() && text[i] == '.') {
        ++i;
        while (i < text.size() && digit(text[i])) ++i, ++mantissa;
    }
    if (mantissa == 0) return false;
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
        if (!all_digits(text, i)) return false;
        i = text.size();
    }
    if (i != text.size()) return false;
    errno = 0;
    const double v = std::strtod(text.c_str(), nullptr);
    // ERANGE also reports underflow (a tiny but valid number); only overflow is refused.
    if (!std::isfinite(v) || (errno == ERANGE && std::fabs(v) > 1.0)) return false;
    out = v;
    return true;
}

}  // namespace topokpm::parse
