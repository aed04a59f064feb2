#include <omp.h>

#include <map>
#include <memory>

#include "numerics/spmmv/sell_single.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

class SellSingleOperator final : public Operator {
public:
    explicit SellSingleOperator(const SellMatrix& m) : m_(SellSingleMatrix::from(m))
    {
        TOPOKPM_REQUIRE(m.num_cols() == m.num_rows(), "a local operator needs a square matrix");
    }
    SellSingleOperator(const SellMatrix& m, const LatticeRowOrder& lattice, const TileOptions& options)
        : SellSingleOperator(m)
    {
        tiled_ = true;
        threads_ = omp_get_max_threads();
        for (const int r : {8, 16, 32}) {
            ChunkSchedule s = lattice_chunk_schedule(m, lattice, r, threads_, options);
            if (s.tile_cells > 0) schedules_[r] = std::make_shared<const ChunkSchedule>(std::move(s));
        }
    }

    global_index num_rows() const override { return m_.num_rows; }
    Precision precision() const override { return Precision::Single; }

    void apply_single(const BlockVectorSingle& x, BlockVectorSingle& y, const AugmentedOps& ops,
                      DotSums* dots) const override
    {
        TOPOKPM_REQUIRE(x.num_rows() == num_rows() && y.num_rows() == num_rows() && x.num_cols() == y.num_cols() &&
                            x.num_cols() >= 1,
                        "block shapes ", x.num_rows(), "x", x.num_cols(), " and ", y.num_rows(), "x", y.num_cols(),
                        " for an operator of ", num_rows(), " rows");
        TOPOKPM_REQUIRE(x.data() != y.data(), "x and y must not alias");
        TOPOKPM_REQUIRE(!ops.want_dots || dots != nullptr, "want_dots without a DotSums");
        const ChunkSchedule* schedule = nullptr;
        if (const auto it = schedules_.find(x.num_cols()); it != schedules_.end() && threads_ == omp_get_max_threads())
            schedule = it->second.get();  // else the kernel's static split
        kernels::cpu::sell_spmmv_single(m_, x.data(), y.data(), x.num_cols(), ops, ops.want_dots ? dots : nullptr,
                                        schedule);
    }

    /// Double blocks go through single precision: x (and y when beta != 0) rounded to
    /// float, one single sweep, y widened back (exactly).
    void apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override
    {
        const BlockVectorSingle xs = to_single(x);
        BlockVectorSingle ys = ops.beta != 0.0 ? to_single(y) : BlockVectorSingle(y.num_rows(), y.num_cols());
        apply_single(xs, ys, ops, dots);
        y = to_double(ys);
    }

    std::string name() const override
    {
        const std::string layout = m_.chunk_height == 1 && m_.sigma == 1
                                       ? std::string("crs")
                                       : "sell-" + std::to_string(m_.chunk_height) + "-" + std::to_string(m_.sigma);
        return layout + (tiled_ ? "-tiled" : "") + "-single";
    }

    OperatorCost cost() const override
    {
        OperatorCost c;
        c.nonzeros = static_cast<double>(m_.num_nonzeros);
        c.matrix_bytes = m_.storage_bytes();
        c.storage_bytes = m_.storage_bytes();
        return c;
    }

private:
    SellSingleMatrix m_;
    bool tiled_ = false;
    int threads_ = 0;
    std::map<int, std::shared_ptr<const ChunkSchedule>> schedules_;  // by R, for threads_ threads
};

}  // namespace

std::unique_ptr<Operator> make_sell_single_operator(const SellMatrix& matrix)
{
    return std::make_unique<SellSingleOperator>(matrix);
}

std::unique_ptr<Operator> make_sell_single_operator(const SellMatrix& matrix, const LatticeRowOrder& lattice,
                                                   const TileOptions& options)
{
    return std::make_unique<SellSingleOperator>(matrix, lattice, options);
}

}  // namespace topokpm::numerics
