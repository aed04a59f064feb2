#pragma once
/// @file sell_operator.hpp
/// Operators over a stored SELL-C-σ matrix.

#include <memory>

#include "numerics/base/operator.hpp"
#include "numerics/sparse/sell_matrix.hpp"

namespace topokpm::numerics {

/// The fused augmented SpMMV (seed 004, Fig. 5) over `matrix`: one sweep computes
/// y = scale (A - shift) x + beta y and, if asked, <x|x> and <y|x> per column.
/// Block widths 1, 2, 4, 8, 16, 32 run compile-time specialised kernels; other widths
/// a generic kernel (one PERFWARNING per width). OpenMP over chunks.
std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const SellMatrix> matrix);

/// The naive reference path (seed 004, Fig. 3): a plain SpMV per column, then separate
/// BLAS-1 style sweeps for the shift/scale/axpby and for each dot product. Same results
/// to rounding, several times the memory traffic; kept for tests and as the benchmark
/// baseline.
std::unique_ptr<Operator> make_naive_operator(std::shared_ptr<const SellMatrix> matrix);

}  // namespace topokpm::numerics
