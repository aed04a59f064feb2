#include "numerics/distributed/halo_device.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <variant>

#include "numerics/distributed/halo_kernels.hpp"
#include "runtime/base/error.hpp"
#include "runtime/device/device.hpp"

namespace topokpm::numerics {

template <class T>
void pack_rows_host(const HaloPattern& pattern, const T* x, int r, T* send)
{
    const auto sends = static_cast<std::int64_t>(pattern.send_index.size());
#pragma omp parallel for schedule(static) if (sends * r > 4096)
    for (std::int64_t k = 0; k < sends; ++k) {
        const T* src = x + static_cast<std::int64_t>(pattern.send_index[k]) * r;
        std::copy(src, src + r, send + k * r);
    }
}

template <class T>
void remote_correction_host(const HaloPattern& pattern, const T* halo, const T* x, T* y, int r, double scale,
                            DotSums* dots)
{
    using Real = typename T::value_type;  // double, or float for --precision single
    const auto rows = static_cast<std::int64_t>(pattern.remote_row.size());
    const int threads = rows * r > 4096 ? omp_get_max_threads() : 1;
    std::vector<complex_double> partial(static_cast<size_t>(threads) * r, complex_double(0.0, 0.0));
#pragma omp parallel num_threads(threads)
    {
        // Interleaved (re, im) reals with the complex products written out: std::complex's
        // operator* checks for NaN/inf (a __muldc3 call per product) and does not vectorise.
        // The sums are double in both precisions (a float halo is widened).
        std::vector<double> dy(2 * static_cast<size_t>(r)), yx(2 * static_cast<size_t>(r), 0.0);
        const Real* hal = reinterpret_cast<const Real*>(halo);
        const double* vals = reinterpret_cast<const double*>(pattern.remote_vals.data());
#pragma omp for schedule(static)
        for (std::int64_t i = 0; i < rows; ++i) {
            std::fill(dy.begin(), dy.end(), 0.0);
            for (std::int64_t e = pattern.remote_ptr[i]; e < pattern.remote_ptr[i + 1]; ++e) {
                const double vr = vals[2 * e], vi = vals[2 * e + 1];
                const Real* h = hal + 2 * static_cast<std::int64_t>(pattern.remote_col[e]) * r;
#pragma omp simd
                for (int c = 0; c < r; ++c) {
                    const double hr = h[2 * c], hi = h[2 * c + 1];
                    dy[2 * c] += vr * hr - vi * hi;
                    dy[2 * c + 1] += vr * hi + vi * hr;
                }
            }
            const std::int64_t row = pattern.remote_row[i];
            Real* yr = reinterpret_cast<Real*>(y + row * r);
            const Real* xr = reinterpret_cast<const Real*>(x + row * r);
#pragma omp simd
            for (int c = 0; c < r; ++c) {
                double dre = scale * dy[2 * c], dim = scale * dy[2 * c + 1];
                if constexpr (std::is_same_v<Real, double>) {  // y += d, as the CPU sweep adds it
                    yr[2 * c] += dre;
                    yr[2 * c + 1] += dim;
                } else {  // y + d rounded once; the share from the change y took (exact)
                    const double old_re = yr[2 * c], old_im = yr[2 * c + 1];
                    yr[2 * c] = static_cast<float>(old_re + dre);
                    yr[2 * c + 1] = static_cast<float>(old_im + dim);
                    dre = double(yr[2 * c]) - old_re;
                    dim = double(yr[2 * c + 1]) - old_im;
                }
                const double xre = xr[2 * c], xim = xr[2 * c + 1];
                yx[2 * c] += dre * xre + dim * xim;  // conj(d) x
                yx[2 * c + 1] += dre * xim - dim * xre;
            }
        }
        for (int c = 0; c < r; ++c)
            partial[static_cast<size_t>(omp_get_thread_num()) * r + c] = complex_double(yx[2 * c], yx[2 * c + 1]);
    }
    if (dots != nullptr)
        for (int t = 0; t < threads; ++t)  // thread order: reproducible
            for (int c = 0; c < r; ++c) dots->yx[c] += partial[static_cast<size_t>(t) * r + c];
}

template void pack_rows_host(const HaloPattern&, const complex_double*, int, complex_double*);
template void pack_rows_host(const HaloPattern&, const complex_single*, int, complex_single*);
template void remote_correction_host(const HaloPattern&, const complex_double*, const complex_double*,
                                     complex_double*, int, double, DotSums*);
template void remote_correction_host(const HaloPattern&, const complex_single*, const complex_single*,
                                     complex_single*, int, double, DotSums*);

namespace {

/// Copies the pieces not already in place into halo (rows x r values).
template <class T>
void place_halo_pieces(const std::vector<typename BasicHaloDevice<T>::Piece>& pieces, int r, T* halo)
{
    // Rows of all pieces in one loop over blocks of 256 rows: the team shares every piece.
    std::vector<std::pair<size_t, global_index>> blocks;  // (piece, first row in it)
    for (size_t p = 0; p < pieces.size(); ++p)
        if (pieces[p].values != halo + pieces[p].row_offset * r)
            for (global_index i = 0; i < pieces[p].rows; i += 256) blocks.emplace_back(p, i);
    const auto count = static_cast<std::int64_t>(blocks.size());
#pragma omp parallel for schedule(static) if (count > 4)
    for (std::int64_t b = 0; b < count; ++b) {
        const auto& piece = pieces[blocks[b].first];
        const global_index first = blocks[b].second, rows = std::min<global_index>(256, piece.rows - first);
        std::memcpy(halo + (piece.row_offset + first) * r, piece.values + first * r,
                    static_cast<size_t>(rows) * r * sizeof(T));
    }
}

/// MPI staging in plain host vectors (the CPU rank and the host stand-in; a GPU rank's
/// staging is page-locked, halo_device_cuda.cpp).
template <class T>
class HostStagedHalo : public BasicHaloDevice<T> {
public:
    using BasicHaloDevice<T>::BasicHaloDevice;
    T* send_staging(int r) override
    {
        send_.resize(this->pattern_.send_index.size() * static_cast<size_t>(r));
        return send_.data();
    }
    T* halo_staging(int r) override
    {
        halo_.resize(static_cast<size_t>(this->pattern_.halo_rows) * r);
        return halo_.data();
    }

protected:
    std::vector<T> send_, halo_;  ///< staging (host)
};

/// A rank on the CPU: the MPI buffers are the only buffers.
template <class T>
class HostHalo final : public HostStagedHalo<T> {
public:
    using Block = BasicBlockVector<T>;
    explicit HostHalo(HaloPattern pattern) : HostStagedHalo<T>(std::move(pattern)) {}
    std::string name() const override { return "host"; }
    int device() const override { return device::no_device; }
    const T* x_values(const Block& x) const override { return x.data(); }
    T* y_values(Block& y) const override { return y.data(); }
    void pack(const T* x, int r, T* send) override { pack_rows_host(this->pattern_, x, r, send); }
    void unpack(int r, const std::vector<typename BasicHaloDevice<T>::Piece>& pieces) override
    {
        place_halo_pieces(pieces, r, this->halo_staging(r));  // what MPI received is in place
    }
    void apply_remote(const T* x, T* y, int r, double scale, DotSums* dots) override
    {
        remote_correction_host(this->pattern_, this->halo_staging(r), x, y, r, scale, dots);
    }
};

/// The host stand-in: "device" buffers of its own, explicit copies to and from staging.
template <class T>
class StandinHalo final : public HostStagedHalo<T> {
public:
    using Block = BasicBlockVector<T>;
    explicit StandinHalo(HaloPattern pattern) : HostStagedHalo<T>(std::move(pattern)) {}
    std::string name() const override { return "host-standin"; }
    int device() const override { return device::host_standin; }
    const T* x_values(const Block& x) const override { return x.device_data_read(device::host_standin); }
    T* y_values(Block& y) const override { return y.device_data_read_write(device::host_standin); }
    void pack(const T* x, int r, T* send) override
    {
        device_send_.resize(this->pattern_.send_index.size() * static_cast<size_t>(r));
        pack_rows_host(this->pattern_, x, r, device_send_.data());
        std::memcpy(send, device_send_.data(), device_send_.size() * sizeof(T));
    }
    void unpack(int r, const std::vector<typename BasicHaloDevice<T>::Piece>& pieces) override
    {
        device_halo_.resize(static_cast<size_t>(this->pattern_.halo_rows) * r);
        place_halo_pieces(pieces, r, device_halo_.data());  // the "upload": no piece is in place there
    }
    void apply_remote(const T* x, T* y, int r, double scale, DotSums* dots) override
    {
        TOPOKPM_REQUIRE(device_halo_.size() == static_cast<size_t>(this->pattern_.halo_rows) * r,
                        "host stand-in halo: apply_remote of width ", r, " without unpack(", r, ")");
        remote_correction_host(this->pattern_, device_halo_.data(), x, y, r, scale, dots);
    }

private:
    std::vector<T> device_send_, device_halo_;  ///< the stand-in's "device" buffers
};

/// A CPU operator applied to the blocks' host-standin mirrors, in the CPU operator's
/// precision (a double operator takes double blocks, a single one complex-float blocks).
class HostStandinOperator final : public Operator {
public:
    explicit HostStandinOperator(std::shared_ptr<const Operator> cpu) : cpu_(std::move(cpu))
    {
        TOPOKPM_REQUIRE(cpu_ != nullptr, "host stand-in operator: needs a CPU operator");
    }
    global_index num_rows() const override { return cpu_->num_rows(); }
    std::string name() const override { return "standin-" + cpu_->name(); }
    OperatorCost cost() const override { return cpu_->cost(); }
    Precision precision() const override { return cpu_->precision(); }
    int blocks_device() const override { return device::host_standin; }

protected:
    void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override
    {
        TOPOKPM_REQUIRE(cpu_->precision() == Precision::Double, name(), ": double blocks on a single-precision stand-in");
        on_mirrors(x, y, ops, dots);
    }
    void do_apply(const BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                  const AugmentedOps& ops, DotSums* dots) const override
    {
        if (cpu_->precision() != Precision::Single) return Operator::do_apply(x, y, ops, dots);  // refuses
        on_mirrors(x, y, ops, dots);
    }

private:
    /// Host scratch in the CPU operator's precision: the stand-in's "kernel" runs the CPU one.
    template <class T>
    struct Scratch {
        BasicBlockVector<T> x, y;
    };

