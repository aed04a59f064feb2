#include "numerics/base/operator.hpp"

#include "runtime/base/error.hpp"

namespace topokpm {

void Operator::check_operands(global_index x_rows, int x_cols, global_index y_rows, int y_cols, bool same_block,
                              const AugmentedOps& ops, const DotSums* dots) const
{
    const global_index n = num_rows();
    TOPOKPM_REQUIRE(x_rows == n && y_rows == n && x_cols == y_cols && x_cols >= 1, name(), " apply: blocks ", x_rows,
                    " x ", x_cols, " and ", y_rows, " x ", y_cols, " for an operator of ", n, " rows");
    TOPOKPM_REQUIRE(!same_block, name(), " apply: x and y must not alias");
    TOPOKPM_REQUIRE(!ops.want_dots || dots != nullptr, name(), " apply: want_dots without a DotSums");
}

void Operator::do_apply(const BasicBlockVector<complex_single>&, BasicBlockVector<complex_single>&,
                        const AugmentedOps&, DotSums*) const
{
    throw InputError(detail::concat("{precision} single: the operator ", name(),
                                    " has no single-precision kernel (available: {matrix} sell, crs or free "
                                    "on {device} cpu); use {precision} double"));
}

void Operator::do_apply_two_steps(BlockVector&, BlockVector&, const AugmentedOps&, DotSums*, DotSums*) const
{
    TOPOKPM_REQUIRE(false, name(), ": fused_steps() offered two steps without a fused kernel (double)");
}

void Operator::do_apply_two_steps(BasicBlockVector<complex_single>&, BasicBlockVector<complex_single>&,
                                  const AugmentedOps&, DotSums*, DotSums*) const
{
    TOPOKPM_REQUIRE(false, name(), ": fused_steps() offered two steps without a fused kernel (single)");
}

void Operator::apply_in_single(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const
{
    const auto xs = convert_block<complex_single>(x);
    auto ys = ops.beta != 0.0 ? convert_block<complex_single>(y)
                              : BasicBlockVector<complex_single>(y.num_rows(), y.num_cols());
    do_apply(xs, ys, ops, dots);
    convert_block_into(ys, y);
}

}  // namespace topokpm
