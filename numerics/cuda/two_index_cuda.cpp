// The cuda store of the two-index trace (numerics/kpm/two_index_store.hpp): the kept vectors
// in device buffers, filled by the transpose kernel from the blocks' CUDA mirrors (where the
// CUDA operators left them), the products by cublasZgemm on the device, only the W x B x M
// products of a batch copied back. Everything is queued on the legacy default stream, as the
// CUDA operators' sweeps; the copy back waits for it.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "numerics/cuda/cublas_check.hpp"
#include "numerics/cuda/two_index_kernels.hpp"
#include "numerics/kpm/two_index_store.hpp"
#include "runtime/device/cuda_check.hpp"
#include "runtime/device/device.hpp"
#include "topokpm/config.hpp"

static_assert(TOPOKPM_HAVE_CUDA, "numerics/cuda/two_index_cuda.cpp is only built with the CUDA backend");

namespace topokpm::numerics {

namespace {

#define TOPOKPM_CUBLAS(call) cuda_support::check_cublas((call), #call)

class CudaTwoIndexStore final : public TwoIndexStore {
public:
    CudaTwoIndexStore(int device, global_index rows, int width, int num_moments, int batch)
        : device_(device), n_(rows), w_(width), m_(num_moments), batch_(batch),
          k_(static_cast<std::size_t>(rows) * static_cast<std::size_t>(width))
    {
        device::set_device(device);
        device::require_device_memory(
            two_index_store_bytes(rows, width, num_moments, batch), device,
            detail::concat("the two-index moments' kept vectors (M = ", num_moments, " blocks of N = ", rows,
                           " x W = ", width, ", a batch of ", batch, " more and their products)"));
        const std::size_t value = sizeof(complex_type);
        right_ = device::DeviceBuffer(k_ * static_cast<std::size_t>(num_moments) * value, device, "two-index R vectors");
        left_ = device::DeviceBuffer(k_ * static_cast<std::size_t>(batch) * value, device, "two-index L vectors");
        product_ = device::DeviceBuffer(static_cast<std::size_t>(width) * batch * num_moments * value, device,
                                        "two-index products");
        TOPOKPM_CUBLAS(cublasCreate(&handle_));  // on the legacy default stream
    }
    ~CudaTwoIndexStore() override
    {
        if (handle_) (void)cublasDestroy(handle_);  // errors cannot be reported from here
    }
    CudaTwoIndexStore(const CudaTwoIndexStore&) = delete;
    CudaTwoIndexStore& operator=(const CudaTwoIndexStore&) = delete;

    std::string name() const override { return "cuda:" + std::to_string(device_); }

    void keep_right(int i, const BlockVector& v) override { transpose(right() + k_ * std::size_t(i), v); }
    void keep_left(int l, const BlockVector& v) override { transpose(left() + k_ * std::size_t(l), v); }

    void products(int filled, int columns, complex_type* out) override
    {
        device::set_device(device_);
        const cuDoubleComplex one = make_cuDoubleComplex(1.0, 0.0), zero = make_cuDoubleComplex(0.0, 0.0);
        auto* product = static_cast<cuDoubleComplex*>(product_.data());
        const auto* l = reinterpret_cast<const cuDoubleComplex*>(left());
        const auto* r = reinterpret_cast<const cuDoubleComplex*>(right());
        for (int c = 0; c < columns; ++c) {
            const std::size_t offset = static_cast<std::size_t>(c) * static_cast<std::size_t>(n_);
            TOPOKPM_CUBLAS(cublasZgemm(handle_, CUBLAS_OP_C, CUBLAS_OP_N, filled, m_, static_cast<int>(n_), &one,
                                       l + offset, static_cast<int>(k_), r + offset, static_cast<int>(k_), &zero,
                                       product + static_cast<std::size_t>(c) * batch_ * m_, batch_));
        }
        // cudaMemcpy on the legacy default stream waits for the ZGEMMs queued there.
        product_.download(out, static_cast<std::size_t>(columns) * batch_ * m_ * sizeof(complex_type));
    }

private:
    complex_type* right() const { return static_cast<complex_type*>(right_.data()); }
    complex_type* left() const { return static_cast<complex_type*>(left_.data()); }

    void transpose(complex_type* to, const BlockVector& v)
    {
        TOPOKPM_REQUIRE(v.num_rows() == n_ && v.num_cols() == w_, "a block of ", v.num_rows(), " x ", v.num_cols(),
                        " for a two-index store of ", n_, " x ", w_);
        device::set_device(device_);
        kernels::cuda::transpose_columns(v.device_data_read(device_), n_, w_, to);
    }

    int device_;
    global_index n_;
    int w_, m_, batch_;
    std::size_t k_;  // values per block
    device::DeviceBuffer right_, left_, product_;
    cublasHandle_t handle_ = nullptr;
};

}  // namespace

std::unique_ptr<TwoIndexStore> make_cuda_two_index_store(int device, global_index rows, int width, int num_moments,
                                                         int batch)
{
    return std::make_unique<CudaTwoIndexStore>(device, rows, width, num_moments, batch);
}

}  // namespace topokpm::numerics
