#include "runtime/base/error.hpp"
#include "numerics/spmmv/sell_single.hpp"

namespace topokpm::numerics {
namespace {

class SellSingleOperator final : public Operator {
public:
    explicit SellSingleOperator(const SellMatrix& m) : m_(SellSingleMatrix::from(m))
    {
        TOPOKPM_REQUIRE(m.num_cols() == m.num_rows(), "a local operator needs a square matrix");
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
        kernels::cpu::sell_spmmv_single(m_, x.data(), y.data(), x.num_cols(), ops, ops.want_dots ? dots : nullptr);
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
        return layout + "-single";
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
};

}  // namespace

std::unique_ptr<Operator> make_sell_single_operator(const SellMatrix& matrix)
{
    return std::make_unique<SellSingleOperator>(matrix);
}

}  // namespace topokpm::numerics
