#pragma once
/// @file stencil_operator.hpp
/// The CPU stencil operator behind make_cpu_stencil_operator (its contract:
/// numerics/spmmv/stencil_kernels.hpp), internal to numerics/cpu: the class, its tables and
/// the helpers its files share. The notes below describe the whole kernel; its files:
///   stencil_kernels.cpp         construction: row tables, shifted-load, site and strip forms;
///                               the factories
///   stencil_sweep.cpp           one step per pass at every width: tiles, register groups, the
///                               checked path, the window and site forms, the row epilogues
///   stencil_shift_form.hpp      the R = 1 shifted-load run (one-step sweep and two-step lines)
///   stencil_two_step_lines.cpp  two steps per pass at R = 1 on 2-D lattices (lines, wavefront)
///   stencil_two_step_wide.cpp   two steps per pass at R > 1 on 2-D lattices (strips of lines)
//
// Matrix-free fused augmented SpMMV of a BlockStencil on the CPU:
//   y = scale (H - shift) x + beta y, with <x|x> and <y|x> per column, in one sweep that
// reads x, y and the potential and nothing else.
//
// Row tables. Row (site s, orbital o) has the entries of on-site block row o and of every
// term's block row o; only non-zero values are kept (the ti blocks are half zeros: 13
// entries per row instead of 4 + 6 x 4), terms with equal offsets are merged and offset 0
// goes into the on-site block. Rows are padded to the longest orbital row with value 0 /
// own column (SELL's padding trick: no branch). An entry's column is B (s + d_t) + b; for
// a site with all neighbours inside the box that is the row's own index plus a constant,
// so interior rows share one table of relative columns per phase (row index mod B).
//
// Groups. Consecutive rows of one z-column (consecutive sites along z are consecutive rows)
// are taken G at a time, G = simd::group_rows(R, 8): G x R complex sums in registers
// (R = 32: one row, R = 8: one ti site, R <= 4: two ti sites) via rows_times_block of
// complex_block_simd.hpp, the SELL kernel's measured inner loop, with relative columns and
// the table layout [k][g] (values of adjacent rows contiguous: one vector load for R < 4).
// A group whose sites are all interior runs on the shared table with no check; the others
// (open faces, periodic wrap, extents 1 and 2 where neighbours coincide, the ragged end of
// a column) build their own table with explicit wrap/drop checks, rows past the end padded.
// The potential and the shift are applied in the epilogue: y = scale (acc + (V - shift) x)
// + beta y, so the tables do not depend on the site.
//
// Traversal. Tiles of tx x ty x tz sites; inside a tile x is outermost, then y, then the
// z-segment in groups; OpenMP static over tiles (tile index with x slowest, so the split
// over threads follows the canonical order as far as the tiling allows). The neighbours
// of a row are at +-B rows (z), +-B nz (y) and +-B ny nz (x): the ±z and ±y rows of a
// z-segment stay in L1/L2 by themselves; the ±x rows stay cached only if three x-planes of
// the tile fit (3 ty tz B R 16 bytes; ti 64x64x40 at R = 32: 15 MiB for the full plane).
// For R >= 16 the fast path prefetches the rows 4 KiB ahead in every x stream at least a
// z-column away (and in y).
//
// R = 1, B = 2 or 4, at most 6 distinct row offsets (graphene): the interior of a z-column
// runs as one loop of whole vectors (4 complex doubles / 8 complex floats) in the shifted-load
// form (ShiftTable: one unaligned load and one FMA per distinct offset) with the epilogue
// fused, so the sums never leave the registers; a constant potential is not read per row.
// On a 2-D lattice (graphene) the same form also runs two KPM steps per pass over memory
// (Operator::apply_two_steps; two_steps() below: a wavefront over blocks of lattice lines).
// In single precision this form is float throughout (16 lanes, no conversion per row;
// scale and a uniform potential dithered over the rows, dots in float runs of kSingleDotRun
// products): with the epilogue in double it converted 11 times per vector and ran slower
// in core than the double kernel (docs/performance.md, "Single precision at R = 1 in float").
// At R > 1 the two-step pass is stencil_two_step_wide.cpp's (strips of lines; build_wide_form()).
// On a 3-D lattice (ti; double R = 1, 2, 4, 8, single R = 1, 8) two_steps_planes() (stencil_sweep.cpp) runs two
// steps per pass with the one-step column() below: a wavefront over x-planes per strip of
// y-columns (1.1-1.2x the one-step sweep in memory; docs/performance.md, "Two steps per pass
// on ti").
//
// R = 1, B = 4 (ti): the site form (SiteForm): a site's 4 rows are one vector, the
// blocks split into XOR diagonals (one permute and one FMA per real or imaginary part), a
// table per class of sites (boundary coordinates: their own class), so the z faces and the
// periodic wrap run as fast as the interior; the epilogue is fused. Up to eight sites of one
// class per step (the item loop's overhead shared; each site keeps its own sums, so the
// grouping changes no rounding), the tables 64-byte aligned vectors.
// Single precision: the tables with float-rounded values, two sites in one vector of 16
// floats (one load, one permute, one FMA per item for both; the items sorted by diagonal so
// the permute is an immediate shuffle, none for the diagonal), four such pairs per step, the
// float epilogue of the shifted-load form (scale and a uniform V - shift dithered by row,
// dots in float runs of kSingleDotRun products); widening x per load and a double epilogue
// left it slower than the double kernel in core (docs/performance.md, "s27-free1").
// Double, R = 2, 4, 8: the same tables, a site's 4 rows of R columns as R vectors. R >= 4: a
// row is R / 4 whole vectors, so row o of an item reads the neighbour's row o ^ c as it is
// (no permute, no index vector) and multiplies it by that row's value, broadcast; R = 2: a
// vector holds rows 2h and 2h + 1, row o ^ c is vector h ^ (c >> 1) with its halves swapped
// for odd c. At R = 4, 8 the items are walked by neighbour block (site_sums_grouped): the neighbour's rows are
// loaded once for the block's diagonals (ti: two per block, so half the loads of one load per
// item) and the values are broadcast loads (in cache at R = 8 1.17x, ti 16x16x10, 2026-11-29).
// 16 / R sites of one class per step (the item loop's table loads shared). Each
// lane sums the same products in the same order as the R = 1 form and the epilogue is the
// same arithmetic (R = 2: finish_vector_sums; R >= 4: finish_row's, with the dots in
// registers), so column c of a sweep equals the R = 1 sweep of column c bit for bit. It
// replaced the register groups at these widths (in cache 1.7-4.1x faster, docs/performance.md,
// "The ti stencil in core and in memory"); StencilTuning::wide_site_form = false brings them
// back for A/B runs.
//
// The choices above (tiles, prefetch for R >= 16, G <= 8, interleaved epilogue dots, the
// single-precision forms for R = 1, 2, 4) rest on the measurements in docs/performance.md,
// "Kernel design measurements".
//
// Not done: at R = 16, 32 (and for graphene) xy-boundary columns (periodic wrap, ~6 % of the
// columns here) and z-faces take the checked path (about 10 % of the time at R = 32); the
// site form's per-class tables would move them onto the fast path.
//
// A magnetic field (BlockStencil::field): every group takes the checked path, whose table
// puts each entry's Peierls phase on it (peierls_phase_entry, the rows' arithmetic: the entries
// equal the model's rows bit for bit); the terms are not merged, one step per pass. Slower
// than the forms above, but no matrix in memory: the memory floor in a field.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/cpu/row_epilogue.hpp"
#include "numerics/cpu/stencil_two_step_wide.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics::kernels::cpu::stencil {

