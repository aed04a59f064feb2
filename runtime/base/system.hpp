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

/// Raw storage for a large array that the threads of a static loop then write first (first
/// touch): 64-byte aligned; from 4 MiB on, 2 MiB aligned with transparent huge pages
/// requested (madvise MADV_HUGEPAGE; the Debian default is "madvise"), so the first touch
/// costs one page fault per 2 MiB instead of per 4 KiB -- on a virtual machine a fault
/// costs microseconds, and the 4 KiB faults of a 0.8 GB matrix were most of its build
/// time (docs/performance.md, "Issue 13"). Never returns null: throws std::bad_alloc.
/// Free with release_pages.
///
/// Reuse: the two large arrays released last are kept, already touched, and a request of the
/// same rounded size takes one of them back (its old contents remain: the caller writes
/// before reading, as for fresh storage) -- the KPM's blocks take the Lanczos bounds' blocks
/// of the same shape, and the first touch of fresh memory, 0.1-1.5 s per 256 MiB on these
/// VMs (docs/performance.md), is paid once. A large request of another size frees the kept
/// arrays first, so the peak use is that of plain allocation. Thread-safe.
void* allocate_pages(std::size_t bytes);
/// Frees storage from allocate_pages (null is allowed); a large array is kept for reuse.
void release_pages(void* p) noexcept;

/// "12.3 GiB", "512.0 MiB", ... (binary prefixes).
std::string format_bytes(double bytes);

/// Throws ResourceError "<what> needs X GiB, have Y GiB available" when
/// `needed_bytes` exceeds `available_bytes`.
void require_memory(double needed_bytes, double available_bytes, const std::string& what);

}  // namespace topokpm
