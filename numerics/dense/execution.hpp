#pragma once
/// @file execution.hpp
/// Where the tile algorithms run (docs/dense.md): host workers, optionally one device:
/// a "host-memory device" (tasks::DeviceKind::host_memory: own buffers, explicit copies)
/// or a CUDA GPU (tasks::DeviceKind::cuda),
/// and the seed-001 two-level 1-D block-cyclic distribution of tile columns over them.
/// Tasks run on the owner of the tile they write; the runtime stages the others. With
/// `DenseExecution::rates` the update tasks (TRSM, HERK, GEMM; QR's UNMQR and TSMQR)
/// are movable: the runtime's cost model sends each, when ready, to the device with the
/// earliest estimated finish including its copies (tasks::DataflowRuntime), while the
/// panels (POTF2', GEQRT, TSQRT) stay with their column's owner.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "numerics/dense/tile_matrix.hpp"
#include "runtime/tasks/dataflow.hpp"

namespace topokpm::numerics::dense {

/// The cost model of the dominant kernel of a factorization (GEMM for Cholesky, TSMQR for
/// QR) on B x B tiles: all host workers at once and the device's workers, in flop/s
/// (measure_kernel_rates in tuning.hpp), and the host <-> device copy rate in bytes/s.
struct KernelRates {
    double host = 0.0;    ///< all host workers together
    double device = 0.0;  ///< all the device's workers together
    double link = 0.0;    ///< staging copies host -> device; 0: copies cost nothing
};

struct DenseExecution {
    int host_workers = 1;      ///< CPU workers on the host memory, >= 1
    int device_workers = 0;    ///< workers of the one device (1 for cuda); 0: no device
    /// The device's kind: host_memory (CPU kernels on private buffers: the transfer path
    /// without a GPU) or cuda (GPU `gpu`, cuSOLVER/cuBLAS kernels, numerics/cuda).
    tasks::DeviceKind device_kind = tasks::DeviceKind::host_memory;
    int gpu = 0;               ///< CUDA device index (device_kind cuda)
    int slices = 2;            ///< s of seed §3.4: tile column j is the device's when j mod s == s-1; >= 1
    std::size_t window = 4096; ///< task window of the runtime, >= 1
    int inner_block = 32;      ///< QR inner blocking ib, >= 1
    /// Measured with these host and device workers. host and device > 0 (and a device):
    /// update tasks are placed by the runtime's cost model; zero: every task by its owner.
    KernelRates rates;
    const topology::Topology* topology = nullptr;  ///< for pinning (optional)
    std::vector<unsigned> host_pus;    ///< pin host worker w to host_pus[w % size]; empty: unpinned
    std::vector<unsigned> device_pus;  ///< same for the device's workers
};

/// Owner of tile column j among the host (0) and `accelerators` devices (1..P), seed
/// §3.4: columns with j mod s == s-1 go to device 1 + (j / s) mod P, the rest to the
/// host. With P = 0 every column is the host's.
int column_owner(int j, int slices, int accelerators);

/// The workers' time inside tasks and the copies, for benchmarks and tests.
struct DenseReport {
    double seconds = 0.0;
    tasks::DataflowRuntime::Stats stats;
};

/// A runtime for `execution` (throws InputError for out-of-range fields; for a cuda
/// device NotCompiled in a CPU-only build, ResourceError when the GPU is not visible).
std::unique_ptr<tasks::DataflowRuntime> make_runtime(const DenseExecution& execution);

/// Throws InputError when `execution` has a cuda device: for algorithms whose task
/// bodies call host-side code (TSQR, the block-cyclic QR's copy tasks); `what`
/// names the algorithm.
void require_host_addressable(const DenseExecution& execution, const char* what);

/// The runtime's id of tile (i, j) of matrix number `matrix` (0..255).
inline tasks::DataId tile_id(int matrix, int i, int j)
{
    return (tasks::DataId(matrix) << 56) | (tasks::DataId(static_cast<unsigned>(i)) << 28) |
           tasks::DataId(static_cast<unsigned>(j));
}

/// Where tile column j of a matrix meets the diagonal (seed §3.2): its global columns
/// [col_start(j), col_start(j+1)) are rows [offset, offset + width) of tile row `row`.
/// row == mt() for a column that starts below the last row (wide matrices).
struct ColumnStep {
    int row = 0;
    int offset = 0;
};

/// The ColumnStep of every tile column of `a`. Throws InputError when a tile column
/// starting above the last row straddles a tile-row boundary (the hybrid layout keeps
/// every slice inside one large tile: the column partition refines the row partition).
template <class T>
std::vector<ColumnStep> column_steps(const TileMatrix<T>& a)
{
    std::vector<ColumnStep> steps(static_cast<std::size_t>(a.nt()));
    for (int j = 0; j < a.nt(); ++j) {
        const global_index c0 = a.col_start(j), last = a.col_start(j + 1) - 1;
        ColumnStep& s = steps[static_cast<std::size_t>(j)];
        if (c0 >= a.rows()) {
            s.row = a.mt();
            continue;
        }
        s.row = static_cast<int>(c0 / a.mb());
        s.offset = static_cast<int>(c0 % a.mb());
        // Columns past the last row (wide matrices) meet no tile row; the rest must not cross one.
        TOPOKPM_USER_REQUIRE(std::min(last, a.rows() - 1) / a.mb() == s.row, "tile column ", j, " (columns ", c0, "..",
                             last, ") straddles a boundary of the ", a.mb(),
                             "-row tiles: the column tiles must refine the row tiles");
    }
    return steps;
}

/// Registers every tile of `a` as matrix `matrix`, owned per column_owner().
template <class T>
void register_tiles(tasks::DataflowRuntime& runtime, TileMatrix<T>& a, int matrix, const DenseExecution& execution)
{
    const int accelerators = execution.device_workers > 0 ? 1 : 0;
    for (int j = 0; j < a.nt(); ++j)
        for (int i = 0; i < a.mt(); ++i)
            runtime.register_data(tile_id(matrix, i, j), a.tile(i, j), a.tile_bytes(i, j),
                                  column_owner(j, execution.slices, accelerators));
}

}  // namespace topokpm::numerics::dense
