#include "numerics/spmmv/sell_operator.hpp"

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
            kernels::cpu::sell_spmmv(*m_, x.data(), y.data(), x.num_cols(), ops, d);
        else
            kernels::reference::sell_spmmv(*m_, x.data(), y.data(), x.num_cols(), ops, d);
    }

    std::string name() const override
    {
        const std::string layout = m_->chunk_height() == 1 && m_->sigma() == 1
                                       ? std::string("crs")
                                       : "sell-" + std::to_string(m_->chunk_height()) + "-" + std::to_string(m_->sigma());
        return path_ == Path::Naive ? "naive-" + layout : layout;
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
};

}  // namespace

std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const SellMatrix> matrix)
{
    return std::make_unique<SellOperator>(std::move(matrix), Path::Fused);
}

std::unique_ptr<Operator> make_naive_operator(std::shared_ptr<const SellMatrix> matrix)
{
    return std::make_unique<SellOperator>(std::move(matrix), Path::Naive);
}

}  // namespace topokpm::numerics
