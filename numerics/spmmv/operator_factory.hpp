#pragma once
/// @file operator_factory.hpp
/// One way to build an operator, and one model of what it costs. Every caller that needs
/// an operator (the serial run, the ranks of a distributed run, the `auto` weights probe)
/// builds it with make_operator(); every caller that needs its size before building it
/// (the memory check, the multi-rank planner, performance reports) asks
/// operator_cost_model() for the same spec. So the planner, the memory refusal and the
/// runtime price the same operator.
///
///   kind    device  precision        what runs                                 header
///   sell    cpu     double | single  SELL-C-σ, tiled sweep order on a lattice  sell_operator.hpp
///                                    (real values when the rows are real_valued())
///   crs     cpu     double | single  the same with C = 1, σ = 1                sell_operator.hpp
///   free    cpu     double | single  the matrix-free stencil                   stencil_kernels.hpp
///   naive   cpu     double           SpMV per column + BLAS-1 sweeps (Fig. 3)  sell_operator.hpp
///   sell    cuda    double | single  SELL-32-σ on the GPU (a chunk is a warp)  cuda_operator.hpp
///   free    cuda    double | single  the stencil on the GPU                    cuda_operator.hpp
///
/// Cost model (seed 004 §III; perf_model.hpp has the flop count), for a rank of n rows and
/// nnz stored nonzeros and a block of W columns:
///   matrix bytes read per sweep  = a_nnz nnz + a_row n
///       stored formats: a_nnz = sizeof(value) + 4 (16 + 4 double, 8 + 4 single; a real-valued
///       model on the CPU's sell and crs stores real values: 8 + 4, 4 + 4), a_row = 0
///       (padding and the O(n) chunk tables, ~5 bytes per row, are left out);
///       free: a_nnz = 0, a_row = 8 p (the double potential, p entries per row: 1/4 ti, 1 graphene)
///   bytes held                   = the same (the matrix, or the potential)
///   vector bytes per sweep       = 3 v n W  (x read, y read and written; v = 16 double, 8 single)
///   one N x W block              = v n W
///   flops per sweep              = (8 nnz + 34 n) W

#include <functional>
#include <memory>
#include <optional>

#include "numerics/base/block_stencil.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/base/row_source.hpp"
#include "numerics/sparse/sell_matrix.hpp"
#include "numerics/sparse/sell_schedule.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"

namespace topokpm::numerics {

enum class OperatorKind { Sell, Crs, Free, Naive };
enum class Backend { Cpu, Cuda };

/// The rows an operator applies: [begin, end) of the whole matrix; end < 0 means up to the
/// last row. A part that is not the whole matrix keeps only the entries whose columns lie in
/// [begin, end), renumbered from 0: the local block of a rank of a row-distributed run
/// (numerics/distributed; the other columns are its remote part) or a self-contained
/// sample (operator_rate). Kind free takes whole x-planes of the stencil (x_slab), so begin
/// and end must be multiples of one plane (orbitals ny nz rows); an InputError otherwise.
/// A rank of a 2-D decomposition owns rows that are not one range: `runs` (when not empty;
/// begin and end are then ignored) lists them as ascending, disjoint [begin, end) runs of
/// the canonical order, and the part's rows and columns are numbered in that order (local
/// row i = the i-th row of the concatenated runs). Kind free then needs the runs of an
/// (x, y) tile of whole z-columns: one run per x-plane of the tile, each the same y range
/// (xy_tile); an InputError otherwise.
struct RowRange {
    global_index begin = 0;
    global_index end = -1;
    RowRuns runs{};
};

/// What to build (the app maps its options onto this, app/cli/operator_choice.hpp).
struct OperatorSpec {
    OperatorKind kind = OperatorKind::Sell;
    Backend device = Backend::Cpu;
    Precision precision = Precision::Double;
    SellParams sell;       ///< C, σ of kind Sell on the CPU (crs: 1, 1; cuda: C = 32, σ as given)
    int device_index = 0;  ///< CUDA device
    RowRange rows;         ///< the rank's (or sample's) rows; default: all of them
    StencilTuning stencil_tuning;  ///< free on the cpu: the sweep's tuning (stencil_kernels.hpp)
};

/// Rows of the part `spec.rows` selects from a matrix of `total` rows. Throws InputError
/// when the range is not inside [0, total] or is empty.
global_index part_rows(const OperatorSpec& spec, global_index total);

/// Where the matrix comes from, as a model provides it (hamiltonians::operator_source()).
struct OperatorSource {
    const RowSource* rows = nullptr;          ///< sell, crs, naive: the rows [0, rows->num_rows())
    std::function<BlockStencil()> stencil;    ///< free: builds the stencil (allocates the potential)
    std::optional<LatticeRowOrder> lattice;   ///< row order of the lattice: tiled CPU SELL sweep
    double estimated_nonzeros = 0;            ///< nonzeros of the whole matrix, for the cost model
    double potential_per_row = 1;             ///< potential entries per row (free's data)
};

/// Built operator plus what the build learnt (fill efficiency of a stored format) and made
/// (the stencil of kind free).
struct BuiltOperator {
    std::unique_ptr<Operator> op;
    double fill_efficiency = 0;  ///< β of the SELL matrix; 0 for matrix-free
    /// Kind free: the stencil the operator applies (of the part spec.rows selects; the whole
    /// model's when that is every row), built once by source.stencil(). On the CPU the
    /// operator shares it (holding it here costs nothing while the operator lives); on cuda it
    /// is the host copy the device one was made from, freed with its last holder. Readers
    /// that need the model's stencil (the bounds) take it from here instead of building it
    /// again. Null for the stored kinds.
    std::shared_ptr<const BlockStencil> stencil;
};

/// The SELL parameters the stored kinds of `spec` use: (C, σ) for sell on the CPU, (32, σ)
/// on cuda (a chunk is a warp), (1, 1) for crs and naive.
SellParams sell_params(const OperatorSpec& spec);

/// Builds `spec` over `source`. Throws InputError for a combination without an
/// implementation (naive in single precision, naive on cuda), NotCompiled for cuda
/// in a CPU-only build, and what the builders throw (SellMatrix::build, the stencil's
/// validation, device memory). A part (spec.rows not the whole matrix) of a stored kind is
/// swept in plain chunk order: the lattice's tiled order describes the whole matrix.
BuiltOperator make_operator(const OperatorSpec& spec, const OperatorSource& source);

/// The linear cost model of the file comment, per rank: price a rank's part with the rows
/// part_rows(spec, N) and its share of the nonzeros.
struct OperatorCostModel {
    double matrix_bytes_per_nonzero = 0;
    double matrix_bytes_per_row = 0;
    double value_bytes = 16;  ///< per vector entry

