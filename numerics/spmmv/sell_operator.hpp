#pragma once
/// @file sell_operator.hpp
/// Operators over a stored SELL-C-σ matrix.

#include <memory>

#include "numerics/base/operator.hpp"
#include "numerics/sparse/sell_matrix.hpp"
#include "numerics/sparse/sell_schedule.hpp"

namespace topokpm::numerics {

/// The fused augmented SpMMV (seed 004, Fig. 5) over `matrix`: one sweep computes
/// y = scale (A - shift) x + beta y and, if asked, <x|x> and <y|x> per column.
/// Block widths 1, 2, 4, 8, 16, 32 run compile-time specialised kernels; other widths
/// a generic kernel (one PERFWARNING per width). OpenMP over chunks.
std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const SellMatrix> matrix);

/// The same kernel with the cache-blocked sweep order for lattice-ordered rows
/// (row = s + S (y + Ny x), sell_schedule.hpp): each thread keeps the chunk range of the
/// static split and visits it in y tiles (outer) by x planes (inner), so the x-vector rows
/// of the planes x-1, x, x+1 of a tile stay in cache. The tile is chosen per block width
/// (lattice_tile_cells(); R <= 4, or planes that fit the budget: the plain static split)
/// and the schedule is built on first use per (R, thread count) and kept. Results equal
/// the untiled operator's up to rounding. name(): "sell-C-σ-tiled".
/// @throws DimensionMismatch when nx ny S != matrix->num_rows()
std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const SellMatrix> matrix, const LatticeRowOrder& lattice,
                                             const TileOptions& options = {});

/// Single precision (`--precision single`): the same operators over a complex-float matrix
/// (BasicSellMatrix<complex_single>::build rounds the model's values). precision() is
/// Single; the KPM recurrence then keeps its vectors in complex float (kernel contract in
/// sell_kernels.hpp); apply() on double blocks goes through one single sweep
/// (Operator::apply). name(): the double name + "-single". The tiled schedules are built
/// from the structure as in double (the tile budget counts 16 bytes per vector entry,
/// so a single tile holds half the bytes it could; measured equal, docs/performance.md).
std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<complex_single>> matrix);
std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<complex_single>> matrix,
                                             const LatticeRowOrder& lattice, const TileOptions& options = {});

/// Real-valued matrices (RowSource::real_valued(): graphene) with complex vectors, double
/// and single: the same operators over real values, 12 (8) instead of 20 (12) bytes per
/// stored entry. name(): the complex name with "-real" before "-single".
std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<double>> matrix);
std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<double>> matrix,
                                             const LatticeRowOrder& lattice, const TileOptions& options = {});
std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<float>> matrix);
std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const BasicSellMatrix<float>> matrix,
                                             const LatticeRowOrder& lattice, const TileOptions& options = {});

/// The SELL operator with a fixed, caller-made chunk schedule (e.g. build_from_row_segments()
/// for another row order). Used when the thread count at apply() equals
/// schedule->num_threads; otherwise the static split.
std::unique_ptr<Operator> make_sell_operator(std::shared_ptr<const SellMatrix> matrix,
                                             std::shared_ptr<const ChunkSchedule> schedule);

/// The naive reference path (seed 004, Fig. 3): a plain SpMV per column, then separate
/// BLAS-1 style sweeps for the shift/scale/axpby and for each dot product. Same results
/// to rounding, several times the memory traffic; kept for tests and as the benchmark
/// baseline.
std::unique_ptr<Operator> make_naive_operator(std::shared_ptr<const SellMatrix> matrix);

}  // namespace topokpm::numerics
