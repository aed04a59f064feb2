#pragma once
/// @file block_stencil_reference.hpp
/// The oracle of the stencil kernels (CPU, CUDA, the host emulation of the CUDA source) and
/// of the models' block_stencil(): the naive loop over sites, orbitals, terms and columns,
/// y = scale (H - shift) x + beta y with the DotSums of numerics/base/operator.hpp, a
/// field's Peierls phases on each entry (BlockStencil::phased). Readable, not fast.

#include <memory>

#include "numerics/base/block_stencil.hpp"
#include "numerics/base/operator.hpp"

namespace topokpm::testing {

/// Validates `stencil` (BlockStencil::validate; throws as it does).
std::unique_ptr<Operator> make_block_stencil_reference_operator(BlockStencil stencil);

}  // namespace topokpm::testing