    /// Copies x's mirror (and y's with beta != 0) into host scratch, runs the CPU operator,
    /// writes y's mirror: the blocks' host arrays are never read or written.
    template <class T>
    void on_mirrors(const BasicBlockVector<T>& x, BasicBlockVector<T>& y, const AugmentedOps& ops, DotSums* dots) const
    {
        if (!std::holds_alternative<Scratch<T>>(scratch_)) scratch_ = Scratch<T>{};
        BasicBlockVector<T>& xs = std::get<Scratch<T>>(scratch_).x;
        BasicBlockVector<T>& ys = std::get<Scratch<T>>(scratch_).y;
        const global_index n = x.num_rows();
        const int r = x.num_cols();
        if (xs.num_rows() != n || xs.num_cols() != r) {
            xs = BasicBlockVector<T>(n, r);
            ys = BasicBlockVector<T>(n, r);
        }
        const T* xd = x.device_data_read(device::host_standin);
        std::memcpy(xs.data(), xd, x.bytes());
        T* yd = ops.beta != 0.0 ? y.device_data_read_write(device::host_standin)
                                : y.device_data_overwrite(device::host_standin);
        if (ops.beta != 0.0) std::memcpy(ys.data(), yd, y.bytes());
        cpu_->apply(xs, ys, ops, dots);
        std::memcpy(yd, ys.data(), y.bytes());
    }

    std::shared_ptr<const Operator> cpu_;
    mutable std::variant<Scratch<complex_double>, Scratch<complex_single>> scratch_;
};

}  // namespace

template <class T>
std::unique_ptr<BasicHaloDevice<T>> make_halo_device(int device, HaloPattern pattern)
{
    if (device == device::no_device) return std::make_unique<HostHalo<T>>(std::move(pattern));
    if (device == device::host_standin) return std::make_unique<StandinHalo<T>>(std::move(pattern));
    TOPOKPM_USER_REQUIRE(device >= 0, "halo device ", device, ": allowed are ", device::no_device, " (host), ",
                         device::host_standin, " (host stand-in) or a CUDA device index >= 0");
    return kernels::cuda::make_cuda_halo_device<T>(std::move(pattern), device);
}

template std::unique_ptr<BasicHaloDevice<complex_double>> make_halo_device(int, HaloPattern);
template std::unique_ptr<BasicHaloDevice<complex_single>> make_halo_device(int, HaloPattern);

std::unique_ptr<Operator> make_host_standin_operator(std::shared_ptr<const Operator> cpu)
{
    return std::make_unique<HostStandinOperator>(std::move(cpu));
}

}  // namespace topokpm::numerics
