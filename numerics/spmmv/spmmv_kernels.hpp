#pragma once
/// @file spmmv_kernels.hpp
/// The kernel contract of the augmented SpMMV over SELL-C-σ, one namespace per backend.
///
/// Every kernel computes, for all R columns of the row-major blocks x and y (element
/// (i, c) at [i * R + c]):
///     y := scale * (A - shift) * x + beta * y        (beta == 0: y overwritten, never read)
/// and with dots != nullptr: dots->xx[c] = <x_c|x_c>, dots->yx[c] = <y_c|x_c> (new y).
/// Per row and column: 8 flops per stored entry, 10 for shift/scale/axpby, 12 for the dots
/// (seed 004's 138 flops per row at 13 entries); minimum traffic per sweep:
/// 20 bytes per stored entry + 48 bytes per row and column.

#include "numerics/base/operator.hpp"
#include "numerics/sparse/sell_matrix.hpp"

namespace topokpm::numerics::kernels {

namespace cpu {
/// Fused kernel, OpenMP over chunks; R in {1, 2, 4, 8, 16, 32} compile-time specialised,
/// other widths a generic loop (one PERFWARNING per width). Dots are reduced per thread
/// and summed in thread order (deterministic for a fixed thread count).
void sell_spmmv(const SellMatrix& a, const complex_type* x, complex_type* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots);
}  // namespace cpu

namespace reference {
/// The naive path of seed 004, Fig. 3: per column a plain SpMV into a temporary, then
/// separate sweeps for shift/scale, axpby and each dot product.
void sell_spmmv(const SellMatrix& a, const complex_type* x, complex_type* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots);
}  // namespace reference

}  // namespace topokpm::numerics::kernels
