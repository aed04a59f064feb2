#pragma once
/// @file block_vector.hpp
/// A block of R vectors of length N stored row-major ("interleaved"): element (i, c)
/// lives at data[i * R + c]. One row of the block is contiguous, so a sparse kernel
/// reads the R values that one matrix entry multiplies with a single cache line
/// (seed 004, section IV-A).
///
/// One class template for both precisions: BasicBlockVector<T> with T = complex_double
/// (BlockVector, every algorithm) or T = complex_single (the KPM vectors of
/// `--precision single`). A new block is zero-filled by the OpenMP threads in the static
/// row split the kernels use (first touch: on a multi-socket node each page lives on the
/// socket of the thread that sweeps its rows). convert_block() rounds (double -> single,
/// to nearest) or widens (single -> double, exact) a block, so a single run's vectors
/// written as double and read back give the same bits.
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
#include "runtime/base/system.hpp"

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
    /// Sets the first `bytes` bytes of the copy to zero (here: by uploading zeros; the CUDA and
    /// stand-in mirrors set them in place).
    virtual void zero(std::size_t bytes) { upload(std::vector<unsigned char>(bytes, 0).data(), bytes); }
};

/// A device mirror of `bytes` bytes on CUDA device `device` (cudaMalloc). Throws
/// ResourceError when the device lacks the free memory, NotCompiled in CPU-only builds.
/// device::host_standin (runtime/device/device.hpp) gives a host-memory mirror in every build.
std::unique_ptr<DeviceMirror> make_device_mirror(int device, std::size_t bytes);

/// T: complex_double or complex_single (explicitly instantiated for those two).
template <class T>
class BasicBlockVector {
public:
    using value_type = T;

    /// Empty (0 x 0) block. Defined out of line, like the destructor: the mirror's
    /// synchronisation state is an incomplete type here.
    BasicBlockVector();
    /// N >= 0 rows, R >= 0 columns, zero-initialised in parallel (first touch), on the host.
    BasicBlockVector(global_index num_rows, int num_cols);
    /// N x R zeros whose only copy is on `device` (device::no_device: the constructor above):
    /// the host array is allocated but not touched, so no page of it is faulted in until a
    /// host access downloads into it, and the device copy is set to zero in place. For the
    /// blocks a device operator sweeps (the KPM's start and previous blocks on a GPU), whose
    /// host arrays a run may never read. Throws ResourceError when the device lacks memory.
    static BasicBlockVector zeros_on(global_index num_rows, int num_cols, int device);
    /// Copies the values (downloading from the device first if the device copy is the only
    /// valid one); the copy lives on the host and has no device mirror.
    BasicBlockVector(const BasicBlockVector& other);
    BasicBlockVector& operator=(const BasicBlockVector& other);
    BasicBlockVector(BasicBlockVector&& other) noexcept;
    BasicBlockVector& operator=(BasicBlockVector&& other) noexcept;
    ~BasicBlockVector();

    global_index num_rows() const { return num_rows_; }
    int num_cols() const { return num_cols_; }

    T* data()
    {
        prepare_host_write();
        return data_.get();
    }
    const T* data() const
    {
        prepare_host_read();
        return data_.get();
    }

    /// Element (row i, column c).
    T& operator()(global_index i, int c) { return data()[index(i, c)]; }
    const T& operator()(global_index i, int c) const { return data()[index(i, c)]; }

    /// Pointer to the R contiguous values of row i.
    T* row(global_index i) { return data() + index(i, 0); }
    const T* row(global_index i) const { return data() + index(i, 0); }

    std::size_t size() const { return static_cast<std::size_t>(num_rows_) * static_cast<std::size_t>(num_cols_); }
    std::size_t bytes() const { return size() * sizeof(T); }

    void swap(BasicBlockVector& other) noexcept;

    // ---- device mirror (used by device operators; CPU code never needs these) ----

    /// Where the valid values are (always `host` without a device mirror).
    MemoryState memory_state() const { return state_.load(std::memory_order_acquire); }
    /// True when a device copy is attached.
    bool has_device_mirror() const { return mirror_ != nullptr; }

    /// Device address of the values for *reading* (an operator's x): uploads when the
    /// device copy is absent or stale; afterwards the state is `both`. Creates the mirror
    /// on `device` if there is none (a mirror on another device is first synchronised to
    /// the host and dropped). Throws ResourceError when the device lacks memory.
    const T* device_data_read(int device) const;
    /// Device address for reading *and* writing (y with beta != 0): uploads if needed,
    /// then marks the host copy stale (state `device`).
    T* device_data_read_write(int device);
    /// Device address for overwriting every value (y with beta == 0): never uploads,
    /// marks the host copy stale (state `device`).
    T* device_data_overwrite(int device);

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

    // Raw bytes from allocate_pages (huge pages for large blocks): the values are
    // constructed by the parallel zero fill, not by one thread (std::vector would
    // value-initialise them serially).
    struct Release {
        void operator()(T* p) const { release_pages(static_cast<void*>(p)); }
    };
    using Storage = std::unique_ptr<T[], Release>;
    static Storage allocate(std::size_t count);

    global_index num_rows_ = 0;
    int num_cols_ = 0;
    // mutable: a const host read may download, a const device read may upload; the
    // observable values never change.
    mutable Storage data_;
    mutable std::atomic<MemoryState> state_{MemoryState::host};  // acquire load = plain load on x86
    mutable std::unique_ptr<DeviceMirror> mirror_;
    struct Sync;                         // mutex serialising transfers (block_vector.cpp)
    mutable std::unique_ptr<Sync> sync_;
};

extern template class BasicBlockVector<complex_double>;
extern template class BasicBlockVector<complex_single>;

/// The block every algorithm works in; single precision only inside the KPM recurrence.
using BlockVector = BasicBlockVector<complex_double>;

/// `in` with every value converted to To: double -> single rounds each part to nearest,
/// single -> double is exact, equal types copy. Host result, no device mirror.
template <class To, class From>
BasicBlockVector<To> convert_block(const BasicBlockVector<From>& in);

/// The same into `out`, which must have in's shape (DimensionMismatch otherwise).
template <class To, class From>
void convert_block_into(const BasicBlockVector<From>& in, BasicBlockVector<To>& out);

}  // namespace topokpm
