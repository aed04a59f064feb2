#include "numerics/spmmv/sell_operator.hpp"

#include <omp.h>

#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "numerics/spmmv/spmmv_kernels.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

enum class Path { Fused, Naive };

class SellOperator : public Operator {
public:
    SellOperator(std::shared_ptr<const SellMatrix> matrix, Path path) : m_(std::move(matrix)), path_(path)
    {
        TOPOKPM_REQUIRE(m_ != nullptr, "null matrix");
        TOPOKPM_REQUIRE(m_->num_cols() == m_->num_rows(), "a local operator needs a square matrix");
    }

    /// Tiled: schedules from the lattice, built per (R, threads) on first use.
    SellOperator(std::shared_ptr<const SellMatrix> matrix, const LatticeRowOrder& lattice, const TileOptions& options)
        : SellOperator(std::move(matrix), Path::Fused)
    {
        lattice_ = lattice;
        options_ = options;
        // Fail here, not in the first apply(), when the lattice does not fit the matrix.
        (void)lattice_chunk_schedule(*m_, lattice, 1, 1, options);
    }

    /// A fixed caller-made schedule.
    SellOperator(std::shared_ptr<const SellMatrix> matrix, std::shared_ptr<const ChunkSchedule> schedule)
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

    void apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override
    {
        TOPOKPM_REQUIRE(x.num_rows() == num_rows() && y.num_rows() == num_rows() && x.num_cols() == y.num_cols() &&
                            x.num_cols() >= 1,
                        "block shapes ", x.num_rows(), "x", x.num_cols(), " and ", y.num_rows(), "x", y.num_cols(),
                        " for an operator of ", num_rows(), " rows");
        TOPOKPM_REQUIRE(x.data() != y.data(), "x and y must not alias");
        DotSums* d = ops.want_dots ? dots : nullptr;
        TOPOKPM_REQUIRE(!ops.want_dots || dots != nullptr, "want_dots without a DotSums");
        if (path_ == Path::Fused)
            kernels::cpu::sell_spmmv(*m_, x.data(), y.data(), x.num_cols(), ops, d, schedule_for(x.num_cols()));
        else
            kernels::reference::sell_spmmv(*m_, x.data(), y.data(), x.num_cols(), ops, d);
    }

    std::string name() const override
    {
        const std::string layout = m_->chunk_height() == 1 && m_->sigma() == 1
                                       ? std::string("crs")
                                       : "sell-" + std::to_string(m_->chunk_height()) + "-" + std::to_string(m_->sigma());
        if (path_ == Path::Naive) return "naive-" + layout;
        return lattice_ || fixed_ ? layout + "-tiled" : layout;
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

private:
    std::shared_ptr<const SellMatrix> m_;
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
    return std::make_unique<SellOperator>(std::move(matrix), Path::Fused);
}

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const SellMatrix> matrix, const LatticeRowOrder& lattice,
                                             const TileOptions& options)
{
    return std::make_unique<SellOperator>(std::move(matrix), lattice, options);
}

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const SellMatrix> matrix,
                                             std::shared_ptr<const ChunkSchedule> schedule)
{
    return std::make_unique<SellOperator>(std::move(matrix), std::move(schedule));
}

std::unique_ptr<Operator> make_naive_operator(std::shared_ptr<const SellMatrix> matrix)
{
    return std::make_unique<SellOperator>(std::move(matrix), Path::Naive);
}

}  // namespace topokpm::numerics