    /// Operator data read per sweep, equal to what it holds (bytes).
    double matrix_bytes(double rows, double nonzeros) const
    {
        return matrix_bytes_per_nonzero * nonzeros + matrix_bytes_per_row * rows;
    }
    /// Minimum traffic of one sweep over W columns (bytes).
    double sweep_bytes(double rows, double nonzeros, int width) const
    {
        return matrix_bytes(rows, nonzeros) + 3.0 * value_bytes * rows * width;
    }
    /// One N x W block of vectors (bytes).
    double block_bytes(double rows, int width) const { return value_bytes * rows * width; }
    /// Flops of one sweep over W columns (seed 004 Eq. (5)).
    double sweep_flops(double rows, double nonzeros, int width) const
    {
        return (8.0 * nonzeros + 34.0 * rows) * width;
    }
};

/// True when make_operator() stores real values for `spec` on a model whose entries are all
/// real (RowSource::real_valued()): sell and crs on the CPU (the naive baseline and the GPU
/// kernels keep complex values).
bool stores_real_values(const OperatorSpec& spec, bool real_valued_model);

/// The model for `spec` on a matrix with `potential_per_row` potential entries per row;
/// `real_valued_model`: its entries are all real (RowSource::real_valued()).
OperatorCostModel operator_cost_model(const OperatorSpec& spec, double potential_per_row,
                                      bool real_valued_model = false);

/// Rows per second of `width`-column sweeps of `op` on blocks of its precision (filled with
/// one constant, beta = -1: the KPM step's traffic): `pairs` false, one apply() per sweep (a
/// distributed run's sweeps); true, two sweeps per apply_two_steps() call (a serial KPM run:
/// fused where the kernel fuses them). One warm-up call, then the best of 3 rounds of at
/// least 2 calls and 5 ms each. Shared by operator_rate and the plan's kernel probe.
double sweep_rate(const Operator& op, int width, bool pairs);

/// Rows per second of `width`-column sweeps (sweep_rate, one apply per sweep) of the operator
/// `spec` on the first `rows` rows of `source` (the part RowRange{0, rows}; for free `rows`
/// is rounded down to a multiple of one x-plane, at least one): the `auto` rank weights of
/// a distributed run.
double operator_rate(const OperatorSpec& spec, const OperatorSource& source, global_index rows, int width);

}  // namespace topokpm::numerics
