#pragma once
/// @file tuning.hpp
/// Auto-tuning of the hybrid tiles' host width B_h (seed 001 §3.6; docs/dense.md).
/// Step 2: estimate B_h from the measured rates of the dominant kernel (GEMM for
/// Cholesky, TSMQR for QR) on the host's workers together and on the device:
///     B_h = rate_host / (rate_host + rate_device) * B,
/// rounded to the search grid. Step 3: factor an N = 3 B x (devices) matrix with the
/// candidate B_h and move B_h by one grid step towards balance (down while the host's
/// busy time exceeds the device's, up otherwise) until the sign of the difference flips,
/// the range ends or the probes run out; keep the probe with the smallest difference.
/// The grid: B_h = (s - 1) b with the narrow width b a multiple of `granule` (64 for the
/// kernels' preferred sizes, seed Fig. 3), i.e. B_h moves in steps of (s - 1) granule.

#include <functional>
#include <vector>

#include "numerics/dense/execution.hpp"

namespace topokpm::numerics::dense {

enum class DenseOp { cholesky, qr };

/// Measures KernelRates (execution.hpp) of `op` on the runtime of `execution` (which must
/// have a device) with `reps` kernels per worker: host workers all busy at once (per-core
/// rate x cores), the device's workers, and the link as the time to stage `reps` B x B
/// tiles on the device. Throws InputError without a device or for large < 1.
KernelRates measure_kernel_rates(DenseOp op, int large, const DenseExecution& execution, int reps = 3);

/// Step 2: the grid point nearest rate.host / (rate.host + rate.device) * large, clamped to
/// [(s-1) granule, the largest grid point below large]. Throws InputError for
/// non-positive rates, slices < 2, or a large tile with no grid point below it.
int estimate_host_width(const KernelRates& rate, int large, int slices, int granule = 64);

struct HostWidthProbe {
    int host_width = 0;
    double host_seconds = 0.0;    ///< busy time of the host workers, per worker
    double device_seconds = 0.0;  ///< busy time of the device workers, per worker
};

struct HostWidthSearch {
    int host_width = 0;                 ///< the probe with the smallest |host - device|
    std::vector<HostWidthProbe> probes;  ///< in the order probed
};

/// Step 3 over any probe (tests pass a model; tune_host_width() a real factorization):
/// from `start` on the grid of step `step` within [lowest, highest], at most max_probes.
HostWidthSearch search_host_width(int start, int step, int lowest, int highest, int max_probes,
                                  const std::function<HostWidthProbe(int)>& probe);

/// Steps 2 and 3 with the real kernels: rates measured, then probes factoring a random
/// matrix (HPD for Cholesky, Gaussian for QR) of order 3 * large with hybrid tiles.
/// `estimate` (optional) receives step 2's B_h.
HostWidthSearch tune_host_width(DenseOp op, int large, const DenseExecution& execution, int granule = 64,
                                int max_probes = 4, int* estimate = nullptr);

}  // namespace topokpm::numerics::dense
