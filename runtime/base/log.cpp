#include "runtime/base/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace topokpm::log {
namespace {
std::atomic<bool> g_quiet{false};
std::mutex g_mutex;
}  // namespace

void set_quiet(bool quiet) { g_quiet = quiet; }
bool quiet() { return g_quiet; }

void info_line(const std::string& message)
{
    if (g_quiet) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    std::fprintf(stdout, "%s\n", message.c_str());
    std::fflush(stdout);
}

void warning_line(const std::string& message)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    std::fprintf(stderr, "[topokpm] WARNING: %s\n", message.c_str());
}

void perf_warning_line(const std::string& message)
{
    std::lock_guard<std::mutex> lock(g_mutex);
    std::fprintf(stderr, "[topokpm] PERFWARNING: %s\n", message.c_str());
}

}  // namespace topokpm::log
