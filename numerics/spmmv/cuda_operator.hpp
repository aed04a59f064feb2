#pragma once
/// @file cuda_operator.hpp
/// Operators that run the augmented SpMMV on a CUDA GPU behind the Operator seam, so KPM and
/// Lanczos run unchanged (seed 004, section IV-C).
///
/// Data residency: the matrix (or the stencil's potential) is uploaded once at construction.
/// Block vectors get a device mirror on first use (block_vector.hpp) and stay on the GPU
/// between sweeps: apply() uploads x only when its host copy is newer, never uploads y when
/// beta == 0, and leaves y valid on the device only. The host sees the values again the
/// first time it reads them. Only the 3 R dot sums travel every sweep.
///
/// Performance model per sweep and column (minimum traffic, seed 004 Eq. 6): SELL reads
/// 20 bytes per stored entry once per sweep (amortised over R) + 48 bytes per row (x read,
/// y read and written); the stencil operator replaces the matrix by 8 bytes per site (ti) or
/// row (graphene). Flops: 8 per non-zero + 34 per row. At 13 non-zeros per row that is
/// B_min(R) = (260/R + 48)/138 bytes/flop for SELL.
///
/// Widths R in {1, 2, 4, 8, 16, 32} run compile-time specialised kernels; any other R is
/// split into those widths (one PERFWARNING per operator and width). Dot products are
/// deterministic for a given device, N and R (no atomics). One operator must not be applied
/// from two host threads at once.
///
/// Precision: the operators over complex-double values sweep complex-double blocks; those
/// over complex-float values (`--precision single`) have precision() Single, sweep
/// complex-float blocks (4 bytes per value part: half the vector and matrix traffic) with the
/// arithmetic of sell_kernels.hpp / stencil_kernels.hpp (a row's sum in float, the epilogue and
/// the dots in double), and take double blocks through Operator::apply_in_single (rounded on
/// the host, one single sweep, widened back: the Lanczos bounds). Names end in "-single".
///
/// In builds without CUDA (TOPOKPM_CUDA=OFF or no nvcc) all factories throw NotCompiled.

#include <memory>

#include "numerics/base/block_stencil.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/sparse/sell_matrix.hpp"

namespace topokpm::numerics {

/// Uploads `matrix` (build it with C = 32, one warp per chunk) to CUDA device `device` and
/// returns its augmented-SpMMV operator ("cuda-sell-C-sigma").
/// @param matrix  SELL-C-σ matrix of all rows (single rank: columns = rows); any C >= 1
/// @param device  CUDA device index, 0 <= device < visible devices
/// @throws InputError for a bad device index, ResourceError when the matrix does not fit the
///         device's free memory, NotCompiled without CUDA, CudaError on runtime failures.
std::unique_ptr<Operator> make_cuda_sell_operator(std::shared_ptr<const SellMatrix> matrix, int device = 0);

/// The single-precision SELL operator ("cuda-sell-C-sigma-single") over a complex-float
/// matrix (BasicSellMatrix<complex_single>::build rounds the model's values): 8 + 4 bytes per
/// stored entry on the device. Throws as above.
std::unique_ptr<Operator> make_cuda_sell_operator(std::shared_ptr<const BasicSellMatrix<complex_single>> matrix,
                                                  int device = 0);

/// Matrix-free operator for `stencil` on CUDA device `device` ("cuda-free-<name>", with
/// "-single" in Precision::Single): uploads the potential (8 bytes per entry, double in both
/// precisions) and the compressed coupling blocks (rounded to complex float in single),
/// generates the rows on the fly. The stencil must validate() and its non-zero block entries
/// must fit 48 KiB of shared memory (always true for B <= 8 and <= 26 neighbour terms).
/// A magnetic field's phases (BlockStencil::field) are uploaded too, with the blocks in
/// double, and every entry carries its phase (stencil_kernels.hpp: the row kernel, the
/// CPU stencil's peierls_phase_entry; not yet run on a GPU).
/// @throws as make_cuda_sell_operator; InputError for an invalid stencil.
std::unique_ptr<Operator> make_cuda_stencil_operator(const BlockStencil& stencil, int device = 0,
                                                     Precision precision = Precision::Double);

}  // namespace topokpm::numerics