namespace simd = kernels::cpu::simd;
using kernels::cpu::collect_dots;
using kernels::cpu::finish_row;
using kernels::cpu::store_thread_dots;

/// Rows per register group at most: 8 (two ti sites at R <= 4). SELL's 32 rows at R = 1
/// measured 30 % slower here (more groups straddle a z-face and take the checked path).
inline constexpr int kMaxGroup = 8;

/// The site form's software prefetch distance in double (StencilTuning::site_prefetch_bytes
/// = -1): docs/performance.md, "The ti stencil in core and in memory".
inline constexpr int kSitePrefetchBytes = 4096;

/// Rows per register group for value type T and width R > 0. Double: group_rows of
/// complex_block_simd.hpp. Float: a 512-bit register holds 8 complex floats, so the same
/// registers hold twice the sums (G = 2 accumulator_complex / R: R = 8: 8 rows, 16: 4,
/// 32: 2), at most kMaxGroup, and at least one whole vector of 8 complex floats.
template <class T>
constexpr int group_size(int r)
{
    if constexpr (std::is_same_v<T, double>) {
        return simd::group_rows(r, kMaxGroup);
    } else {
        int g = 2 * simd::accumulator_complex / r;
        if (g < 1) g = 1;
        while (g * r < 8) g *= 2;
        while (g > kMaxGroup && g > 1) g /= 2;
        return g;
    }
}

