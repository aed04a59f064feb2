// The CUDA operators behind the Operator seam (numerics/spmmv/cuda_operator.hpp): own the
// device copy of the matrix or stencil, route block vectors through their device mirrors,
// and call the CUDA launchers of numerics/spmmv/sell_kernels.hpp and stencil_kernels.hpp.
#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>

#include "numerics/spmmv/sell_kernels.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "numerics/spmmv/cuda_operator.hpp"
#include "runtime/base/log.hpp"
#include "runtime/device/device.hpp"

namespace topokpm::numerics {
namespace {

namespace kc = kernels::cuda;

/// Uploads a host vector (std::vector or FirstTouchVector) into a new device buffer.
template <typename T, typename Alloc>
device::DeviceBuffer upload(const std::vector<T, Alloc>& host, int device, const std::string& what)
{
    device::DeviceBuffer buffer(host.size() * sizeof(T), device, what);
    buffer.upload(host.data(), host.size() * sizeof(T));
    return buffer;
}

/// Shared by both operators, T = complex_double or complex_single (the matrix values and
/// the blocks the kernels sweep): device pointers from the mirrors (x read, y written; y
/// uploaded only when beta != 0) and the perf warning for strip-mined widths; the routing of
/// Operator's two block types is TypedOperator's.
template <class T>
class CudaOperatorBase : public TypedOperator<T> {
public:
    int blocks_device() const override { return device_; }

protected:
    explicit CudaOperatorBase(int device) : device_(device), workspace_(device) {}

    /// The kernel on device blocks of type T.
    virtual kc::SweepInfo sweep(const T* x, T* y, int num_cols, const AugmentedOps& ops, DotSums* dots) const = 0;

    /// The "-single" suffix of the names in single precision.
    static std::string precision_suffix() { return precision_of<T> == Precision::Single ? "-single" : ""; }

    void apply_blocks(const BasicBlockVector<T>& x, BasicBlockVector<T>& y, const AugmentedOps& ops,
                      DotSums* dots) const override
    {
        // Operands checked by Operator::apply (by object, never by data(), which would
        // download the device copy).
        device::set_device(device_);
        const T* xd = x.device_data_read(device_);
        T* yd = ops.beta == 0.0 ? y.device_data_overwrite(device_) : y.device_data_read_write(device_);
        const kc::SweepInfo info = sweep(xd, yd, x.num_cols(), ops, dots);
        if (!info.specialised && warned_widths_.insert(x.num_cols()).second) {
            std::string strips;
            for (const int w : info.strip_widths) strips += (strips.empty() ? "" : " + ") + std::to_string(w);
            log::perf_warning("no specialised CUDA kernel for block width R = ", x.num_cols(), " (", this->name(),
                              "); running it as ", strips, ", one sweep over H each. Widths 1, 2, 4, 8, 16, 32 "
                              "run in one sweep");
        }
    }

    int device_;
    mutable kc::DotWorkspace workspace_;
    mutable std::set<int> warned_widths_;
};

template <class T>
class CudaSellOperator final : public CudaOperatorBase<T> {
    using Base = CudaOperatorBase<T>;

public:
    CudaSellOperator(std::shared_ptr<const BasicSellMatrix<T>> matrix, int device)
        : Base(device), matrix_(std::move(matrix))
    {
        TOPOKPM_REQUIRE(matrix_ != nullptr, "make_cuda_sell_operator: null matrix");
        const BasicSellMatrix<T>& m = *matrix_;
        const std::int64_t slots = static_cast<std::int64_t>(m.num_chunks()) * m.chunk_height();
        TOPOKPM_USER_REQUIRE(slots < std::numeric_limits<local_index>::max(), "CUDA SELL operator: ", slots,
                             " row slots exceed the 32-bit row index of the kernels");
        device::set_device(device);
        storage_bytes_ = static_cast<double>(m.values().size() * sizeof(T) +
                                             m.columns().size() * sizeof(local_index) +
                                             m.chunk_start().size() * sizeof(std::int64_t) +
                                             m.chunk_length().size() * sizeof(local_index) +
                                             m.row_of_slot().size() * sizeof(local_index));
        device::require_device_memory(storage_bytes_, device,
                                      ::topokpm::detail::concat("the SELL-", m.chunk_height(), "-", m.sigma(), " matrix (",
                                                     m.num_rows(), " rows, ", m.num_stored(), " stored entries)"));
        values_ = upload(m.values(), device, "SELL values");
        columns_ = upload(m.columns(), device, "SELL columns");
        chunk_start_ = upload(m.chunk_start(), device, "SELL chunk starts");
        chunk_length_ = upload(m.chunk_length(), device, "SELL chunk lengths");
        row_of_slot_ = upload(m.row_of_slot(), device, "SELL row permutation");
        view_ = kc::host_sell_view(m);
        view_.chunk_start = static_cast<const std::int64_t*>(chunk_start_.data());
        view_.chunk_length = static_cast<const local_index*>(chunk_length_.data());
        view_.columns = static_cast<const local_index*>(columns_.data());
        view_.values = static_cast<const T*>(values_.data());
        view_.row_of_slot = static_cast<const local_index*>(row_of_slot_.data());
    }

    global_index num_rows() const override { return matrix_->num_rows(); }

    std::string name() const override
    {
        return ::topokpm::detail::concat("cuda-sell-", matrix_->chunk_height(), "-", matrix_->sigma(),
                                         Base::precision_suffix());
    }

