#include "numerics/kpm/two_index_store.hpp"

#include <cblas.h>

#include <climits>
#include <vector>

#include "runtime/base/error.hpp"
#include "runtime/device/device.hpp"

namespace topokpm::numerics {

namespace {

/// The host store and the host stand-in's: the same arrays, transposes and ZGEMM; the
/// stand-in reads each block's host-standin mirror (where the stand-in operators leave it)
/// instead of its host array.
class HostStore final : public TwoIndexStore {
public:
    HostStore(bool standin, global_index rows, int width, int num_moments, int batch)
        : standin_(standin), n_(static_cast<std::size_t>(rows)), w_(width), m_(num_moments), batch_(batch),
          k_(n_ * static_cast<std::size_t>(width)), right_(k_ * static_cast<std::size_t>(num_moments)),
          left_(k_ * static_cast<std::size_t>(batch))
    {
    }

    std::string name() const override { return standin_ ? "host-standin" : "host"; }

    void keep_right(int i, const BlockVector& v) override { transpose(right_.data() + k_ * std::size_t(i), v); }
    void keep_left(int l, const BlockVector& v) override { transpose(left_.data() + k_ * std::size_t(l), v); }

    void products(int filled, int columns, complex_type* out) override
    {
        const complex_type one(1.0, 0.0), zero(0.0, 0.0);
        for (int c = 0; c < columns; ++c) {
            const std::size_t offset = static_cast<std::size_t>(c) * n_;
            cblas_zgemm(CblasColMajor, CblasConjTrans, CblasNoTrans, filled, m_, static_cast<int>(n_), &one,
                        left_.data() + offset, static_cast<int>(k_), right_.data() + offset, static_cast<int>(k_),
                        &zero, out + static_cast<std::size_t>(c) * batch_ * m_, batch_);
        }
    }

private:
    void transpose(complex_type* to, const BlockVector& v) const
    {
        TOPOKPM_REQUIRE(static_cast<std::size_t>(v.num_rows()) == n_ && v.num_cols() == w_, "a block of ",
                        v.num_rows(), " x ", v.num_cols(), " for a two-index store of ", n_, " x ", w_);
        const complex_type* from = standin_ ? v.device_data_read(device::host_standin) : v.data();
        const auto w = static_cast<std::size_t>(w_);
        for (std::size_t j = 0; j < n_; ++j)
            for (std::size_t c = 0; c < w; ++c) to[c * n_ + j] = from[j * w + c];
    }

    bool standin_;
    std::size_t n_;
    int w_, m_, batch_;
    std::size_t k_;  // values per block
    std::vector<complex_type> right_, left_;
};

}  // namespace

double two_index_store_bytes(global_index rows, int width, int num_moments, int batch)
{
    const double block = static_cast<double>(rows) * width;
    return 16.0 * ((num_moments + batch) * block + static_cast<double>(width) * batch * num_moments);
}

std::unique_ptr<TwoIndexStore> make_two_index_store(int device, global_index rows, int width, int num_moments,
                                                    int batch)
{
    TOPOKPM_REQUIRE(rows >= 0 && width >= 1 && num_moments >= 1 && batch >= 1 && batch <= num_moments,
                    "two-index store of ", rows, " rows, width ", width, ", ", num_moments, " moments, batch ", batch);
    // The column of a kept vector is a strided matrix of leading dimension N W for BLAS.
    TOPOKPM_USER_REQUIRE(static_cast<double>(rows) * width <= INT_MAX, "--block-width ", width, ": the two-index ",
                         "moments need N x W <= ", INT_MAX, " (N = ", rows, "); use a smaller --block-width");
    if (device == -1 || device == device::host_standin)
        return std::make_unique<HostStore>(device == device::host_standin, rows, width, num_moments, batch);
    TOPOKPM_USER_REQUIRE(device >= 0, "two-index store on device ", device, ": allowed -1 (host), ",
                         device::host_standin, " (host stand-in) or a CUDA device index >= 0");
    return make_cuda_two_index_store(device, rows, width, num_moments, batch);
}

}  // namespace topokpm::numerics
