#pragma once
/// @file system.hpp
/// Facts about the machine a run needs before allocating: memory, thread count.

#include <cstddef>
#include <cstdint>
#include <string>

namespace topokpm {

/// Bytes of memory a new allocation can use now (MemAvailable of /proc/meminfo,
/// falling back to sysinfo's free RAM), never counting swap.
std::uint64_t available_memory_bytes();

/// STREAM-like triad a = b + s c over three arrays of `elements` doubles with the current
/// OpenMP threads (first-touched by the same threads): median of `repetitions` runs, in
/// GB/s (1e9 B/s) counting 24 bytes per element (two reads, one write).
double measure_triad_bandwidth_gbs(std::size_t elements, int repetitions);

/// "12.3 GiB", "512.0 MiB", ... (binary prefixes).
std::string format_bytes(double bytes);

/// Throws ResourceError "<what> needs X GiB, have Y GiB available" when
/// `needed_bytes` exceeds `available_bytes`.
void require_memory(double needed_bytes, double available_bytes, const std::string& what);

}  // namespace topokpm
