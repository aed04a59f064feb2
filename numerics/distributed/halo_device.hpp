#pragma once
/// @file halo_device.hpp
/// The device seam of DistributedOperator (docs/cuda_backend.md, "GPU ranks under mpirun"):
/// where a rank's blocks live and the two steps of one apply() that touch them. The
/// exchange itself (MPI, comm modes, dots over ranks) is written once in
/// distributed_operator.cpp against this interface; plain C++, no MPI, no CUDA types.
///
///   pack          send[k][c] = x[send_index[k]][c] gathered where x lives, then copied into
///                 a host buffer: send_staging() that MPI sends from, or the rank's segment of
///                 the node's shared window that peers on the node read (wait_packed);
///   unpack        the halo, in pieces of host memory (halo_staging() where MPI received it,
///                 or a peer's shared segment), copied to where x and y live;
///   apply_remote  the remote correction there, reading the unpacked halo:
///                     y_i += scale * sum_h H_ih halo_h,   yx_c += sum_i conj(d_ic) x_ic
///                 over the remote rows i (d = the correction just added).
///
/// Three implementations, chosen by make_halo_device(device):
///   device::no_device (-1)   the rank runs on the CPU: x and y are the host arrays, the
///                            staging buffers are the device buffers (no copies);
///   device::host_standin     the host stand-in: x and y are BlockVector's host-standin
///                            mirror, packing gathers into a separate "device" buffer copied
///                            to the staging buffer, the halo is copied from staging into a
///                            "device" buffer; the same CPU loops as device::no_device. Every
///                            build; what the tests run the device path on without a GPU;
///   a CUDA device d >= 0     x and y are the CUDA mirrors on d, gather and remote-correction
///                            kernels (numerics/cuda/halo_kernels.cu, contract halo_kernels.hpp),
///                            page-locked staging buffers, the dots by the deterministic
///                            column_dots of reduce_kernels.hpp. NotCompiled in CPU-only builds.
/// Dots are this rank's; DistributedOperator sums them over the ranks as on the CPU.
/// Threads: wait_packed and unpack may run on the communication thread of --comm-mode task
/// while the calling thread runs the local operator; the CUDA implementation queues the
/// gather and both bus copies on a copy stream of its own (non-blocking with respect to the
/// default stream the local operator runs on), so they overlap the local sweep on the GPU;
/// events keep the order x written -> gather and upload -> remote kernel. No two calls run
/// at the same time.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "numerics/base/operator.hpp"

namespace topokpm::numerics {

/// What a rank sends and how its remote part reads the halo (built by DistributedOperator).
struct HaloPattern {
    std::vector<local_index> send_index;   ///< local rows to pack, grouped by peer
    global_index halo_rows = 0;            ///< rows of the halo buffer
    // remote part: local row remote_row[i] has entries remote_ptr[i] .. remote_ptr[i+1]
    std::vector<local_index> remote_row;
    std::vector<std::int64_t> remote_ptr{0};
    std::vector<local_index> remote_col;   ///< halo positions
    std::vector<complex_type> remote_vals;
};

/// T = complex_double or complex_single (--precision single, every device: the halo and the
/// blocks in float, the remote correction's arithmetic and the dots in double, y rounded once
/// per entry).
template <class T>
class BasicHaloDevice {
public:
    using Block = BasicBlockVector<T>;
    virtual ~BasicHaloDevice() = default;
    /// "host", "host-standin" or "cuda:D".
    virtual std::string name() const = 0;
    /// The device index (device::no_device, device::host_standin or a CUDA device).
    virtual int device() const = 0;
    const HaloPattern& pattern() const { return pattern_; }

    /// x's values where the local operator reads them (uploads a stale device copy).
    virtual const T* x_values(const Block& x) const = 0;
    /// y's values where the local operator left them; marks the other copy stale.
    virtual T* y_values(Block& y) const = 0;

