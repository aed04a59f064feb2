#pragma once
/// @file stencil_kernels.hpp
/// The kernel contract of the matrix-free augmented SpMMV: the rows of H are generated
/// from a BlockStencil (numerics/base/block_stencil.hpp) while the sweep runs, so a sweep
/// reads only the vectors and the potential, never a stored matrix. One entry per backend:
/// the CPU operator (numerics/cpu/stencil_kernels.cpp) and the CUDA launcher
/// (numerics/cuda/stencil_kernels.cu; device blocks, see reduce_kernels.hpp).

#include <array>
#include <memory>
#include <vector>

#include "numerics/base/block_stencil.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/spmmv/reduce_kernels.hpp"

namespace topokpm::numerics {

/// The fused, matrix-free augmented SpMMV of a BlockStencil on the CPU:
///     y := scale (H - shift) x + beta y        (beta == 0: y is never read)
/// and, with ops.want_dots, dots->xx[c] = <x_c|x_c>, dots->yx[c] = <y_c|x_c> (new y), with
/// H the matrix block_stencil.hpp defines; the same results as the naive loop the tests
/// compare with (tests/support/block_stencil_reference.hpp) up to rounding.
///
/// How (stencil_kernels.cpp): the non-zero entries of each orbital's row (on-site
/// block and every term, equal offsets merged) are compiled once into a table of (relative
/// column, value). The sweep visits the lattice in tiles of z-columns, x outermost inside a
/// tile so that the x planes a tile touches stay in the caches; each z-column is cut into
/// groups of G consecutive rows whose G x R sums live in vector registers (the
/// register-blocked rows_times_block of complex_block_simd.hpp, vectorised across the R
/// columns for R >= 4 and across rows for R = 1, 2). Groups whose sites have all
/// neighbours inside the box (no wrap, no dropped term) use the shared relative table
/// without any boundary check; the others (open faces, periodic wrap, tiny extents where
/// neighbours coincide) build their column table with explicit checks. Tiles are x-slabs
/// per thread, or y-tiles of ~640 KiB per x-plane when a plane exceeds 2 MiB (ti 64x64x40
/// at R >= 16), with software prefetch of the far neighbour rows for R >= 16
/// (measurements in docs/performance.md; StencilTuning::tiles overrides the tiling for
/// tuning and tests). At R = 1, a stencil with at most 6 distinct row offsets (graphene) runs
/// the interior of each z-column as shifted vector loads of x, one per offset, with the
/// epilogue fused and a constant potential not read. B = 4 (ti) at R = 1 and, in double, at
/// R = 2, 4, 8 runs every site in the site form: a site's 4 rows as whole vectors, the blocks
/// as XOR diagonals (row o reads the neighbour's row o ^ c: one value per row and diagonal,
/// no column indices), a table per class of boundary coordinates; at R = 2, 4, 8 each
/// column's sums and epilogue are those of R = 1, bit for bit (stencil_operator.hpp); in
/// double it prefetches x one x-plane ahead and y, 4 KiB ahead (StencilTuning). The potential is
/// applied in the epilogue together with the shift: y = scale (Hx + (V - shift) x) + beta y.
/// R in {1, 2, 4, 8, 16, 32} and B in {2, 4} are compile-time specialised, other widths
/// and orbital counts run generic loops. OpenMP over tiles (schedule(static)); the dots
/// are summed per thread and then in thread order, so a fixed thread count gives
/// reproducible results.
///
/// cost(): nonzeros = stencil.num_nonzeros() (the flops of perf_model.hpp are counted from
/// it as for the stored operators), matrix_bytes = the potential (8 bytes per site or row:
/// the only operator data a sweep reads), storage_bytes = the potential plus the blocks.
/// name(): "<stencil name>-stencil-cpu", e.g. "ti-stencil-cpu".
///
/// Throws InputError when the stencil does not validate().
std::unique_ptr<Operator> make_cpu_stencil_operator(BlockStencil stencil);

/// Tuning of the CPU sweep (the defaults are the measured choices, docs/performance.md);
/// set by tests, benchmarks and `kpm-dos --tblock-lines` for A/B runs.
struct StencilTuning {
    /// The two-step pass at R = 1 (fused_steps(), Operator::apply_two_steps): lattice lines
    /// per block (>= 1); 0: one step per pass (fused_steps() = 1); -1: blocks of about 64 KiB
    /// of one vector.
    int tblock_lines = -1;
    /// The two-step pass at R > 1 (the strip form, numerics/cpu/stencil_two_step_wide.hpp):
    /// sites per strip of a lattice line (>= 1); 0: about 256 KiB of one vector per strip.
    int tblock_strip_sites = 0;
    /// Tile extents (tx, ty, tz) in sites of the relabelled axes ((1, nx, ny) for a lattice
    /// with nz = 1), each clamped to [1, extent]; {0, 0, 0}: the tiling rule above.
    std::array<int, 3> tiles{0, 0, 0};
    /// B = 4 in double at R = 2, 4, 8: the site form (true, the default) or the row groups on
    /// the shared tables it replaced (false: A/B runs, spmmv-bench's op free-rows).
    bool wide_site_form = true;
    /// The B = 4 site form in double: software prefetch of x one x-plane ahead and of y,
    /// this many bytes ahead of the sites being summed; -1: the measured default, 0: none.
    int site_prefetch_bytes = -1;
};

/// The same operator in `precision` (Precision::Double: the function above).
///
/// Precision::Single (`--precision single`, docs/performance.md "Single precision"): the
/// same sweep (one algorithm, templated on the value type: tables, tiling, groups, checked
/// and fast paths) on complex-float blocks, with the rules of the SELL single kernel
/// (sell_kernels.hpp): the block values and the vectors are complex float, a row's sum over
/// its entries is float, the epilogue y = scale (sum + (V - shift) x) + beta y is double
/// (the potential V, scale and shift are not rounded) and rounded once to float, and the
/// dots <x|x>, <y|x> are accumulated in double per thread, then in thread order.
/// Except at R = 1 in the shifted-load form (graphene: the interior of every lattice line,
/// one step or two per pass): there the whole row is float arithmetic, 16 lanes per vector
/// and no conversion per row: y = scale' (sum + d' x) + fl(beta) y in float fused
/// multiply-adds, where scale' and a uniform d' = V - shift are the floats just below and
/// above the double values, dithered over the rows so that their mean is exact to 1/32 ulp
/// (a per-row V - shift is rounded to the nearest float); each dot lane is a float sum of at
/// most kSingleDotRun products (fused multiply-adds) before it joins the double sums (error
/// per dot: <= (kSingleDotRun + 1) eps_f sum |y||x|, dot_rounding_bound of operator.hpp). The same float epilogue, with the same
/// dither and float dot runs of kSingleDotRun rows, finishes the rows at R = 2, 4, 8, 16 and 32
/// (kernels::cpu::FloatRowEpilogue; the SELL single sweep too), and the rows of the R = 1
/// site form (ti, B = 4: two sites per vector of 16 floats; the dither by row, dot runs of
/// at most kSingleDotRun products per lane). Derivations:
/// docs/performance.md, "Single precision at R = 1 in float" and "Single precision at every
/// width", and cpu_stencil_single_test.cpp.
/// precision() is Single: apply() on complex-float blocks runs that sweep; on double blocks
/// it rounds x (and y when beta != 0) to float, sweeps in single and widens y back. R = 8, 16, 32 are
/// register-blocked (8 complex floats per 512-bit vector, G = 8, 4, 2 rows per group),
/// R = 4 the same with one 256-bit vector per row (G = 8), R = 1, 2 vectorised across
/// 8 / R rows (G = 8), other widths the generic loop. The tiling rule
/// counts 8 bytes per vector entry (a plane of ti 64x64x40 exceeds 2 MiB only at R = 32).
/// name(): "<stencil name>-stencil-cpu-single"; cost() as above (matrix_bytes is the
/// potential, still read as double).
///
/// `tuning`: see StencilTuning; InputError naming {tblock_lines} or {site_prefetch_bytes} below -1,
/// {tblock_strip_sites} below 0, or {stencil_tiles} unless all three are 0 or all are positive.
std::unique_ptr<Operator> make_cpu_stencil_operator(BlockStencil stencil, Precision precision,
                                                    const StencilTuning& tuning = {});

/// The same operator over a stencil it shares (the functions above wrap theirs): it keeps
/// `stencil` alive and reads it, never writes it, so another reader (the run's bounds, from
/// the same potential) needs no copy. InputError as above; `stencil` must not be null.
std::unique_ptr<Operator> make_cpu_stencil_operator(std::shared_ptr<const BlockStencil> stencil, Precision precision,
                                                    const StencilTuning& tuning = {});

/// True when the CPU stencil operator of a 2-D lattice (graphene; nz = 1) makes two sweeps per
/// pass over memory at block width r > 1 in `precision` (its fused_steps(r) is 2: strips of
/// lattice lines, numerics/cpu/stencil_two_step_wide.hpp; the same widths in both precisions).
/// For --matrix auto.
bool cpu_stencil_two_steps_at(int r, Precision precision);

}  // namespace topokpm::numerics

