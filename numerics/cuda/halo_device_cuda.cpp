// The CUDA HaloDevice (numerics/distributed/halo_device.hpp, contract halo_kernels.hpp): the
// pattern on the device, page-locked staging buffers, the gather and remote-correction
// kernels of halo_kernels.cu, the remote share of the dots by column_dots (no atomics).
// Streams: the local operator, the remote kernel and the dots run on the legacy default
// stream; the gather, the download of the send rows and the upload of the halo run on copy_,
// a non-blocking stream (no implicit order with the default stream), so that under
// --comm-mode task they overlap the local sweep. Events give the order that remains:
//   x_ready_      default stream, in pack(): copy_ waits for x's writes before the gather;
//   halo_ready_   copy_, after the halo upload: the remote kernel waits for it;
//   halo_free_    default stream, after the remote kernel: the next upload waits for it.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "numerics/distributed/halo_kernels.hpp"
#include "numerics/spmmv/reduce_kernels.hpp"
#include "runtime/device/cuda_check.hpp"
#include "runtime/device/device.hpp"

namespace topokpm::numerics::kernels::cuda {

namespace {

template <typename T>
device::DeviceBuffer upload(const std::vector<T>& host, int device, const std::string& what)
{
    device::DeviceBuffer buffer(host.size() * sizeof(T), device, what);
    buffer.upload(host.data(), host.size() * sizeof(T));
    return buffer;
}

/// T = complex_double, or complex_single for --precision single: the blocks, the halo and
/// the staging in float; the remote correction and its dot share in double (halo_kernels.hpp).
template <class T>
class CudaHalo final : public BasicHaloDevice<T> {
public:
    using Block = BasicBlockVector<T>;
    using Piece = typename BasicHaloDevice<T>::Piece;
    CudaHalo(HaloPattern pattern, int device)
        : BasicHaloDevice<T>(std::move(pattern)), device_(device), workspace_(device)
    {
        device::set_device(device_);
        TOPOKPM_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
        for (cudaEvent_t* e : {&x_ready_, &halo_ready_, &halo_free_})
            TOPOKPM_CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
        const HaloPattern& p = this->pattern_;
        send_index_ = upload(p.send_index, device_, "halo send rows");
        remote_row_ = upload(p.remote_row, device_, "halo remote rows");
        remote_ptr_ = upload(p.remote_ptr, device_, "halo remote row pointers");
        remote_col_ = upload(p.remote_col, device_, "halo remote columns");
        remote_vals_ = upload(p.remote_vals, device_, "halo remote values");
    }
    ~CudaHalo() override
    {
        (void)cudaSetDevice(device_);  // errors cannot be reported from a destructor
        (void)cudaStreamSynchronize(copy_);
        for (void* memory : registered_) (void)cudaHostUnregister(memory);
        for (cudaEvent_t e : {x_ready_, halo_ready_, halo_free_}) (void)cudaEventDestroy(e);
        (void)cudaStreamDestroy(copy_);
    }
    CudaHalo(const CudaHalo&) = delete;
    CudaHalo& operator=(const CudaHalo&) = delete;

    std::string name() const override { return "cuda:" + std::to_string(device_); }
    int device() const override { return device_; }
    const T* x_values(const Block& x) const override { return x.device_data_read(device_); }
    T* y_values(Block& y) const override { return y.device_data_read_write(device_); }
    T* send_staging(int r) override { return grow(r).send_host; }
    T* halo_staging(int r) override { return grow(r).halo_host; }

    void register_host(void* memory, std::size_t bytes) override
    {
        if (memory == nullptr || bytes == 0) return;
        device::set_device(device_);
        // Page-locked, the bus copies to and from it run asynchronously at full speed; where
        // the driver refuses (some shared-memory mappings), they still work, staged.
        if (cudaHostRegister(memory, bytes, cudaHostRegisterPortable) == cudaSuccess)
            registered_.push_back(memory);
        else
            (void)cudaGetLastError();  // clear the refused call's (non-sticky) error
    }
    void unregister_host(void* memory) override
    {
        device::set_device(device_);
        TOPOKPM_CUDA_CHECK(cudaStreamSynchronize(copy_));  // no copy reads or writes it any more
        const auto it = std::find(registered_.begin(), registered_.end(), memory);
        if (it == registered_.end()) return;
        TOPOKPM_CUDA_CHECK(cudaHostUnregister(memory));
        registered_.erase(it);
    }

    void pack(const T* x, int r, T* send) override
    {
        device::set_device(device_);
        const Buffers& b = grow(r);
        const auto count = static_cast<std::int64_t>(this->pattern_.send_index.size());
        TOPOKPM_CUDA_CHECK(cudaEventRecord(x_ready_, nullptr));  // x's writes queued so far
        TOPOKPM_CUDA_CHECK(cudaStreamWaitEvent(copy_, x_ready_, 0));
        gather_rows(static_cast<const local_index*>(send_index_.data()), count, r, x, b.send_device, copy_);
        TOPOKPM_CUDA_CHECK(cudaMemcpyAsync(send, b.send_device, static_cast<std::size_t>(count) * r * sizeof(T),
                                           cudaMemcpyDeviceToHost, copy_));
    }

