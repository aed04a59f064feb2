#pragma once
/// @file block_vector.hpp
/// A block of R vectors of length N stored row-major ("interleaved"): element (i, c)
/// lives at data[i * R + c]. One row of the block is contiguous, so a sparse kernel
/// reads the R values that one matrix entry multiplies with a single cache line
/// (seed 004, section IV-A).
///
/// Optional device mirror (PETSc's offload mask). A BlockVector always owns its host
/// array; a device operator (e.g. make_cuda_sell_operator) may attach a device copy of the
/// same N x R values, and the block then tracks where the valid data is:
///
///   state   host copy   device copy   reached by
///   host    valid       stale/absent  any non-const host access; construction
///   device  stale       valid         a device operator writing the block (as y)
///   both    valid       valid         a device operator reading it (as x); a host read
///                                     of a `device` block (which downloads it)
///
/// Host accessors keep the CPU code unchanged: a const access (data() const, row() const,
/// operator() const) downloads when the state is `device`; a non-const access first
/// downloads if needed and then marks the device copy stale. Without a mirror the state
/// is always `host` and each accessor costs one predictable branch.
///
/// Thread safety: like std::vector, concurrent const access is safe (the one download is
/// serialised by a mutex); a non-const access must not race with other access to the same
/// block. Kernels take data() once before their parallel region.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "numerics/base/types.hpp"

namespace topokpm {

/// Where the valid copy of a BlockVector's values lives.
enum class MemoryState : std::uint8_t {
    host,    ///< only the host array is valid (always the case without a device mirror)
    device,  ///< only the device copy is valid (the host array is stale)
    both,    ///< host array and device copy hold the same values
};

/// Storage for the device copy of a BlockVector: the CUDA backend provides one per device
/// (make_device_mirror); tests plug in a host-memory fake to check the state logic
/// without a GPU. All copies are blocking.
class DeviceMirror {
public:
    virtual ~DeviceMirror() = default;
    /// Device index the copy lives on.
    virtual int device() const = 0;
    /// Address of the copy in device memory (`bytes` bytes, suitably aligned for complex double).
    virtual void* data() = 0;
    /// Host -> device copy of `bytes` bytes.
    virtual void upload(const void* host, std::size_t bytes) = 0;
    /// Device -> host copy of `bytes` bytes.
    virtual void download(void* host, std::size_t bytes) = 0;
};

/// A device mirror of `bytes` bytes on CUDA device `device` (cudaMalloc). Throws
/// ResourceError when the device lacks the free memory, NotCompiled in CPU-only builds.
std::unique_ptr<DeviceMirror> make_device_mirror(int device, std::size_t bytes);

class BlockVector {
public:
    /// Empty (0 x 0) block. Defined out of line, like the destructor: the mirror's
    /// synchronisation state is an incomplete type here.
    BlockVector();
    /// N rows, R columns, zero-initialised, on the host.
    BlockVector(global_index num_rows, int num_cols);
    /// Copies the values (downloading from the device first if the device copy is the only
    /// valid one); the copy lives on the host and has no device mirror.
    BlockVector(const BlockVector& other);
    BlockVector& operator=(const BlockVector& other);
    BlockVector(BlockVector&& other) noexcept;
    BlockVector& operator=(BlockVector&& other) noexcept;
    ~BlockVector();

    global_index num_rows() const { return num_rows_; }
    int num_cols() const { return num_cols_; }

    complex_type* data()
    {
        prepare_host_write();
        return data_.data();
    }
    const complex_type* data() const
    {
        prepare_host_read();
        return data_.data();
    }

    /// Element (row i, column c).
    complex_type& operator()(global_index i, int c) { return data()[index(i, c)]; }
    const complex_type& operator()(global_index i, int c) const { return data()[index(i, c)]; }

    /// Pointer to the R contiguous values of row i.
    complex_type* row(global_index i) { return data() + index(i, 0); }
    const complex_type* row(global_index i) const { return data() + index(i, 0); }

    std::size_t size() const { return data_.size(); }
    std::size_t bytes() const { return data_.size() * sizeof(complex_type); }

    void swap(BlockVector& other) noexcept;

    // ---- device mirror (used by device operators; CPU code never needs these) ----

    /// Where the valid values are (always `host` without a device mirror).
    MemoryState memory_state() const { return state_.load(std::memory_order_acquire); }
    /// True when a device copy is attached.
    bool has_device_mirror() const { return mirror_ != nullptr; }

    /// Device address of the values for *reading* (an operator's x): uploads when the
    /// device copy is absent or stale; afterwards the state is `both`. Creates the mirror
    /// on `device` if there is none (a mirror on another device is first synchronised to
    /// the host and dropped). Throws ResourceError when the device lacks memory.
    const complex_type* device_data_read(int device) const;
    /// Device address for reading *and* writing (y with beta != 0): uploads if needed,
    /// then marks the host copy stale (state `device`).
    complex_type* device_data_read_write(int device);
    /// Device address for overwriting every value (y with beta == 0): never uploads,
    /// marks the host copy stale (state `device`).
    complex_type* device_data_overwrite(int device);

    /// Makes the host array valid (downloads if the state is `device`); no-op otherwise.
    void sync_to_host() const { prepare_host_read(); }
    /// Downloads if needed and releases the device copy (state `host`).
    void release_device_mirror();
    /// Attaches a caller-made mirror (tests, custom allocators); the host array stays the
    /// valid copy (state `host`). `mirror` must hold at least bytes() bytes.
    void attach_device_mirror(std::unique_ptr<DeviceMirror> mirror);

private:
    std::size_t index(global_index i, int c) const
    {
        return static_cast<std::size_t>(i) * static_cast<std::size_t>(num_cols_) +
               static_cast<std::size_t>(c);
    }
    // The fast path is the single comparison; the rest lives in block_vector.cpp.
    void prepare_host_read() const
    {
        if (state_.load(std::memory_order_acquire) == MemoryState::device) download_to_host();
    }
    void prepare_host_write()
    {
        if (state_.load(std::memory_order_acquire) != MemoryState::host) mark_host_only();
    }
    void download_to_host() const;
    void mark_host_only();
    void ensure_mirror(int device) const;

    global_index num_rows_ = 0;
    int num_cols_ = 0;
    // mutable: a const host read may download, a const device read may upload; the
    // observable values never change.
    mutable std::vector<complex_type> data_;
    mutable std::atomic<MemoryState> state_{MemoryState::host};  // acquire load = plain load on x86
    mutable std::unique_ptr<DeviceMirror> mirror_;
    struct Sync;                         // mutex serialising transfers (block_vector.cpp)
    mutable std::unique_ptr<Sync> sync_;
};

}  // namespace topokpm