namespace topokpm::numerics::kernels::cuda {

/// A BlockStencil (numerics/base/block_stencil.hpp) in device memory, with the blocks
/// compressed to their non-zero entries per row orbital; block values of type T
/// (complex_double, or complex_single for `--precision single`), the potential double.
template <class T>
struct BasicStencilView {
    int nx = 1, ny = 1, nz = 1;
    int orbitals = 1;                    ///< B
    int periodic[3] = {0, 0, 0};
    int num_terms = 0;                   ///< T, term 0 is the on-site block (offset 0, 0, 0)
    int num_entries = 0;                 ///< length of entry_column / entry_value
    const int* terms = nullptr;          ///< 4 T ints: dx, dy, dz of each term and the mask of
                                         ///< its block's non-zero entries (bit o B + b, where
                                         ///< B B <= 32; 0 otherwise): the entries listed below
    const int* entry_begin = nullptr;    ///< B T + 1 ints: entries of (orbital o, term t) are
                                         ///< [entry_begin[o T + t], entry_begin[o T + t + 1])
    const int* entry_column = nullptr;   ///< column orbital b of each entry
    const T* entry_value = nullptr;
    const T* dense_blocks = nullptr;     ///< T B B values, block t row-major (site kernel)
    const double* potential = nullptr;   ///< per site, or per row when potential_per_row
    int potential_per_row = 0;
    local_index num_rows = 0;            ///< nx ny nz B
    /// A magnetic field (BlockStencil::field, its tables copied to the device; along ==
    /// nullptr: none) and the blocks its factors multiply: T B B (re, im) pairs in double,
    /// block t row-major in the order of the terms above (slot t of StencilField).
    StencilFieldTables field;
    const double* field_blocks = nullptr;
};
using StencilView = BasicStencilView<complex_double>;

/// The tables a BasicStencilView points to, built on the host from a BlockStencil: term 0
/// the on-site block, then stencil.terms in order; the non-zero entries grouped by (row
/// orbital, term) with the per-term masks (the zero test on the double value, so both
/// precisions have the same structure); every block dense (rounded to T); in a field the
/// blocks again in double for the Peierls products. The CUDA stencil operator uploads them;
/// tests/unit/cuda/emulated_kernels_test.cpp points a view at them in host memory.
template <class T>
struct StencilTables {
    std::vector<int> terms;         ///< 4 per term: dx, dy, dz, mask
    std::vector<int> entry_begin;   ///< B T + 1
    std::vector<int> entry_column;
    std::vector<T> entry_value;
    std::vector<T> dense_blocks;    ///< T B B
    std::vector<complex_double> field_blocks;  ///< T B B in a field, empty otherwise
    /// Bytes the kernels stage in shared memory (at most 48 KiB; the operator checks).
    double shared_bytes() const
    {
        return 4.0 * static_cast<double>(terms.size() + entry_begin.size() + entry_column.size() + 4) +
               static_cast<double>(sizeof(T)) * static_cast<double>(entry_value.size() + dense_blocks.size());
    }
};

/// Explicitly instantiated for complex_double and complex_single (stencil_tables.cpp, every
/// build). Throws what stencil.validate() throws.
template <class T>
StencilTables<T> make_stencil_tables(const BlockStencil& stencil);

/// A view of `tables`, and of the stencil's potential and field tables, in host memory: the
/// CUDA operator replaces each pointer by its device copy's.
template <class T>
BasicStencilView<T> host_stencil_view(const BlockStencil& stencil, const StencilTables<T>& tables);

/// The augmented SpMMV (reduce_kernels.hpp) with the matrix generated from a stencil (no
/// stored matrix), T = complex_double or complex_single (both instantiated in
/// stencil_kernels.cu). x and y are device pointers to N x R blocks that must not alias.
///
/// Single precision: the same sweep on complex-float blocks and block values, with the
/// rules of the single SELL sweep (sell_kernels.hpp): a row's sum over its block entries is
/// float; the potential stays double and joins the shift in the double epilogue,
/// y = scale (sum + (V - shift) x) + beta y, rounded once to float; the dots are double.
///
/// In a field (s.field.along != nullptr) every entry is the double block value times its
/// Peierls factor, peierls_phase_entry of block_stencil.hpp (the function the CPU stencil's
/// checked path calls), in double in both precisions and then rounded to T: the entries
/// of the model's rows, rounded as the single SELL matrix rounds them. It runs the row
/// kernel for every B (the site kernel's shared x loads are not used): per entry one more
/// 16-byte load of the double block value and one of the factor (tables of 16 (1 + T) B^2
/// (nx + ny) bytes, read through the caches) and a double complex product, and without the
/// site kernel each neighbour's x is loaded once per entry instead of once per site (ti: 52
/// instead of 28 loads). Not yet run on a GPU (CudaSpmmvField in tests/unit/cuda checks it
/// where one is visible; scripts/device_check.sh runs it); its source runs on the host
/// emulation in every build (cuda_emulated_kernels_test, against the CPU stencil operator).
template <class T>
SweepInfo stencil_spmmv(const BasicStencilView<T>& s, const T* x, T* y, int num_cols, const AugmentedOps& ops,
                        DotWorkspace& workspace, DotSums* dots);

}  // namespace topokpm::numerics::kernels::cuda
