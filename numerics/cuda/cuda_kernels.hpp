#pragma once
/// @file cuda_kernels.hpp
/// The CUDA augmented SpMMV kernels as plain C++ declarations (no CUDA types), called by
/// cuda_operator.cpp and bench/. Internal to numerics/cuda: algorithms use the Operator made
/// by numerics/spmmv/cuda_operator.hpp instead.
///
/// Every launcher computes, for the R columns of row-major device blocks x and y (element
/// (i, c) at [i * R + c]),
///
///     y := scale * (A - shift) * x + beta * y       (beta == 0: y is never read)
///
/// and, when `dots` is not null, xx[c] = <x_c|x_c> and yx[c] = sum_i conj(y_new_ic) x_ic.
/// Widths R in {1, 2, 4, 8, 16, 32} run one compile-time specialised kernel; any other R is
/// strip-mined into those widths (R = 12 -> 8 + 4, R = 64 -> 32 + 32), one sweep over A per
/// strip. Dots are reduced without atomics: warp shuffles and shared memory per block, then
/// a CUB BlockReduce over the per-block partials, so results are bitwise reproducible for a
/// given device, N and R. All calls are blocking when dots are requested (the sums come
/// back to the host) and asynchronous on the default stream otherwise.

#include <cstdint>
#include <vector>

#include "numerics/base/operator.hpp"
#include "numerics/spmmv/width_registry.hpp"
#include "numerics/base/types.hpp"
#include "runtime/device/device.hpp"

namespace topokpm::numerics::kernels::cuda {

/// A SELL-C-σ matrix in device memory (layout of numerics/sparse/sell_matrix.hpp).
struct SellView {
    local_index num_rows = 0;
    local_index num_chunks = 0;
    int chunk_height = 32;                      ///< C (any C >= 1; 32 = one warp per chunk at R = 1)
    const std::int64_t* chunk_start = nullptr;  ///< num_chunks + 1 offsets into columns/values
    const local_index* chunk_length = nullptr;  ///< entries per row of each chunk (with padding)
    const local_index* columns = nullptr;       ///< canonical column of each stored entry
    const complex_type* values = nullptr;       ///< 16 bytes per stored entry
    const local_index* row_of_slot = nullptr;   ///< num_chunks * C; -1 for padding rows
};

/// A BlockStencil (numerics/base/block_stencil.hpp) in device memory, with the blocks
/// compressed to their non-zero entries per row orbital.
struct StencilView {
    int nx = 1, ny = 1, nz = 1;
    int orbitals = 1;                    ///< B
    int periodic[3] = {0, 0, 0};
    int num_terms = 0;                   ///< T, term 0 is the on-site block (offset 0, 0, 0)
    int num_entries = 0;                 ///< length of entry_column / entry_value
    const int* term_offset = nullptr;    ///< 3 T ints: dx, dy, dz of each term
    const int* entry_begin = nullptr;    ///< B T + 1 ints: entries of (orbital o, term t) are
                                         ///< [entry_begin[o T + t], entry_begin[o T + t + 1])
    const int* entry_column = nullptr;   ///< column orbital b of each entry
    const complex_type* entry_value = nullptr;
    const complex_type* dense_blocks = nullptr;  ///< T B B values, block t row-major (site kernel)
    const double* potential = nullptr;   ///< per site, or per row when potential_per_row
    int potential_per_row = 0;
    local_index num_rows = 0;            ///< nx ny nz B
};

/// Device buffers for the dot-product partials and results, grown on demand; one per
/// operator (an operator must not be applied from two host threads at once).
class DotWorkspace {
public:
    explicit DotWorkspace(int device) : device_(device) {}
    /// Device pointer to >= `doubles` doubles for the per-block partials.
    double* partials(std::size_t doubles);
    /// Device pointer to >= `doubles` doubles for the final sums.
    double* results(std::size_t doubles);
    int device() const { return device_; }

private:
    int device_;
    device::DeviceBuffer partials_, results_;
};

/// The variant a sweep ran, for names and provenance.
struct SweepInfo {
    std::vector<int> strip_widths;  ///< one entry per kernel launch, e.g. {8, 4} for R = 12
    bool specialised = true;        ///< false when R had to be strip-mined
};

/// Strip widths used for R columns: numerics::strip_widths() of width_registry.hpp.
using numerics::strip_widths;

/// The augmented SpMMV over a SELL-C-σ matrix. x and y are device pointers to N x R blocks
/// (N = a.num_rows) that must not alias.
SweepInfo sell_spmmv(const SellView& a, const complex_type* x, complex_type* y, int num_cols,
                     const AugmentedOps& ops, DotWorkspace& workspace, DotSums* dots);

/// The same sweep with the matrix generated from a stencil (no stored matrix).
SweepInfo stencil_spmmv(const StencilView& s, const complex_type* x, complex_type* y, int num_cols,
                        const AugmentedOps& ops, DotWorkspace& workspace, DotSums* dots);

// ---- unfused building blocks, for the benchmark's "naive" KPM stage (seed 004 Fig. 3) ----

/// y := scale * (t - shift * x) + beta * y, element-wise over n complex values.
void axpby_shifted(std::int64_t n, double scale, double shift, double beta, const complex_type* t,
                   const complex_type* x, complex_type* y);

/// Per column c of the N x R blocks: <a_c|b_c> = sum_i conj(a_ic) b_ic (a separate sweep);
/// blocking, result to the host.
std::vector<complex_type> column_dots(std::int64_t num_rows, int num_cols, const complex_type* a,
                                      const complex_type* b, DotWorkspace& workspace);

}  // namespace topokpm::numerics::kernels::cuda
