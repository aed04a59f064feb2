#include "numerics/base/operator.hpp"

#include "numerics/spmmv/width_registry.hpp"
#include "runtime/base/error.hpp"

namespace topokpm {

std::vector<int> Operator::strip_widths(int num_cols) { return numerics::strip_widths(num_cols); }

void Operator::check_operands(global_index x_rows, int x_cols, global_index y_rows, int y_cols, bool same_block,
                              const AugmentedOps& ops, const DotSums* dots) const
{
    const global_index n = num_rows();
    TOPOKPM_REQUIRE(x_rows == n && y_rows == n && x_cols == y_cols && x_cols >= 1, name(), " apply: blocks ", x_rows,
                    " x ", x_cols, " and ", y_rows, " x ", y_cols, " for an operator of ", n, " rows");
    TOPOKPM_REQUIRE(!same_block, name(), " apply: x and y must not alias");
    TOPOKPM_REQUIRE(!ops.want_dots || dots != nullptr, name(), " apply: want_dots without a DotSums");
}

void Operator::check_accumulate(const BlockVector& x, const BlockVector& y, const AugmentedOps& ops) const
{
    const BlockVector& a = *ops.accumulate;
    TOPOKPM_REQUIRE(a.num_rows() == x.num_rows() && a.num_cols() == x.num_cols(), name(), " apply: accumulate block ",
                    a.num_rows(), " x ", a.num_cols(), " for blocks ", x.num_rows(), " x ", x.num_cols());
    TOPOKPM_REQUIRE(&a != &x && &a != &y, name(), " apply: the accumulate block must not alias x or y");
    TOPOKPM_REQUIRE(ops.acc_old == 0.0 || ops.beta != 0.0, name(), " apply: acc_old needs beta != 0 (y_old unread)");
}

void Operator::refuse_accumulate(const char* where) const
{
    throw DimensionMismatch(detail::concat(name(), " apply: no accumulation with ", where,
                                           " (double blocks in apply() only)"));
}

void Operator::apply_then_accumulate(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const
{
    complex_double* acc = ops.accumulate->data();
    const std::size_t len = static_cast<std::size_t>(x.num_rows()) * static_cast<std::size_t>(x.num_cols());
    const double co = ops.acc_old, cx = ops.acc_x, cn = ops.acc_new;
    const complex_double* xs = x.data();
    if (co != 0.0) {  // beta != 0 (check_accumulate): y holds y_old
        const complex_double* ys = y.data();
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < len; ++i) acc[i] += co * ys[i] + cx * xs[i];
    } else if (cx != 0.0) {  // y may be garbage (beta == 0): not read
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < len; ++i) acc[i] += cx * xs[i];
    }
    AugmentedOps plain = ops;
    plain.accumulate = nullptr;
    do_apply(x, y, plain, dots);
    if (cn != 0.0) {
        const complex_double* ys = y.data();
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < len; ++i) acc[i] += cn * ys[i];
    }
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