    OperatorCost cost() const override
    {
        // Minimum traffic: value + column of every stored entry, the row permutation.
        const double bytes = (sizeof(T) + 4.0) * static_cast<double>(matrix_->num_stored()) +
                             4.0 * static_cast<double>(matrix_->row_of_slot().size());
        return {static_cast<double>(matrix_->num_nonzeros()), bytes, storage_bytes_};
    }

protected:
    kc::SweepInfo sweep(const T* x, T* y, int num_cols, const AugmentedOps& ops, DotSums* dots) const override
    {
        return kc::sell_spmmv(view_, x, y, num_cols, ops, this->workspace_, dots);
    }

private:
    std::shared_ptr<const BasicSellMatrix<T>> matrix_;
    double storage_bytes_ = 0;
    device::DeviceBuffer values_, columns_, chunk_start_, chunk_length_, row_of_slot_;
    kc::BasicSellView<T> view_;
};

template <class T>
class CudaStencilOperator final : public CudaOperatorBase<T> {
    using Base = CudaOperatorBase<T>;

public:
    CudaStencilOperator(const BlockStencil& stencil, int device)
        : Base(device), name_("cuda-free-" + stencil.name + Base::precision_suffix()), num_rows_(stencil.num_rows()),
          num_nonzeros_(0)
    {
        stencil.validate();
        TOPOKPM_USER_REQUIRE(num_rows_ < std::numeric_limits<local_index>::max(), "CUDA stencil operator: ",
                             num_rows_, " rows exceed the 32-bit row index of the kernels");
        num_nonzeros_ = stencil.num_nonzeros();
        // The tables of stencil_kernels.hpp (non-zero entries per row orbital and term, their
        // masks, the dense blocks rounded to T; in a field the blocks in double as well),
        // uploaded array by array; the view then points at the copies.
        const kc::StencilTables<T> tables = kc::make_stencil_tables<T>(stencil);
        const double table_bytes = tables.shared_bytes();
        TOPOKPM_USER_REQUIRE(table_bytes <= 48.0 * 1024, "CUDA stencil operator: ", tables.terms.size() / 4,
                             " terms of ", stencil.orbitals, "x", stencil.orbitals, " blocks need ", table_bytes,
                             " bytes of coupling tables; the kernel stages at most 48 KiB in shared memory");
        const double field_bytes = 16.0 * static_cast<double>(stencil.field.along.size() +
                                                              stencil.field.across.size() + tables.field_blocks.size());
        device::set_device(device);
        device::require_device_memory(8.0 * stencil.potential.size() + table_bytes + field_bytes, device,
                                      ::topokpm::detail::concat("the ", stencil.name, " stencil potential (",
                                                     stencil.potential.size(), " values)"));
        potential_ = upload(stencil.potential, device, "stencil potential");
        offsets_ = upload(tables.terms, device, "stencil term offsets");
        begin_ = upload(tables.entry_begin, device, "stencil entry ranges");
        column_ = upload(tables.entry_column, device, "stencil entry columns");
        value_ = upload(tables.entry_value, device, "stencil entry values");
        dense_ = upload(tables.dense_blocks, device, "stencil blocks");
        potential_bytes_ = 8.0 * static_cast<double>(stencil.potential.size());
        field_bytes_ = field_bytes;
        view_ = kc::host_stencil_view(stencil, tables);
        if (stencil.field.active()) {
            along_ = upload(stencil.field.along, device, "stencil field factors along y");
            across_ = upload(stencil.field.across, device, "stencil field factors across the y wrap");
            field_blocks_ = upload(tables.field_blocks, device, "stencil blocks for the field");
            view_.field.along = static_cast<const double*>(along_.data());
            view_.field.across = static_cast<const double*>(across_.data());
            view_.field_blocks = static_cast<const double*>(field_blocks_.data());
        }
        view_.terms = static_cast<const int*>(offsets_.data());
        view_.entry_begin = static_cast<const int*>(begin_.data());
        view_.entry_column = static_cast<const int*>(column_.data());
        view_.entry_value = static_cast<const T*>(value_.data());
        view_.dense_blocks = static_cast<const T*>(dense_.data());
        view_.potential = static_cast<const double*>(potential_.data());
    }

    global_index num_rows() const override { return num_rows_; }

    std::string name() const override { return name_; }

    OperatorCost cost() const override
    {
        return {static_cast<double>(num_nonzeros_), potential_bytes_, potential_bytes_ + field_bytes_};
    }

protected:
    kc::SweepInfo sweep(const T* x, T* y, int num_cols, const AugmentedOps& ops, DotSums* dots) const override
    {
        return kc::stencil_spmmv(view_, x, y, num_cols, ops, this->workspace_, dots);
    }

private:
    std::string name_;
    global_index num_rows_;
    global_index num_nonzeros_;
    double potential_bytes_ = 0, field_bytes_ = 0;
    device::DeviceBuffer potential_, offsets_, begin_, column_, value_, dense_, along_, across_, field_blocks_;
    kc::BasicStencilView<T> view_;
};

}  // namespace

std::unique_ptr<Operator> make_cuda_sell_operator(std::shared_ptr<const SellMatrix> matrix, int device)
{
    return std::make_unique<CudaSellOperator<complex_double>>(std::move(matrix), device);
}

std::unique_ptr<Operator> make_cuda_sell_operator(std::shared_ptr<const BasicSellMatrix<complex_single>> matrix,
                                                  int device)
{
    return std::make_unique<CudaSellOperator<complex_single>>(std::move(matrix), device);
}

std::unique_ptr<Operator> make_cuda_stencil_operator(const BlockStencil& stencil, int device, Precision precision)
{
    if (precision == Precision::Single) return std::make_unique<CudaStencilOperator<complex_single>>(stencil, device);
    return std::make_unique<CudaStencilOperator<complex_double>>(stencil, device);
}

}  // namespace topokpm::numerics