using simd::v16f;
using simd::v16i;
using simd::v8f;

template <class V>
inline V loadf(const float* p)
{
    V v;
    std::memcpy(&v, p, sizeof v);  // unaligned vector load
    return v;
}

/// One kept entry of an orbital row: term index (-1: on-site block), column orbital, value.
struct RowEntry {
    int term = -1;
    int b = 0;
    complex_type v;
};

/// Neighbour coordinate along one direction, or -1 when it leaves an open boundary.
inline int neighbour_coord(int q, int extent, bool periodic)
{
    if (q >= 0 && q < extent) return q;
    if (!periodic) return -1;
    q %= extent;
    return q < 0 ? q + extent : q;
}

/// Tile extents in sites.
struct Tiling {
    int tx = 1, ty = 1, tz = 1;
};

/// R = 1 fast path as shifted loads. In a vector of L consecutive rows starting at a row
/// r0 that is a multiple of B (L % B == 0), lane l has orbital l % B, so entry (o, k) of
/// an interior site reads x at row r0 + l + d with d = B dl + b - o, the same for every
/// r0. Grouped by d: per distinct d one unaligned load of rows r0 + d .. r0 + d + L - 1 and
/// one FMA with the lanes' values (0 in lanes without that d). Graphene: d in {-1, +1,
/// -(2 Ny - 1), +(2 Ny - 1)}, 4 loads and 4 FMAs per 4 rows and no permute, where the
/// window form below needs 6 loads and 3 permutes. Applies when there are at most kMax
/// distinct d (ti has dozens: the site form below in double, the window form in single).
template <class T>
struct ShiftTable {
    static constexpr int kLanes = std::is_same_v<T, double> ? 4 : 8;  ///< complex values per 512-bit vector
    static constexpr int kMax = 6;
    int nd = 0;                                   ///< distinct offsets; 0: the form does not apply
    std::array<std::ptrdiff_t, kMax> offset{};    ///< d, in rows
    std::vector<T> vr, vi;                        ///< 2 kLanes per d: Re v, Im v over each lane's (re, im)
    std::ptrdiff_t lo = 0, hi = 0;                ///< rows r0 + lo .. r0 + hi are read
};

/// R = 1, B = 4 (ti): a site's 4 rows are one vector, and each B x B block splits
/// into its XOR diagonals (entries (o, o ^ c), c = 0..3; a Kronecker product of Pauli
/// matrices lies on one): per (block, c) one aligned load of the neighbour site's 4
/// values, one lane permute and one FMA per real or imaginary part that is not zero in
/// every lane (ti: 13 items per site, each real-only or imaginary-only: 13 FMAs per 4 rows
/// where the window form needs 26 and 13 two-source permutes). Wrapped and dropped
/// neighbours only change an item's offset or remove it, so every site runs on a table:
/// one per class of sites (per direction: each boundary coordinate its own class, the
/// interior one class), no checked path.
/// T = double: a vector is one site (8 doubles). T = float: a vector is two consecutive
/// sites of one class (16 floats: one load, one permute of the 64-bit complex lanes within
/// each site, one FMA per item for both), so an item's values are stored twice.
template <class T>
struct SiteForm {
    /// One 512-bit vector of T (the vectors below are 64-byte aligned: no load splits a line).
    using Lanes = std::conditional_t<std::is_same_v<T, double>, simd::v8d, v16f>;
    struct Class {
        int n_re = 0, n_im = 0, n_both = 0;  ///< items in this order: Re only, Im only, both
        std::vector<std::ptrdiff_t> off;     ///< per item: neighbour site - site, in T values (8 per site)
        std::vector<simd::v8l> idx;          ///< double, per item: the permute of the neighbour's lanes
        /// float: the items sorted by (kind, c); those of kind k (Re only, Im only, both) and
        /// diagonal c are [first[4 k + c], first[4 k + c + 1]) (a fixed permute per run)
        std::array<int, 13> first{};
        std::vector<Lanes> vr, vi;           ///< per item: Re v, Im v per lane, over (re, im)
        std::vector<int> diag;               ///< per item: its XOR diagonal c (row o reads o ^ c)
        /// double, R = 2 (a vector: 2 rows of 2 columns): per item two vectors each, half h
        /// (rows 2h, 2h + 1) at [2 item + h], each row's value over its 4 lanes
        std::vector<Lanes> vr2, vi2;
        /// R = 4, 8 in double, R = 8 in float (site_sums_grouped): the items again, grouped by
        /// neighbour block (the on-site block, then the terms in order; in a group its
        /// diagonals c in order), so that a neighbour's rows are loaded once for all its
        /// items; an item with both a real and an imaginary part comes after all of them, as a
        /// group of its own holding its two parts (so each kind's products keep the order of
        /// the items above: the same sums). Group g: neighbour offset group_off[g] (as off),
        /// entries [group_first[g], group_first[g + 1]); entry i: item_code[i] = c (into the
        /// Re sums) or 4 + c (into the Im sums), and the value of row o, item_val[4 i + o].
        std::vector<std::ptrdiff_t> group_off;
        std::vector<int> group_first;
        std::vector<int> item_code;
        std::vector<T> item_val;
    };
    bool ok = false;
    std::array<std::vector<int>, 3> cls;     ///< per direction: coordinate -> class index
    std::array<int, 3> ncls{};
    std::vector<Class> classes;              ///< index (cx ncls[1] + cy) ncls[2] + cz
    const Class& at(int cx, int cy, int cz) const
    {
        return classes[(static_cast<size_t>(cx) * ncls[1] + cy) * ncls[2] + cz];
    }
};

