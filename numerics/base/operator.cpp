#include "numerics/base/operator.hpp"

#include "runtime/base/error.hpp"

namespace topokpm {

void Operator::apply_single(const BlockVectorSingle&, BlockVectorSingle&, const AugmentedOps&, DotSums*) const
{
    throw InputError(detail::concat("--precision single: the operator ", name(),
                                    " has no single-precision kernel (available: --matrix sell or crs on "
                                    "--device cpu); use --precision double"));
}

}  // namespace topokpm