    void wait_packed() override
    {
        device::set_device(device_);  // the communication thread of --comm-mode task too
        TOPOKPM_CUDA_CHECK(cudaStreamSynchronize(copy_));  // MPI or a peer reads the pack next
    }

    void unpack(int r, const std::vector<Piece>& pieces) override
    {
        device::set_device(device_);
        const Buffers& b = grow(r);
        TOPOKPM_CUDA_CHECK(cudaStreamWaitEvent(copy_, halo_free_, 0));  // the last remote kernel read it
        for (const Piece& piece : pieces)
            TOPOKPM_CUDA_CHECK(cudaMemcpyAsync(b.halo_device + piece.row_offset * r, piece.values,
                                               static_cast<std::size_t>(piece.rows) * r * sizeof(T),
                                               cudaMemcpyHostToDevice, copy_));
        TOPOKPM_CUDA_CHECK(cudaEventRecord(halo_ready_, copy_));
        // The pieces (halo_host, written by MPI; a peer's shared segment, rewritten two
        // exchanges later) are written again only after the next wait_packed(), which waits
        // for these copies too.
    }

    void apply_remote(const T* x, T* y, int r, double scale, DotSums* dots) override
    {
        device::set_device(device_);
        const Buffers& b = grow(r);
        TOPOKPM_CUDA_CHECK(cudaStreamWaitEvent(nullptr, halo_ready_, 0));
        const auto rows = static_cast<std::int64_t>(this->pattern_.remote_row.size());
        remote_correction(rows, r, static_cast<const local_index*>(remote_row_.data()),
                          static_cast<const std::int64_t*>(remote_ptr_.data()),
                          static_cast<const local_index*>(remote_col_.data()),
                          static_cast<const complex_type*>(remote_vals_.data()), b.halo_device, x, y, scale,
                          dots != nullptr ? b.corr : nullptr, dots != nullptr ? b.xg : nullptr, nullptr);
        TOPOKPM_CUDA_CHECK(cudaEventRecord(halo_free_, nullptr));
        if (dots == nullptr || rows == 0) return;
        const std::vector<complex_type> share = column_dots(rows, r, b.corr, b.xg, workspace_);  // sum conj(d) x
        for (int c = 0; c < r; ++c) dots->yx[c] += share[c];
    }

private:
    struct Buffers {
        T *send_host = nullptr, *halo_host = nullptr, *send_device = nullptr, *halo_device = nullptr;
        complex_type *corr = nullptr, *xg = nullptr;  ///< the remote share of the dots, double in both precisions
    };

    /// The buffers for width r (reallocated when r grows).
    const Buffers& grow(int r)
    {
        if (r > width_) {
            TOPOKPM_CUDA_CHECK(cudaStreamSynchronize(copy_));  // nothing queued on the old buffers
            TOPOKPM_CUDA_CHECK(cudaDeviceSynchronize());
            const HaloPattern& p = this->pattern_;
            const std::size_t v = sizeof(T) * static_cast<std::size_t>(r);
            const std::size_t sends = p.send_index.size() * v, halo = static_cast<std::size_t>(p.halo_rows) * v;
            const std::size_t remote = p.remote_row.size() * sizeof(complex_type) * static_cast<std::size_t>(r);
            send_pinned_ = device::PinnedBuffer(sends);
            halo_pinned_ = device::PinnedBuffer(halo);
            send_ = device::DeviceBuffer(sends, device_, "halo send buffer");
            halo_ = device::DeviceBuffer(halo, device_, "halo buffer");
            corr_ = device::DeviceBuffer(remote, device_, "halo correction");
            xg_ = device::DeviceBuffer(remote, device_, "halo x rows");
            buffers_ = {static_cast<T*>(send_pinned_.data()),       static_cast<T*>(halo_pinned_.data()),
                        static_cast<T*>(send_.data()),              static_cast<T*>(halo_.data()),
                        static_cast<complex_type*>(corr_.data()), static_cast<complex_type*>(xg_.data())};
            width_ = r;
        }
        return buffers_;
    }

    int device_;
    cudaStream_t copy_ = nullptr;
    cudaEvent_t x_ready_ = nullptr, halo_ready_ = nullptr, halo_free_ = nullptr;
    DotWorkspace workspace_;
    device::DeviceBuffer send_index_, remote_row_, remote_ptr_, remote_col_, remote_vals_;
    device::PinnedBuffer send_pinned_, halo_pinned_;
    device::DeviceBuffer send_, halo_, corr_, xg_;
    Buffers buffers_;
    int width_ = 0;
    std::vector<void*> registered_;  ///< register_host's page-locked host memory
};

}  // namespace

template <class T>
std::unique_ptr<BasicHaloDevice<T>> make_cuda_halo_device(HaloPattern pattern, int device)
{
    return std::make_unique<CudaHalo<T>>(std::move(pattern), device);
}

template std::unique_ptr<BasicHaloDevice<complex_double>> make_cuda_halo_device(HaloPattern, int);
template std::unique_ptr<BasicHaloDevice<complex_single>> make_cuda_halo_device(HaloPattern, int);

}  // namespace topokpm::numerics::kernels::cuda
