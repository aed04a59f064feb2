#include "runtime/base/system.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>
#include <fstream>
#include <sstream>

#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm {

std::uint64_t available_memory_bytes()
{
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::uint64_t value_kib = 0;
    std::string unit;
    while (meminfo >> key >> value_kib >> unit) {
        if (key == "MemAvailable:") return value_kib * 1024ULL;
    }
    struct sysinfo info {};
    if (sysinfo(&info) == 0) return static_cast<std::uint64_t>(info.freeram) * info.mem_unit;
    return 0;
}

namespace {

/// VmSize of this process in bytes from /proc/self/statm (its first field, in pages), read
/// with system calls only; 0 when unreadable.
double vm_size_bytes() noexcept
{
    const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[64] = {};
    const ssize_t got = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    double pages = 0;
    for (ssize_t i = 0; i < got && buf[i] >= '0' && buf[i] <= '9'; ++i) pages = 10 * pages + (buf[i] - '0');
    return pages * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

/// The soft address-space limit in bytes; infinity without one.
double address_space_limit_bytes() noexcept
{
    struct rlimit r {};
    if (::getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return std::numeric_limits<double>::infinity();
    return static_cast<double>(r.rlim_cur);
}

}  // namespace

double address_space_headroom_bytes()
{
    const double limit = address_space_limit_bytes();
    return std::isinf(limit) ? limit : std::max(0.0, limit - vm_size_bytes());
}

MemoryLimit memory_limit(double limit_gib, int threads)
{
    MemoryLimit m;
    if (limit_gib > 0) {
        m.bytes = limit_gib * 1024.0 * 1024.0 * 1024.0;
        m.source = detail::concat("the limit {memory_limit} is ", format_bytes(m.bytes));
    } else {
        m.bytes = static_cast<double>(available_memory_bytes());
        m.source = detail::concat("have ", format_bytes(m.bytes), " available on this machine");
    }
    const double headroom = address_space_headroom_bytes();
    if (!std::isinf(headroom)) {
        const double left = std::max(0.0, headroom - kBlasReservePerThread * std::max(1, threads));
        if (left < m.bytes) {
            m.bytes = left;
            m.source = detail::concat("have ", format_bytes(left), " left by the address-space limit (ulimit -v) of ",
                                      format_bytes(address_space_limit_bytes()), " after the BLAS buffers of ",
                                      std::max(1, threads), " threads");
        }
    }
    return m;
}

void check_address_space_at_start(const char* program, int threads) noexcept
{
    const double limit = address_space_limit_bytes();
    if (std::isinf(limit)) return;
    const double headroom = std::max(0.0, limit - vm_size_bytes());
    const double needed = kBlasReservePerThread * std::max(1, threads) + 64.0 * 1024 * 1024;
    if (headroom >= needed) return;
    // No allocation here (this may run before any constructor): a fixed buffer, snprintf.
    char line[512];
    const int len = std::snprintf(line, sizeof line,
                                  "%s: error: the address-space limit (ulimit -v %.0f KiB) leaves %.0f MiB; starting "
                                  "needs at least %.0f MiB (the BLAS buffers of %d threads and the first arrays); "
                                  "raise ulimit -v or set OMP_NUM_THREADS lower\n",
                                  program, limit / 1024, headroom / (1024 * 1024), needed / (1024 * 1024),
                                  std::max(1, threads));
    if (len > 0) (void)!::write(2, line, std::min<std::size_t>(static_cast<std::size_t>(len), sizeof line - 1));
    ::_exit(3);
}

AllocationFailed::AllocationFailed(double bytes) : bytes_(bytes), message_{}
{
    double v = bytes;
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    for (; v >= 1024.0 && u < 6; ++u) v /= 1024.0;
    std::snprintf(message_, sizeof message_, "out of memory: allocating %.*f %s failed", u == 0 ? 0 : 1, v, units[u]);
}

namespace {

/// The large arrays handed out (address -> rounded size) and the released ones kept for
/// reuse, most recent last.
struct PageCache {
    std::mutex mutex;
    std::unordered_map<void*, std::size_t> live;
    std::vector<std::pair<void*, std::size_t>> kept;
};
PageCache& page_cache()
{
    static PageCache* cache = new PageCache;  // never destroyed: releases may run at exit
    return *cache;
}
constexpr std::size_t kHugePage = std::size_t(2) << 20;
constexpr std::size_t kKeptArrays = 2;

}  // namespace

void* allocate_pages(std::size_t bytes)
{
    const bool large = bytes >= 2 * kHugePage;
    const std::size_t align = large ? kHugePage : 64;
    // aligned_alloc wants a multiple of the alignment; the rounding is at most 2 MiB of 4+.
    const std::size_t size = std::max<std::size_t>(align, (bytes + align - 1) / align * align);
    if (!large) {
        void* p = std::aligned_alloc(align, size);
        if (p == nullptr) throw AllocationFailed(static_cast<double>(size));
        return p;
    }
    PageCache& cache = page_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    void* p = nullptr;
    for (auto it = cache.kept.rbegin(); it != cache.kept.rend(); ++it)
        if (it->second == size) {
            p = it->first;
            cache.kept.erase(std::next(it).base());
            break;
        }
    if (p == nullptr) {
        // Another size: the kept arrays go back first, so the peak stays what it was.
        for (const auto& [q, n] : cache.kept) std::free(q);
        cache.kept.clear();
        p = std::aligned_alloc(align, size);
        if (p == nullptr) throw AllocationFailed(static_cast<double>(size));
        // Advice only: without THP support the pages stay 4 KiB, which is correct, just slower.
        (void)madvise(p, size, MADV_HUGEPAGE);
    }
    cache.live.emplace(p, size);
    return p;
}

void release_pages(void* p) noexcept
{
    if (p == nullptr) return;
    PageCache& cache = page_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    const auto it = cache.live.find(p);
    if (it == cache.live.end()) {  // a small array
        std::free(p);
        return;
    }
    cache.kept.emplace_back(p, it->second);
    cache.live.erase(it);
    if (cache.kept.size() > kKeptArrays) {
        std::free(cache.kept.front().first);
        cache.kept.erase(cache.kept.begin());
    }
}

std::string format_bytes(double bytes)
{
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 5) {
        bytes /= 1024.0;
        ++u;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
}

double measure_triad_bandwidth_gbs(std::size_t elements, int repetitions)
{
    std::vector<double> a(elements), b(elements), c(elements);
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < elements; ++i) {
        a[i] = 0.0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
    std::vector<double> seconds;
    for (int r = 0; r < std::max(1, repetitions); ++r) {
        const double t0 = wall_seconds();
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < elements; ++i) a[i] = b[i] + 0.5 * c[i];
        seconds.push_back(wall_seconds() - t0);
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    // Touch the result so the loop cannot be dropped.
    return a[elements / 2] == 2.0 ? 24.0 * static_cast<double>(elements) / median * 1e-9 : 0.0;
}

void require_memory(double needed_bytes, const MemoryLimit& limit, const std::string& what)
{
    if (needed_bytes > limit.bytes)
        throw ResourceError(detail::concat(what, " needs ", format_bytes(needed_bytes), ", ", limit.source,
                                           "; reduce the lattice, {vectors}, or run on more ranks"));
}

}  // namespace topokpm