/// The end rows of an interior lattice line in the two-step pass (the rows before and after
/// the shifted-load run: a few per line), as a table: per row q - the line's first row, in
/// [0, head) then [tail, line), its entries in checked_rows' order as (column - the line's
/// first row, value rounded to T, in double). Every interior line has the same table (its
/// y neighbours exist, the z wrap or cut is the same), so these rows skip checked_rows'
/// neighbour arithmetic. line = 0: no table (checked_rows).
struct LineEnds {
    int head = 0, tail = 0, line = 0;
    std::vector<int> first;  ///< entries of end row i: [first[i], first[i + 1])
    std::vector<std::ptrdiff_t> col;
    std::vector<double> vr, vi;
};

class CpuStencilOperator;
template <class T, int R, int B, bool Real>
struct SweepPlan;
template <class T, int R, int B, bool Real>
class SweepThread;

/// The operator (see the notes above). Its members are defined in the files listed there;
/// the width and orbital-count templates are instantiated where they are called.
class CpuStencilOperator final : public Operator {
public:
    /// Validates the stencil and the tuning (InputError, stencil_kernels.hpp) and builds the
    /// tables of `precision`.
    CpuStencilOperator(std::shared_ptr<const BlockStencil> s, Precision precision, const StencilTuning& tuning);

    global_index num_rows() const override { return s_.num_rows(); }
    Precision precision() const override { return precision_; }
    std::string name() const override
    {
        return s_.name + (precision_ == Precision::Single ? "-stencil-cpu-single" : "-stencil-cpu") +
               (real_ ? "-real" : "");
    }
    OperatorCost cost() const override
    {
        OperatorCost c;
        c.nonzeros = static_cast<double>(s_.num_nonzeros());
        c.matrix_bytes = 8.0 * static_cast<double>(s_.potential.size());
        c.storage_bytes = storage_bytes_;
        return c;
    }

    /// Two steps per pass (temporal blocking over lattice lines, see two_steps()) at R = 1
    /// where the sweep takes the shifted-load form and the lattice is 2-D after the
    /// relabelling (graphene); at R > 1 on such lattices the strip form of
    /// stencil_two_step_wide.hpp where it is offered (kernels::cpu::two_steps_wide_offered);
    /// on a 3-D lattice (ti) the wavefront over x-planes of two_steps_planes() where
    /// planes_offered(r). StencilTuning::tblock_lines = 0 turns all off (A/B measurements).
    int fused_steps(int r) const override
    {
        if (planes_offered(r)) return 2;
        if (r > 1)
            return wide_ok_ && tuning_.tblock_lines != 0 &&
                           kernels::cpu::two_steps_wide_offered(r)
                       ? 2
                       : 1;
        if (r != 1 || extent_[0] != 1 || (nb_ != 2 && nb_ != 4) || tuning_.tblock_lines == 0) return 1;
        const int nd = precision_ == Precision::Single ? shift_single_.nd : shift_double_.nd;
        return nd > 0 ? 2 : 1;
    }

