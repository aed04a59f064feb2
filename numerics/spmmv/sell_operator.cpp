#include "numerics/spmmv/sell_operator.hpp"

#include <omp.h>

#include <map>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "numerics/spmmv/sell_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

enum class Path { Fused, Naive };

/// V = complex_double, complex_single, double or float: the matrix's value type; the
/// sweep's vectors are T = ValueTraits<V>::vector (complex double or complex float).
template <class V>
class SellOperator final : public TypedOperator<typename ValueTraits<V>::vector> {
public:
    using Matrix = BasicSellMatrix<V>;
    using T = typename ValueTraits<V>::vector;

    SellOperator(std::shared_ptr<const Matrix> matrix, Path path) : m_(std::move(matrix)), path_(path)
    {
        TOPOKPM_REQUIRE(m_ != nullptr, "null matrix");
        TOPOKPM_REQUIRE(m_->num_cols() == m_->num_rows(), "a local operator needs a square matrix");
    }

    /// Tiled: schedules from the lattice, built per (R, threads) on first use.
    SellOperator(std::shared_ptr<const Matrix> matrix, const LatticeRowOrder& lattice, const TileOptions& options)
        : SellOperator(std::move(matrix), Path::Fused)
    {
        lattice_ = lattice;
        options_ = options;
        // Fail here, not in the first apply(), when the lattice does not fit the matrix.
        (void)lattice_chunk_schedule(*m_, lattice, 1, 1, options);
    }

    /// A fixed caller-made schedule.
    SellOperator(std::shared_ptr<const Matrix> matrix, std::shared_ptr<const ChunkSchedule> schedule)
        : SellOperator(std::move(matrix), Path::Fused)
    {
        TOPOKPM_REQUIRE(schedule != nullptr, "null chunk schedule");
        TOPOKPM_REQUIRE(schedule->num_chunks == m_->num_chunks(), "chunk schedule for ", schedule->num_chunks,
                        " chunks, matrix of ", m_->num_chunks());
        const std::string problem = check_chunk_schedule(*schedule);
        TOPOKPM_REQUIRE(problem.empty(), "chunk schedule: ", problem);
        fixed_ = std::move(schedule);
    }

    global_index num_rows() const override { return m_->num_rows(); }
    bool real_values() const { return !ValueTraits<V>::is_complex; }

    std::string name() const override
    {
        const std::string layout = m_->chunk_height() == 1 && m_->sigma() == 1
                                       ? std::string("crs")
                                       : "sell-" + std::to_string(m_->chunk_height()) + "-" + std::to_string(m_->sigma());
        if (path_ == Path::Naive) return "naive-" + layout;
        const std::string order = lattice_ || fixed_ ? layout + "-tiled" : layout;
        const std::string values = real_values() ? order + "-real" : order;
        return precision_of<T> == Precision::Single ? values + "-single" : values;
    }

    /// The schedule for width r and the current thread count (nullptr: static split).
    const ChunkSchedule* schedule_for(int r) const
    {
        if (fixed_) return fixed_.get();
        if (!lattice_) return nullptr;
        const int threads = omp_get_max_threads();
        std::lock_guard<std::mutex> lock(mutex_);
        const auto key = std::make_pair(r, threads);
        auto it = schedules_.find(key);
        if (it == schedules_.end()) {
            auto s = std::make_shared<const ChunkSchedule>(lattice_chunk_schedule(*m_, *lattice_, r, threads, options_));
            // Untiled (small R): nullptr, i.e. the kernel's own static split, the same ranges.
            it = schedules_.emplace(key, s->tile_cells > 0 ? s : nullptr).first;
        }
        return it->second.get();
    }

    OperatorCost cost() const override
    {
        OperatorCost c;
        c.nonzeros = static_cast<double>(m_->num_nonzeros());
        c.matrix_bytes = m_->storage_bytes();
        c.storage_bytes = m_->storage_bytes();
        return c;
    }

    /// AugmentedOps' accumulation in the register-blocked double sweep's row epilogue (R >= 4
    /// registered: every such width has a group size, sell_kernels.cpp's pick_group).
    bool fuses_accumulation(int r) const override
    {
        return std::is_same_v<T, complex_double> && path_ == Path::Fused && r >= 4 && is_registered_width(r);
    }

protected:
    void apply_blocks(const BasicBlockVector<T>& x, BasicBlockVector<T>& y, const AugmentedOps& ops,
                      DotSums* dots) const override
    {
        if constexpr (std::is_same_v<V, complex_double>) {
            if (path_ == Path::Naive) return kernels::reference::sell_spmmv(*m_, x.data(), y.data(), x.num_cols(), ops, dots);
        }
        kernels::cpu::sell_spmmv(*m_, x.data(), y.data(), x.num_cols(), ops, dots, schedule_for(x.num_cols()));
    }

private:
    std::shared_ptr<const Matrix> m_;
    Path path_;
    std::optional<LatticeRowOrder> lattice_;
    TileOptions options_;
    std::shared_ptr<const ChunkSchedule> fixed_;
    mutable std::mutex mutex_;
    mutable std::map<std::pair<int, int>, std::shared_ptr<const ChunkSchedule>> schedules_;  // (R, threads)
};

}  // namespace

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const SellMatrix> matrix)
{
    return std::make_unique<SellOperator<complex_double>>(std::move(matrix), Path::Fused);
}

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const SellMatrix> matrix, const LatticeRowOrder& lattice,
                                             const TileOptions& options)
{
    return std::make_unique<SellOperator<complex_double>>(std::move(matrix), lattice, options);
}

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<complex_single>> matrix)
{
    return std::make_unique<SellOperator<complex_single>>(std::move(matrix), Path::Fused);
}

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<complex_single>> matrix,
                                             const LatticeRowOrder& lattice, const TileOptions& options)
{
    return std::make_unique<SellOperator<complex_single>>(std::move(matrix), lattice, options);
}

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<double>> matrix)
{
    return std::make_unique<SellOperator<double>>(std::move(matrix), Path::Fused);
}

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<double>> matrix,
                                             const LatticeRowOrder& lattice, const TileOptions& options)
{
    return std::make_unique<SellOperator<double>>(std::move(matrix), lattice, options);
}

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<float>> matrix)
{
    return std::make_unique<SellOperator<float>>(std::move(matrix), Path::Fused);
}

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<float>> matrix,
                                             const LatticeRowOrder& lattice, const TileOptions& options)
{
    return std::make_unique<SellOperator<float>>(std::move(matrix), lattice, options);
}

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const SellMatrix> matrix,
                                             std::shared_ptr<const ChunkSchedule> schedule)
{
    return std::make_unique<SellOperator<complex_double>>(std::move(matrix), std::move(schedule));
}

std::unique_ptr<Operator> make_naive_operator(std::shared_ptr<const SellMatrix> matrix)
{
    return std::make_unique<SellOperator<complex_double>>(std::move(matrix), Path::Naive);
}

}  // namespace topokpm::numerics