    /// Host buffers of send_index.size() x r and halo_rows x r values (page-locked for a
    /// GPU), valid until the next call with another r: what MPI sends from and receives into.
    virtual T* send_staging(int r) = 0;
    virtual T* halo_staging(int r) = 0;
    /// Host memory the device copies to or from directly (the node's shared window, mapped
    /// in this process): CUDA page-locks it (cudaHostRegister; where that is refused the
    /// copies still work, through the driver's staging); unregister_host before it is freed
    /// waits for the copies queued on it. Host and stand-in: nothing to do.
    virtual void register_host(void* /*memory*/, std::size_t /*bytes*/) {}
    virtual void unregister_host(void* /*memory*/) {}

    /// Starts packing x (from x_values) into `send` (send_index.size() x r host values:
    /// send_staging(r) or registered memory), on the thread that queued x's latest writes.
    /// Host and stand-in: done on return, by the calling thread's OpenMP team. CUDA: the
    /// gather and the download are queued on the copy stream after those writes, ahead of
    /// the local sweep the caller launches next (a running sweep holds every SM until it
    /// ends, so a gather queued after it would wait for it); returns at once.
    virtual void pack(const T* x, int r, T* send) = 0;
    /// Returns when `send` holds the pack (and every unpack queued before it is done: the
    /// pieces it read may be overwritten); any thread (the communication thread).
    virtual void wait_packed() {}
    /// Halo rows [row_offset, row_offset + rows) are at `values` (host memory, rows x r).
    struct Piece {
        const T* values;
        global_index row_offset, rows;
    };
    /// Moves the halo, whose rows the pieces cover once each, to where apply_remote reads it
    /// (pieces inside halo_staging(r) at their own offset are already in place on the host).
    /// CUDA: queued on the copy stream, the remote kernel waits for it; returns before it
    /// is done, the pieces must stay until the next wait_packed().
    virtual void unpack(int r, const std::vector<Piece>& pieces) = 0;
    /// Adds the remote correction from the unpacked halo to y (from y_values); adds this
    /// rank's remote share of yx to dots->yx when dots is not null (sized r).
    virtual void apply_remote(const T* x, T* y, int r, double scale, DotSums* dots) = 0;

protected:
    explicit BasicHaloDevice(HaloPattern pattern) : pattern_(std::move(pattern)) {}
    HaloPattern pattern_;
};

using HaloDevice = BasicHaloDevice<complex_double>;

/// The implementation for `device` (see the file comment). Throws NotCompiled for a CUDA
/// device in a CPU-only build, InputError for an index that is none of the three.
template <class T>
std::unique_ptr<BasicHaloDevice<T>> make_halo_device(int device, HaloPattern pattern);

/// The CPU loops device::no_device and the host stand-in run (and the tests compare the CUDA
/// kernels with): the gather, and the remote correction reading `halo`. In single precision
/// the correction d = scale sum_h H_ih halo_h is formed in double, y_i + d is rounded once to
/// float, and the dot share is conj(y_new - y_old) x in double (the change y really took).
template <class T>
void pack_rows_host(const HaloPattern& pattern, const T* x, int r, T* send);
template <class T>
void remote_correction_host(const HaloPattern& pattern, const T* halo, const T* x, T* y, int r, double scale,
                            DotSums* dots);

/// A local operator "on the device" for the host stand-in: applies `cpu` (any CPU operator,
/// in its precision: double blocks for a double one, complex-float blocks for a single one)
/// to the host-standin mirrors of x and y. Each apply() copies x's mirror into a
/// host scratch block (and y's when beta != 0), runs `cpu`, and writes y's mirror: never
/// reads or writes x's or y's host arrays, so a block the distributed operator works on
/// stays on the stand-in "device" between sweeps, as with a CUDA operator. Tests only (no
/// option selects it): the host stand-in of a CUDA local operator. Name "standin-<cpu>".
std::unique_ptr<Operator> make_host_standin_operator(std::shared_ptr<const Operator> cpu);

}  // namespace topokpm::numerics