    /// AugmentedOps' accumulation in the row epilogue of the R >= 4 double sweep.
    bool fuses_accumulation(int r) const override
    {
        return precision_ == Precision::Double && r >= 4 && is_registered_width(r);
    }

protected:
    // stencil_sweep.cpp
    void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override;
    void do_apply(const BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                  const AugmentedOps& ops, DotSums* dots) const override;
    // stencil_two_step_lines.cpp
    void do_apply_two_steps(BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* first,
                            DotSums* second) const override;
    void do_apply_two_steps(BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                            const AugmentedOps& ops, DotSums* first, DotSums* second) const override;

private:
    // ---- construction (stencil_kernels.cpp) ----
    /// The shifted-load form of the rows (ShiftTable), values rounded to T; t.nd = 0 when
    /// it does not apply (more than kMax distinct offsets, or kLanes % B != 0).
    template <class T>
    void shift_table(ShiftTable<T>& t) const;
    /// SiteForm tables from the merged on-site block and term blocks (B = 4), values rounded
    /// to T. Not built when the classes would be many (tiny extents with long-range terms):
    /// the other paths run.
    template <class T>
    void build_site_form(SiteForm<T>& f, const std::vector<complex_type>& onsite,
                         const std::vector<std::vector<complex_type>>& blocks);
    /// The rows as a 2-D stencil for two_steps_wide (R > 1): lines along the relabelled
    /// direction 1, sites along 2; only where direction 0 is trivial and no term reaches
    /// beyond the adjacent line.
    void build_wide_form();

    // ---- one step per pass (stencil_sweep.cpp) ----
    template <class T>
    void run(const T* x, T* y, int r, const AugmentedOps& ops, DotSums* dots) const;
    template <class T, int B, bool Real>
    void dispatch_width(const T* x, T* y, int r, const AugmentedOps& ops, DotSums* dots) const;
    /// Tiles: x-slabs per thread while three x-planes of a thread are small; y-tiles of
    /// about kTilePlaneBytes per plane (full z, all x) when a plane exceeds kPlaneLimit
    /// (ti 64x64x40: R = 16 and 32 in double, R = 32 in single). StencilTuning::tiles
    /// overrides (tuning and tests; in the relabelled axes, i.e. (1, nx, ny) for a lattice
    /// with nz = 1). complex_bytes: 16 (double) or 8 (float) per vector entry.
    Tiling choose_tiling(int r, int num_threads, double complex_bytes) const;
    /// Fills the shared relative tables for group size G: [phase][k][g], values rounded
    /// to T (interleaved re, im; per = 1: the real parts only).
    template <class T>
    void fast_tables(int g_rows, int per, std::vector<std::ptrdiff_t>& cols, std::vector<T>& vals) const;
    /// One step at compile-time width R (0: runtime_r) and orbital count B (0: nb_): the plan
    /// (tables, tiling), then the tiles on the OpenMP threads (SweepThread), dots in thread order.
    template <class T, int R, int B, bool Real>
    void sweep(const T* x, T* y, int runtime_r, const AugmentedOps& ops, DotSums* dots) const;
    template <class T, int R, int B, bool Real>
    friend struct SweepPlan;
    template <class T, int R, int B, bool Real>
    friend class SweepThread;

    // ---- two steps per pass on a 3-D lattice (stencil_sweep.cpp) ----
    /// True where two_steps_planes runs at width r: a 3-D lattice whose terms reach the
    /// adjacent x-planes and y-columns only, B = 4 with the site form (ti): double at r = 1, 2,
    /// 4, 8, single at r = 1 and 8.
    bool planes_offered(int r) const;
    /// y-columns per strip of two_steps_planes at width r (about 160 KiB of one vector per
    /// x-plane; StencilTuning::tblock_strip_sites overrides).
    int planes_strip(int r, int complex_bytes) const;
    /// Steps A (y := scale (H - shift) x + beta y) and B (x := scale (H - shift) y + beta x) in
    /// one pass: each thread owns a range of x-planes and sweeps it once per strip of
    /// y-columns, A on plane p, then B on plane p - 1 over the strip's columns shifted back by
    /// one (what B reads of A's y is complete, and no x that a later A reads is overwritten).
    /// B on a thread's first and last planes (they need the neighbour thread's A) and on the
    /// columns the y-wrap couples to the next strips (ny - 1, and 0 when y is periodic) waits
    /// for one barrier. Every row is the one-step sweep's column() on the same inputs, so x and
    /// y equal two apply() calls bit for bit; only the dots are summed in another order.
    template <class T, int R, int B, bool Real>
    void two_steps_planes(T* x, T* y, int runtime_r, const AugmentedOps& ops, DotSums* first, DotSums* second) const;
    template <class T>
    void two_steps_planes_run(T* x, T* y, int r, const AugmentedOps& ops, DotSums* first, DotSums* second) const;

