#pragma once
/// @file system.hpp
/// Facts about the machine a run needs before allocating: memory, thread count.

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>

namespace topokpm {

/// Bytes of memory a new allocation can use now (MemAvailable of /proc/meminfo,
/// falling back to sysinfo's free RAM), never counting swap.
std::uint64_t available_memory_bytes();

/// Address space a thread's first BLAS call maps: OpenBLAS (Debian 0.3.21) maps a 128 MiB
/// buffer per calling thread, plus the thread's 8 MiB stack. Under an address-space limit
/// (ulimit -v) a buffer that cannot be mapped makes OpenBLAS retry forever, so this much per
/// thread is kept out of what a run may allocate (memory_limit) and checked before OpenBLAS
/// starts (check_address_space_at_start).
inline constexpr double kBlasReservePerThread = 136.0 * 1024 * 1024;

/// Address space this process may still map: the soft RLIMIT_AS minus VmSize; infinity when
/// there is no such limit (the usual case).
double address_space_headroom_bytes();

/// The memory a run may use, and which limit set it (every memory check and --plan take it
/// from memory_limit(): one place decides).
struct MemoryLimit {
    double bytes = 0;    ///< what the run's estimate must stay within
    std::string source;  ///< for messages: "{memory_limit} 0.5 GiB", "available on this machine", ...
};

/// `limit_gib` > 0 ({memory_limit}): that many GiB; else the memory available on this
/// machine. Either way no more than the address-space limit (ulimit -v) leaves after the
/// BLAS reserve of `threads` threads (kBlasReservePerThread each); the smallest names the source.
MemoryLimit memory_limit(double limit_gib, int threads);

/// Called first thing in main() (and by the executables' pre-initialisation, before any
/// library constructor, OpenBLAS's included): when an address-space limit leaves less than
/// the BLAS reserve of `threads` threads plus 64 MiB, prints one line "<program>: error:
/// ..." naming ulimit -v and the amount, and exits with status 3 (memory refusal) instead of
/// letting OpenBLAS spin on a failing mmap. Uses system calls only (safe before libc++ is up).
void check_address_space_at_start(const char* program, int threads) noexcept;

/// An allocation that failed: std::bad_alloc (code catching that still sees it) whose what()
/// names the size, "out of memory: allocating 1.2 GiB failed". The application maps it, and
/// any std::bad_alloc, to a memory refusal (exit 3). The program's operator new throws it.
class AllocationFailed : public std::bad_alloc {
public:
    explicit AllocationFailed(double bytes);
    const char* what() const noexcept override { return message_; }
    double bytes() const noexcept { return bytes_; }

private:
    double bytes_;
    char message_[96];  // no allocation while memory is short
};

/// STREAM-like triad a = b + s c over three arrays of `elements` doubles with the current
/// OpenMP threads (first-touched by the same threads): median of `repetitions` runs, in
/// GB/s (1e9 B/s) counting 24 bytes per element (two reads, one write).
double measure_triad_bandwidth_gbs(std::size_t elements, int repetitions);

/// Raw storage for a large array that the threads of a static loop then write first (first
/// touch): 64-byte aligned; from 4 MiB on, 2 MiB aligned with transparent huge pages
/// requested (madvise MADV_HUGEPAGE; the Debian default is "madvise"), so the first touch
/// costs one page fault per 2 MiB instead of per 4 KiB -- on a virtual machine a fault
/// costs microseconds, and the 4 KiB faults of a 0.8 GB matrix were most of its build
/// time (docs/performance.md, "Issue 13"). Never returns null: throws AllocationFailed.
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

/// Throws ResourceError "<what> needs X GiB, <limit>" when `needed_bytes` exceeds
/// `limit.bytes`, the limit named by its source ("the limit {memory_limit} is 0.5 GiB",
/// "have 3.1 GiB available on this machine", ...).
void require_memory(double needed_bytes, const MemoryLimit& limit, const std::string& what);

}  // namespace topokpm
