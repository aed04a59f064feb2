#pragma once
/// @file reduce_kernels.hpp
/// The CUDA kernels' shared contract, plain C++ (no CUDA types): the dot-product
/// workspace and sweep description every CUDA sweep (sell_kernels.hpp, stencil_kernels.hpp)
/// takes, and the unfused building blocks of the benchmark's naive stage. Implemented by
/// numerics/cuda/reduce_kernels.cu; a CPU-only build has no definitions and never calls
/// them (the CUDA operators are stubs there, numerics/cuda/stubs.cpp).
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
#include "numerics/base/types.hpp"
#include "numerics/spmmv/width_registry.hpp"
#include "runtime/device/device.hpp"

namespace topokpm::numerics::kernels::cuda {

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

// ---- unfused building blocks, for the benchmark's "naive" KPM stage (seed 004 Fig. 3) ----

/// y := scale * (t - shift * x) + beta * y, element-wise over n complex values.
void axpby_shifted(std::int64_t n, double scale, double shift, double beta, const complex_type* t,
                   const complex_type* x, complex_type* y);

/// Per column c of the N x R blocks: <a_c|b_c> = sum_i conj(a_ic) b_ic (a separate sweep);
/// blocking, result to the host.
std::vector<complex_type> column_dots(std::int64_t num_rows, int num_cols, const complex_type* a,
                                      const complex_type* b, DotWorkspace& workspace);

}  // namespace topokpm::numerics::kernels::cuda