    // ---- two steps per pass (stencil_two_step_lines.cpp) ----
    /// Two steps on blocks of width r in T's precision: the strip form at r > 1, else the
    /// R = 1 form for the site's orbital count.
    template <class T>
    void two_steps_run(T* x, T* y, int r, const AugmentedOps& ops, DotSums* first, DotSums* second) const;
    template <class T, int B, bool Real>
    void two_steps(T* x, T* y, const AugmentedOps& ops, DotSums* first, DotSums* second) const;
    template <class T, int B, bool Real>
    void step_lines(const T* x, T* y, int c0, int c1, const AugmentedOps& ops, bool want_dots,
                    kernels::cpu::DotLanes& lanes, double* sums) const;
    template <class T>
    void line_ends(LineEnds& t, const ShiftTable<T>& st) const;
    template <class T>
    void end_rows(const LineEnds& t, int i0, int i1, const T* x, T* y, global_index ra, const AugmentedOps& ops,
                  bool want_dots, double* sums) const;
    template <class T>
    __attribute__((always_inline)) inline void finish_checked_row(const T* x, T* y, global_index row, double ar, double ai, const AugmentedOps& ops,
                            bool want_dots, double* sums) const;
    template <class T>
    void checked_rows(const T* x, T* y, global_index ra, global_index re, const AugmentedOps& ops, bool want_dots,
                      double* sums) const;

    // ---- the tables of one precision ----
    template <class T>
    const ShiftTable<T>& shift_form() const
    {
        if constexpr (std::is_same_v<T, double>) return shift_double_;
        else return shift_single_;
    }

    template <class T>
    const SiteForm<T>& site_tables() const
    {
        if constexpr (std::is_same_v<T, double>) return site_double_;
        else return site_single_;
    }

    /// The stencil, shared with whoever else reads it (the run's bounds); s_ is *held_.
    static const BlockStencil& held(const std::shared_ptr<const BlockStencil>& s)
    {
        TOPOKPM_REQUIRE(s != nullptr, "make_cpu_stencil_operator: no stencil");
        return *s;
    }
    std::shared_ptr<const BlockStencil> held_;
    const BlockStencil& s_;
    Precision precision_ = Precision::Double;
    StencilTuning tuning_;
    int nb_ = 1;
    std::array<int, 3> extent_{};               // nx, ny, nz after the relabelling
    std::array<bool, 3> periodic_{};
    std::vector<std::array<int, 3>> offsets_;   // distinct non-zero term offsets
    std::vector<int> term_dy_;                  // their step along the stencil's own y (a field's wrap)
    std::vector<std::ptrdiff_t> dlin_;          // their site-index offsets
    std::vector<std::vector<RowEntry>> entries_;  // per orbital
    int width_ = 0;                               // entries per padded row
    std::array<int, 3> lo_{}, hi_{};
    double storage_bytes_ = 0;
    bool real_ = false;                           // every coupling real, B = 2
    bool uniform_potential_ = false;              // every potential value equal
    ShiftTable<double> shift_double_;             // R = 1 shifted-load forms
    ShiftTable<float> shift_single_;
    LineEnds line_ends_double_, line_ends_single_;  // two-step pass: ends of interior lines
    SiteForm<double> site_double_;                // R = 1, B = 4 site forms (this operator's precision only)
    SiteForm<float> site_single_;
    kernels::cpu::WideStencil2D wide_;            // two steps per pass at R > 1 (2-D lattices)
    bool wide_ok_ = false;
};

}  // namespace topokpm::numerics::kernels::cpu::stencil
