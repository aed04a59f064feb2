#include "runtime/base/system.hpp"

#include <sys/mman.h>
#include <sys/sysinfo.h>

#include <cstdlib>
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
        if (p == nullptr) throw std::bad_alloc();
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
        if (p == nullptr) throw std::bad_alloc();
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

void require_memory(double needed_bytes, double available_bytes, const std::string& what)
{
    if (needed_bytes > available_bytes)
        throw ResourceError(detail::concat(what, " needs ", format_bytes(needed_bytes), ", have ",
                                           format_bytes(available_bytes),
                                           " available on this machine; reduce the lattice, "
                                           "{vectors}, or run on more ranks"));
}

}  // namespace topokpm
