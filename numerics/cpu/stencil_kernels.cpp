// Matrix-free fused augmented SpMMV of a BlockStencil on the CPU (the contract: numerics/spmmv/stencil_kernels.hpp):
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
//
// The choices above (tiles, prefetch for R >= 16, G <= 8, interleaved epilogue dots, the
// single-precision forms for R = 1, 2, 4) rest on the measurements in docs/performance.md,
// "Kernel design measurements".
//
// Not done: at R > 1 (and for graphene) xy-boundary columns (periodic wrap, ~6 % of the
// columns here) and z-faces take the checked path (about 10 % of the time at R = 32); the
// site form's per-class tables would move them onto the fast path.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "numerics/cpu/complex_block_simd.hpp"
#include "numerics/cpu/row_epilogue.hpp"
#include "numerics/cpu/stencil_two_step_wide.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

namespace simd = kernels::cpu::simd;
using kernels::cpu::collect_dots;
using kernels::cpu::finish_row;
using kernels::cpu::store_thread_dots;

/// Rows per register group at most: 8 (two ti sites at R <= 4). SELL's 32 rows at R = 1
/// measured 30 % slower here (more groups straddle a z-face and take the checked path).
constexpr int kMaxGroup = 8;

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

class CpuStencilOperator final : public Operator {
public:
    CpuStencilOperator(std::shared_ptr<const BlockStencil> s, Precision precision, const StencilTuning& tuning)
        : held_(std::move(s)), s_(held(held_)), precision_(precision), tuning_(tuning)
    {
        s_.validate();
        TOPOKPM_USER_REQUIRE(tuning.tblock_lines >= -1, "{tblock_lines} ", tuning.tblock_lines, ": must be >= -1");
        TOPOKPM_USER_REQUIRE(tuning.tblock_strip_sites >= 0, "{tblock_strip_sites} ", tuning.tblock_strip_sites,
                             ": must be >= 0");
        const auto& t = tuning.tiles;
        TOPOKPM_USER_REQUIRE((t[0] == 0 && t[1] == 0 && t[2] == 0) || (t[0] > 0 && t[1] > 0 && t[2] > 0),
                             "{stencil_tiles} ", t[0], ",", t[1], ",", t[2], ": all 0 (the rule) or all >= 1");
        nb_ = s_.orbitals;
        extent_ = {s_.nx, s_.ny, s_.nz};
        periodic_ = s_.periodic;
        // Groups run along z; a lattice with nz = 1 (graphene) would give one-site columns.
        // Relabel (x, y, z) -> (1, x, y) while z is trivial: the site index z + nz (y + ny x)
        // is unchanged, so the vectors and the potential keep their order.
        int rotations = 0;
        while (extent_[2] == 1 && (extent_[0] > 1 || extent_[1] > 1)) {
            extent_ = {extent_[2], extent_[0], extent_[1]};
            periodic_ = {periodic_[2], periodic_[0], periodic_[1]};
            ++rotations;
        }
        auto rotate = [rotations](std::array<int, 3> d) {
            for (int i = 0; i < rotations; ++i) d = {d[2], d[0], d[1]};
            return d;
        };
        // Merge terms with equal offsets; offset (0, 0, 0) joins the on-site block.
        std::vector<complex_type> onsite = s_.onsite;
        std::vector<std::vector<complex_type>> blocks;
        for (const StencilTerm& t : s_.terms) {
            const std::array<int, 3> d = rotate({t.dx, t.dy, t.dz});
            if (d == std::array<int, 3>{0, 0, 0}) {
                for (size_t i = 0; i < onsite.size(); ++i) onsite[i] += t.block[i];
                continue;
            }
            const auto it = std::find(offsets_.begin(), offsets_.end(), d);
            if (it == offsets_.end()) {
                offsets_.push_back(d);
                blocks.push_back(t.block);
            } else {
                std::vector<complex_type>& blk = blocks[static_cast<size_t>(it - offsets_.begin())];
                for (size_t i = 0; i < blk.size(); ++i) blk[i] += t.block[i];
            }
        }
        const complex_type zero(0.0, 0.0);
        entries_.resize(static_cast<size_t>(nb_));
        for (int o = 0; o < nb_; ++o) {
            for (int b = 0; b < nb_; ++b)
                if (onsite[o * nb_ + b] != zero) entries_[o].push_back({-1, b, onsite[o * nb_ + b]});
            for (size_t t = 0; t < blocks.size(); ++t)
                for (int b = 0; b < nb_; ++b)
                    if (blocks[t][o * nb_ + b] != zero) entries_[o].push_back({static_cast<int>(t), b, blocks[t][o * nb_ + b]});
            width_ = std::max(width_, static_cast<int>(entries_[o].size()));
        }
        width_ = std::max(width_, 1);
        // Real couplings (graphene): the sweep multiplies real table values into the complex
        // vectors, half the multiplications of complex ones (B = 2 only: the one real model).
        real_ = nb_ == 2;
        for (const auto& row : entries_)
            for (const RowEntry& e : row) real_ = real_ && e.v.imag() == 0.0;
        for (const auto& d : offsets_)
            dlin_.push_back(d[2] + std::ptrdiff_t(extent_[2]) * (d[1] + std::ptrdiff_t(extent_[1]) * d[0]));
        // Interior box: lo <= q < hi in every direction means q + d inside for every term.
        for (int k = 0; k < 3; ++k) {
            int below = 0, above = 0;
            for (const auto& d : offsets_) {
                below = std::max(below, -d[k]);
                above = std::max(above, d[k]);
            }
            lo_[k] = below;
            hi_[k] = extent_[k] - above;
        }
        storage_bytes_ = 8.0 * static_cast<double>(s_.potential.size()) +
                         16.0 * static_cast<double>(s_.onsite.size() * (1 + s_.terms.size()));
        // A constant potential (clean graphene: 0) is not read per row.
        uniform_potential_ = std::all_of(s_.potential.begin(), s_.potential.end(),
                                         [&](double v) { return v == s_.potential.front(); });
        // The tables of this operator's precision only (the other one stays empty: nd = 0,
        // line = 0, the checked paths): a single operator sweeps double blocks in float.
        if (precision_ == Precision::Single) {
            shift_table(shift_single_);
            line_ends(line_ends_single_, shift_single_);
        } else {
            shift_table(shift_double_);
            line_ends(line_ends_double_, shift_double_);
        }
        if (nb_ == 4) {
            if (precision_ == Precision::Single) build_site_form(site_single_, onsite, blocks);
            else build_site_form(site_double_, onsite, blocks);
        }
        build_wide_form();
    }

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

protected:
    void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override
    {
        if (precision_ == Precision::Single) return apply_in_single(x, y, ops, dots);
        run(reinterpret_cast<const double*>(x.data()), reinterpret_cast<double*>(y.data()), x.num_cols(), ops, dots);
    }

    void do_apply(const BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                  const AugmentedOps& ops, DotSums* dots) const override
    {
        if (precision_ != Precision::Single) return Operator::do_apply(x, y, ops, dots);  // throws
        run(reinterpret_cast<const float*>(x.data()), reinterpret_cast<float*>(y.data()), x.num_cols(), ops, dots);
    }

    void do_apply_two_steps(BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* first,
                            DotSums* second) const override
    {
        if (precision_ == Precision::Single) {  // double blocks on a single operator: two rounded sweeps
            apply_in_single(x, y, ops, first);
            apply_in_single(y, x, ops, second);
            return;
        }
        two_steps_run(reinterpret_cast<double*>(x.data()), reinterpret_cast<double*>(y.data()), x.num_cols(), ops, first,
                      second);
    }

    void do_apply_two_steps(BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                            const AugmentedOps& ops, DotSums* first, DotSums* second) const override
    {
        if (precision_ != Precision::Single) return Operator::do_apply(x, y, ops, first);  // throws
        two_steps_run(reinterpret_cast<float*>(x.data()), reinterpret_cast<float*>(y.data()), x.num_cols(), ops, first,
                      second);
    }

public:
    /// Two steps per pass (temporal blocking over lattice lines, see two_steps()) at R = 1
    /// where the sweep takes the shifted-load form and the lattice is 2-D after the
    /// relabelling (graphene); at R > 1 on such lattices the strip form of
    /// stencil_two_step_wide.hpp where it is offered (kernels::cpu::two_steps_wide_offered).
    /// StencilTuning::tblock_lines = 0 turns both off (A/B measurements).
    int fused_steps(int r) const override
    {
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

private:
    /// Two steps on blocks of width r in T's precision: the strip form at r > 1, else the
    /// R = 1 form for the site's orbital count.
    template <class T>
    void two_steps_run(T* x, T* y, int r, const AugmentedOps& ops, DotSums* first, DotSums* second) const
    {
        if (r > 1)
            return kernels::cpu::two_steps_wide(
                wide_, x, y, r, ops, first, second,
                kernels::cpu::two_steps_wide_strip(wide_, r, 2 * static_cast<int>(sizeof(T)), tuning_.tblock_strip_sites));
        switch (nb_) {
        case 2: return real_ ? two_steps<T, 2, true>(x, y, ops, first, second) : two_steps<T, 2, false>(x, y, ops, first, second);
        case 4: return two_steps<T, 4, false>(x, y, ops, first, second);
        default: TOPOKPM_REQUIRE(false, name(), ": two fused steps need B = 2 or 4, have ", nb_);
        }
    }

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

    template <class T>
    void run(const T* x, T* y, int r, const AugmentedOps& ops, DotSums* dots) const
    {
        switch (nb_) {
        case 2: return real_ ? dispatch_width<T, 2, true>(x, y, r, ops, dots) : dispatch_width<T, 2, false>(x, y, r, ops, dots);
        case 4: return dispatch_width<T, 4, false>(x, y, r, ops, dots);
        default: return dispatch_width<T, 0, false>(x, y, r, ops, dots);
        }
    }

    template <class T, int B, bool Real>
    void dispatch_width(const T* x, T* y, int r, const AugmentedOps& ops, DotSums* dots) const
    {
        with_width(r, [&](auto width) { sweep<T, decltype(width)::value, B, Real>(x, y, r, ops, dots); });
    }

    /// Tiles: x-slabs per thread while three x-planes of a thread are small; y-tiles of
    /// about kTilePlaneBytes per plane (full z, all x) when a plane exceeds kPlaneLimit
    /// (ti 64x64x40: R = 16 and 32 in double, R = 32 in single). StencilTuning::tiles
    /// overrides (tuning and tests; in the relabelled axes, i.e. (1, nx, ny) for a lattice
    /// with nz = 1). complex_bytes: 16 (double) or 8 (float) per vector entry.
    Tiling choose_tiling(int r, int num_threads, double complex_bytes) const
    {
        Tiling t{extent_[0], extent_[1], extent_[2]};
        if (tuning_.tiles[0] > 0) {
            t.tx = std::clamp(tuning_.tiles[0], 1, extent_[0]);
            t.ty = std::clamp(tuning_.tiles[1], 1, extent_[1]);
            t.tz = std::clamp(tuning_.tiles[2], 1, extent_[2]);
            return t;
        }
        constexpr double kPlaneLimit = 2.0 * 1024 * 1024, kTilePlaneBytes = 640.0 * 1024;
        const double line_bytes = complex_bytes * nb_ * r * extent_[2];  // one (x, y) z-column
        const int ty = static_cast<int>(std::max(1.0, kTilePlaneBytes / line_bytes));
        if (line_bytes * extent_[1] > kPlaneLimit && (extent_[1] + ty - 1) / ty >= 2 * num_threads) {
            t.ty = ty;
            return t;
        }
        if (extent_[0] >= num_threads) t.tx = (extent_[0] + num_threads - 1) / num_threads;
        else t.ty = (extent_[1] + num_threads - 1) / num_threads;
        return t;
    }

    /// Fills the shared relative tables for group size G: [phase][k][g], values rounded
    /// to T (interleaved re, im; per = 1: the real parts only).
    template <class T>
    void fast_tables(int g_rows, int per, std::vector<std::ptrdiff_t>& cols, std::vector<T>& vals) const
    {
        const int w = width_;
        cols.assign(static_cast<size_t>(nb_) * w * g_rows, 0);
        vals.assign(2 * cols.size(), T(0));
        for (int p = 0; p < nb_; ++p)
            for (int g = 0; g < g_rows; ++g) {
                const int o = (p + g) % nb_;
                const std::ptrdiff_t site_base = std::ptrdiff_t(nb_) * ((p + g) / nb_) - p;  // B s - r0
                const auto& row = entries_[o];
                for (int k = 0; k < w; ++k) {
                    const size_t i = (static_cast<size_t>(p) * w + k) * g_rows + g;
                    if (k < static_cast<int>(row.size())) {
                        const RowEntry& e = row[k];
                        const std::ptrdiff_t dl = e.term < 0 ? 0 : dlin_[e.term];
                        cols[i] = site_base + std::ptrdiff_t(nb_) * dl + e.b;
                        vals[per * i] = static_cast<T>(e.v.real());
                        if (per == 2) vals[2 * i + 1] = static_cast<T>(e.v.imag());
                    } else {
                        cols[i] = g;  // padding: own row, value 0
                    }
                }
            }
    }

    /// The shifted-load form of the rows (ShiftTable), values rounded to T; t.nd = 0 when
    /// it does not apply (more than kMax distinct offsets, or kLanes % B != 0).
    template <class T>
    void shift_table(ShiftTable<T>& t) const
    {
        constexpr int L = ShiftTable<T>::kLanes;
        t = ShiftTable<T>{};
        if (L % nb_ != 0) return;
        int nd = 0;
        std::vector<T> vr(2 * L * ShiftTable<T>::kMax, T(0)), vi(vr.size(), T(0));
        for (int l = 0; l < L; ++l) {
            const int o = l % nb_;
            for (const RowEntry& e : entries_[o]) {
                const std::ptrdiff_t dl = e.term < 0 ? 0 : dlin_[e.term];
                const std::ptrdiff_t d = std::ptrdiff_t(nb_) * dl + e.b - o;  // column - row
                int i = 0;
                while (i < nd && t.offset[i] != d) ++i;
                if (i == nd) {
                    if (nd == ShiftTable<T>::kMax) return;  // t.nd stays 0
                    t.offset[nd++] = d;
                }
                vr[2 * L * i + 2 * l] = vr[2 * L * i + 2 * l + 1] = static_cast<T>(e.v.real());
                vi[2 * L * i + 2 * l] = vi[2 * L * i + 2 * l + 1] = static_cast<T>(e.v.imag());
            }
        }
        if (nd == 0) return;  // no entries at all: the other paths handle it
        vr.resize(2 * L * nd);
        vi.resize(2 * L * nd);
        t.vr = std::move(vr);
        t.vi = std::move(vi);
        t.lo = *std::min_element(t.offset.begin(), t.offset.begin() + nd);
        t.hi = *std::max_element(t.offset.begin(), t.offset.begin() + nd) + L - 1;
        t.nd = nd;
    }

    /// SiteForm tables from the merged on-site block and term blocks (B = 4), values rounded
    /// to T. Not built when the classes would be many (tiny extents with long-range terms):
    /// the other paths run.
    template <class T>
    void build_site_form(SiteForm<T>& f, const std::vector<complex_type>& onsite,
                         const std::vector<std::vector<complex_type>>& blocks)
    {
        std::array<std::vector<int>, 3> rep;  // per direction and class: a coordinate of it
        for (int k = 0; k < 3; ++k) {
            const int n = extent_[k];
            f.cls[k].assign(static_cast<size_t>(n), 0);
            for (int q = 0; q < n; ++q) {
                int c = q;  // boundary coordinates (and all, when there is no interior): their own class
                if (hi_[k] > lo_[k]) c = q < lo_[k] ? q : (q < hi_[k] ? lo_[k] : lo_[k] + 1 + (q - hi_[k]));
                f.cls[k][static_cast<size_t>(q)] = c;
                if (c >= static_cast<int>(rep[k].size())) rep[k].push_back(q);
            }
            f.ncls[k] = static_cast<int>(rep[k].size());
        }
        const size_t count = static_cast<size_t>(f.ncls[0]) * f.ncls[1] * f.ncls[2];
        if (count > 512) return;
        f.classes.resize(count);
        for (int ax = 0; ax < f.ncls[0]; ++ax)
            for (int ay = 0; ay < f.ncls[1]; ++ay)
                for (int az = 0; az < f.ncls[2]; ++az) {
                    const std::array<int, 3> q = {rep[0][static_cast<size_t>(ax)], rep[1][static_cast<size_t>(ay)],
                                                  rep[2][static_cast<size_t>(az)]};
                    struct Item {
                        std::ptrdiff_t off;
                        int c;
                        std::array<double, 8> vr, vi;
                        bool re, im;
                    };
                    std::vector<Item> items;
                    auto add_block = [&](const std::vector<complex_type>& blk, std::ptrdiff_t dsite) {
                        for (int c = 0; c < 4; ++c) {
                            Item it{8 * dsite, c, {}, {}, false, false};
                            for (int o = 0; o < 4; ++o) {
                                complex_type v = blk[static_cast<size_t>(o * 4 + (o ^ c))];
                                v = complex_type(static_cast<T>(v.real()), static_cast<T>(v.imag()));
                                it.vr[2 * o] = it.vr[2 * o + 1] = v.real();
                                it.vi[2 * o] = it.vi[2 * o + 1] = v.imag();
                                it.re = it.re || v.real() != 0.0;
                                it.im = it.im || v.imag() != 0.0;
                            }
                            if (it.re || it.im) items.push_back(it);
                        }
                    };
                    add_block(onsite, 0);
                    for (size_t t = 0; t < offsets_.size(); ++t) {
                        std::array<std::ptrdiff_t, 3> delta{};
                        bool dropped = false;
                        for (int k = 0; k < 3; ++k) {
                            const int qn = neighbour_coord(q[k] + offsets_[t][k], extent_[k], periodic_[k]);
                            dropped = dropped || qn < 0;
                            delta[k] = qn - q[k];
                        }
                        if (dropped) continue;
                        add_block(blocks[t], delta[2] + std::ptrdiff_t(extent_[2]) * (delta[1] + std::ptrdiff_t(extent_[1]) * delta[0]));
                    }
                    // Double: by kind (Re only, Im only, both), in block order within a kind.
                    // Float: by kind, then by the diagonal c (each run of one c: a fixed permute).
                    auto kind = [](const Item& it) { return it.re && it.im ? 2 : (it.re ? 0 : 1); };
                    std::stable_sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
                        if constexpr (std::is_same_v<T, double>) return kind(a) < kind(b);
                        else return 4 * kind(a) + a.c < 4 * kind(b) + b.c;
                    });
                    typename SiteForm<T>::Class& cl =
                        f.classes[(static_cast<size_t>(ax) * f.ncls[1] + ay) * f.ncls[2] + az];
                    for (const Item& it : items) {
                        (it.re && it.im ? cl.n_both : (it.re ? cl.n_re : cl.n_im))++;
                        if constexpr (!std::is_same_v<T, double>) ++cl.first[static_cast<size_t>(4 * kind(it) + it.c) + 1];
                        cl.off.push_back(it.off);
                        if constexpr (std::is_same_v<T, double>) {
                            simd::v8l ix;
                            for (int o = 0; o < 4; ++o) {
                                ix[2 * o] = 2 * (o ^ it.c);
                                ix[2 * o + 1] = 2 * (o ^ it.c) + 1;
                            }
                            cl.idx.push_back(ix);
                        }
                        typename SiteForm<T>::Lanes lr, li;  // float: the 8 lanes of a site, twice
                        for (int l = 0; l < static_cast<int>(sizeof lr / sizeof(T)); ++l) {
                            lr[l] = static_cast<T>(it.vr[static_cast<size_t>(l % 8)]);
                            li[l] = static_cast<T>(it.vi[static_cast<size_t>(l % 8)]);
                        }
                        cl.vr.push_back(lr);
                        cl.vi.push_back(li);
                    }
                    for (size_t k = 1; k < cl.first.size(); ++k) cl.first[k] += cl.first[k - 1];
                }
        f.ok = true;
    }

    /// The rows as a 2-D stencil for two_steps_wide (R > 1): lines along the relabelled
    /// direction 1, sites along 2; only where direction 0 is trivial and no term reaches
    /// beyond the adjacent line.
    void build_wide_form()
    {
        wide_ok_ = extent_[0] == 1;
        for (const auto& d : offsets_) wide_ok_ = wide_ok_ && d[0] == 0 && std::abs(d[1]) <= 1;
        if (!wide_ok_) return;
        kernels::cpu::WideStencil2D& w = wide_;
        w.lines = extent_[1];
        w.sites = extent_[2];
        w.orbitals = nb_;
        w.periodic_lines = periodic_[1];
        w.periodic_sites = periodic_[2];
        w.real = true;
        w.rows.assign(static_cast<size_t>(nb_), {});
        for (int o = 0; o < nb_; ++o)
            for (const RowEntry& e : entries_[static_cast<size_t>(o)]) {
                const std::array<int, 3> d = e.term < 0 ? std::array<int, 3>{0, 0, 0} : offsets_[static_cast<size_t>(e.term)];
                w.rows[static_cast<size_t>(o)].push_back({d[1], d[2], e.b, e.v.real(), e.v.imag()});
                w.site_reach = std::max(w.site_reach, std::abs(d[2]));
                w.real = w.real && e.v.imag() == 0.0;
            }
        w.potential = s_.potential.data();
        w.per_row = s_.potential_per_row();
        w.uniform_potential = uniform_potential_ && !s_.potential.empty();
    }

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

    template <class T, int R, int B, bool Real>
    void sweep(const T* x, T* y, int runtime_r, const AugmentedOps& ops, DotSums* dots) const;

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

/// Single precision, R = 1, 2, 4: the vectors run across 8 / R rows (as complex_block_simd.hpp
/// does for R = 1, 2 in double): per entry, one vector holds the R complex x values of
/// 8 / R rows (gathered from their columns) and the rows' values broadcast over their
/// lanes; a += Re v x, b += Im v x, combined once as in simd::rows_times_block_single.
/// Requires (G R) % 8 == 0.
template <int R, int G>
inline void rows_across_single(int w, const float* __restrict vals, const std::ptrdiff_t* __restrict cols,
                               const float* __restrict x, float* __restrict out)
{
    static_assert(R == 1 || R == 2 || R == 4, "R = 1, 2, 4");
    static_assert((G * R) % 8 == 0, "whole vectors of 8 complex floats");
    constexpr int rows_per_vec = 8 / R;
    constexpr int nv = G * R / 8;
    using simd::v2d;
    using simd::v4d;
    using simd::v8d;
    using simd::v4f;
    v16f a[nv], b[nv];
#pragma GCC unroll 8
    for (int v = 0; v < nv; ++v) a[v] = b[v] = v16f{};
    // x rows as doubles (a complex float is 8 bytes): register loads and shuffles only
    // (building the vector in memory from pieces measured 2-3x slower: store forwarding).
    auto xrow = [&](std::ptrdiff_t e) { return reinterpret_cast<const double*>(x + 2 * cols[e] * R); };
    for (int k = 0; k < w; ++k) {
#pragma GCC unroll 8
        for (int v = 0; v < nv; ++v) {
            const std::ptrdiff_t e0 = static_cast<std::ptrdiff_t>(k) * G + v * rows_per_vec;
            const float* vp = vals + 2 * e0;  // the rows' values, adjacent ([k][g])
            v8d xd;
            v16f vr, vi;
            if constexpr (R == 1) {
                xd = v8d{*xrow(e0), *xrow(e0 + 1), *xrow(e0 + 2), *xrow(e0 + 3),
                         *xrow(e0 + 4), *xrow(e0 + 5), *xrow(e0 + 6), *xrow(e0 + 7)};
                const v16f raw = loadf<v16f>(vp);
                vr = __builtin_shufflevector(raw, raw, 0, 0, 2, 2, 4, 4, 6, 6, 8, 8, 10, 10, 12, 12, 14, 14);
                vi = __builtin_shufflevector(raw, raw, 1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15);
            } else if constexpr (R == 2) {
                const v4d lo = __builtin_shufflevector(simd::load<v2d>(xrow(e0)), simd::load<v2d>(xrow(e0 + 1)), 0, 1, 2, 3);
                const v4d hi = __builtin_shufflevector(simd::load<v2d>(xrow(e0 + 2)), simd::load<v2d>(xrow(e0 + 3)), 0, 1, 2, 3);
                xd = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
                const v8f raw = loadf<v8f>(vp);
                vr = __builtin_shufflevector(raw, raw, 0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
                vi = __builtin_shufflevector(raw, raw, 1, 1, 1, 1, 3, 3, 3, 3, 5, 5, 5, 5, 7, 7, 7, 7);
            } else {
                xd = __builtin_shufflevector(simd::load<v4d>(xrow(e0)), simd::load<v4d>(xrow(e0 + 1)), 0, 1, 2, 3, 4,
                                             5, 6, 7);
                const v4f raw = loadf<v4f>(vp);
                vr = __builtin_shufflevector(raw, raw, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2);
                vi = __builtin_shufflevector(raw, raw, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3);
            }
            v16f xv;
            std::memcpy(&xv, &xd, sizeof xv);  // register bit cast
            a[v] += vr * xv;
            b[v] += vi * xv;
        }
    }
    const v16f sign = {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1};
    const v16i swap = {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14};
#pragma GCC unroll 8
    for (int v = 0; v < nv; ++v) {
        const v16f o = a[v] + sign * __builtin_shuffle(b[v], swap);
        std::memcpy(out + 16 * v, &o, sizeof o);
    }
}

/// True when group_product has a real-valued (one T per entry) form for T, R, G: double at
/// every compile-time width, float at R a multiple of 4 and at R = 1 (across 8 rows).
template <class T, int R, int G>
constexpr bool real_group_product()
{
    if constexpr (R <= 0) return false;
    else if constexpr (std::is_same_v<T, double>) return true;
    else return R % 4 == 0 || (R == 1 && G % 8 == 0);
}

/// acc[g][c] := sum_k vals[k][g] x(cols[k][g], c) for G rows. Double with compile-time R:
/// the register-blocked helper of complex_block_simd.hpp; float with R a multiple of 8:
/// rows_times_block_single; float R = 1, 2, 4: rows_across_single; R = 0: runtime width r,
/// G = 1.
template <class T, int R, int G, bool Real = false>
inline void group_product(int w, const T* __restrict vals, const std::ptrdiff_t* __restrict cols,
                          const T* __restrict xbase, T* __restrict acc, int r)
{
    static_assert(!Real || real_group_product<T, R, G>(), "no real-valued kernel for this width");
    if constexpr (R > 0 && std::is_same_v<T, double>) {
        (void)r;
        simd::rows_times_block<R, G, true, Real>(w, vals, 1, G, cols, 1, G, xbase, acc);
    } else if constexpr (R > 0 && (R % 4 == 0 || (Real && R == 1 && G % 8 == 0))) {
        (void)r;
        simd::rows_times_block_single<R, G, Real>(w, vals, 1, G, cols, 1, G, xbase, acc);  // table layout [k][g]
    } else if constexpr (R > 0 && (G * R) % 8 == 0) {  // float, R = 1, 2, 4
        (void)r;
        rows_across_single<R, G>(w, vals, cols, xbase, acc);
    } else if constexpr (R > 0) {  // float, R = 1, 2, 4 with G R < 8 (no AVX-512 budget): plain loop
        (void)r;
        float ar[G * R] = {}, ai[G * R] = {};
        for (int k = 0; k < w; ++k) {
#pragma GCC unroll 8
            for (int g = 0; g < G; ++g) {
                const std::ptrdiff_t e = static_cast<std::ptrdiff_t>(k) * G + g;
                const float vr = vals[2 * e], vi = vals[2 * e + 1];
                const float* __restrict xr = xbase + 2 * cols[e] * R;
#pragma GCC unroll 4
                for (int c = 0; c < R; ++c) {
                    ar[g * R + c] += vr * xr[2 * c] - vi * xr[2 * c + 1];
                    ai[g * R + c] += vr * xr[2 * c + 1] + vi * xr[2 * c];
                }
            }
        }
        for (int j = 0; j < G * R; ++j) {
            acc[2 * j] = ar[j];
            acc[2 * j + 1] = ai[j];
        }
    } else {
        static_assert(G == 1, "runtime width: one row per group");
        for (int j = 0; j < 2 * r; ++j) acc[j] = T(0);
        for (int k = 0; k < w; ++k) {
            const T vr = vals[2 * k], vi = vals[2 * k + 1];
            const T* __restrict xr = xbase + 2 * cols[k] * r;
#pragma omp simd
            for (int c = 0; c < r; ++c) {
                acc[2 * c] += vr * xr[2 * c] - vi * xr[2 * c + 1];
                acc[2 * c + 1] += vr * xr[2 * c + 1] + vi * xr[2 * c];
            }
        }
    }
}

/// R = 1 fast path as permuted loads (AVX-512): in a lattice the x values that one vector of
/// L rows needs at entry k (L = 4 complex doubles or 8 complex floats per 512-bit register)
/// lie in at most two windows of L consecutive rows at fixed offsets from the group's first
/// row (ti: the neighbour site's 4 orbitals; graphene: the A and the B rows' neighbours). So
/// per vector and entry: two vector loads and one two-source permute (vpermt2pd; a complex
/// float is one 64-bit word) with offsets and permute indices from the table, instead of L
/// index loads, L partial loads and the shuffles that assemble them. The values are stored
/// already spread over the lanes (no broadcast shuffle). Built from the fast tables per
/// phase; a phase is not ok (its groups run the gathered form) when some vector needs a
/// third window (ti: the phases other than 0, which its groups of two whole sites never have).
template <class T>
struct WindowTable {
    static constexpr int kLanes = std::is_same_v<T, double> ? 4 : 8;  ///< complex values per vector
    std::vector<char> ok;                ///< per phase
    int nv = 0;                          ///< vectors per group (G / kLanes)
    std::vector<std::ptrdiff_t> base;    ///< 2 per (phase, k, v): window starts, rows relative to r0
    std::vector<long long> index;        ///< 8 per (phase, k, v): permute indices into the two windows
    std::vector<T> vr, vi;               ///< 2 kLanes per (phase, k, v): Re v, Im v per lane
    std::ptrdiff_t lo = 0, hi = 0;       ///< rows r0 + lo .. r0 + hi are read
};

/// The window form of the fast tables `cols`, `vals` ([phase][k][g], per values per entry).
template <class T>
WindowTable<T> window_table(int phases, int w, int g_rows, int per, const std::vector<std::ptrdiff_t>& cols,
                            const std::vector<T>& vals)
{
    constexpr int L = WindowTable<T>::kLanes;
    WindowTable<T> t;
    t.ok.assign(static_cast<size_t>(phases), 0);
    if (g_rows % L != 0) return t;
    t.nv = g_rows / L;
    const size_t n = static_cast<size_t>(phases) * w * t.nv;
    t.base.assign(2 * n, 0);
    t.index.assign(8 * n, 0);
    t.vr.assign(2 * L * n, T(0));
    t.vi.assign(2 * L * n, T(0));
    bool first = true;
    for (int p = 0; p < phases; ++p) {
        bool ok = true;
        for (int k = 0; k < w && ok; ++k)
            for (int v = 0; v < t.nv && ok; ++v) {
                const size_t e = (static_cast<size_t>(p) * w + k) * t.nv + v;
                std::ptrdiff_t b[2] = {0, 0};
                int used = 0;
                for (int l = 0; l < L; ++l) {
                    const size_t i = (static_cast<size_t>(p) * w + k) * g_rows + v * L + l;
                    const T re = vals[per * i], im = per == 2 ? vals[2 * i + 1] : T(0);
                    if (re == T(0) && im == T(0)) continue;  // padding: any lane will do (index 0)
                    const std::ptrdiff_t c = cols[i];
                    int s = 0;
                    while (s < used && !(c >= b[s] && c < b[s] + L)) ++s;
                    if (s == used) {
                        if (used == 2) {  // a third window: not this form
                            ok = false;
                            break;
                        }
                        b[used++] = c;
                    }
                    const int off = static_cast<int>(c - b[s]);
                    if constexpr (L == 4) {  // double: two 64-bit lanes per complex
                        t.index[8 * e + 2 * l] = 8 * s + 2 * off;
                        t.index[8 * e + 2 * l + 1] = 8 * s + 2 * off + 1;
                    } else {  // float: one 64-bit word per complex
                        t.index[8 * e + l] = 8 * s + off;
                    }
                    t.vr[2 * L * e + 2 * l] = t.vr[2 * L * e + 2 * l + 1] = re;
                    t.vi[2 * L * e + 2 * l] = t.vi[2 * L * e + 2 * l + 1] = im;
                }
                if (!ok) break;
                if (used == 0) b[0] = 0;  // all padding: read the group's own rows
                if (used < 2) b[1] = b[0];
                for (int s = 0; s < 2; ++s) {
                    t.base[2 * e + s] = b[s];
                    t.lo = first ? b[s] : std::min(t.lo, b[s]);
                    t.hi = first ? b[s] + L - 1 : std::max(t.hi, b[s] + L - 1);
                    first = false;
                }
            }
        t.ok[static_cast<size_t>(p)] = ok;
    }
    return t;
}

#if defined(__AVX512F__)
inline constexpr bool kWindowForm = true;
#else
inline constexpr bool kWindowForm = false;  // two-source permutes of 64-bit lanes need AVX-512
#endif

/// acc := the sums of one group of G = nv L rows in the window form (table entries of
/// `phase`, x at the group's first row), interleaved (re, im) as group_product stores them.
template <class T, bool Real, int NV>
inline void window_product(const WindowTable<T>& t, int phase, int w, const T* __restrict x0, T* __restrict acc)
{
    using simd::v8d;
    using simd::v8l;
    constexpr int L = WindowTable<T>::kLanes;
    constexpr int nv = NV;
    v8d a[nv] = {}, b[nv] = {};
    const std::ptrdiff_t* bp = t.base.data() + 2 * static_cast<size_t>(phase) * w * nv;
    const long long* ip = t.index.data() + 8 * static_cast<size_t>(phase) * w * nv;
    const T* rp = t.vr.data() + 2 * L * static_cast<size_t>(phase) * w * nv;
    const T* jp = t.vi.data() + 2 * L * static_cast<size_t>(phase) * w * nv;
    const auto load64 = [](const T* p) {  // 64 bytes as 8 doubles (bits only for float)
        v8d v;
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    const auto fma = [&](v8d& acc_v, const T* vp, v8d xv) {
        if constexpr (std::is_same_v<T, double>) {
            acc_v += load64(vp) * xv;
        } else {
            v16f av, xf, vf;
            std::memcpy(&av, &acc_v, sizeof av);
            std::memcpy(&xf, &xv, sizeof xf);
            std::memcpy(&vf, vp, sizeof vf);
            av += vf * xf;
            std::memcpy(&acc_v, &av, sizeof av);
        }
    };
    for (int k = 0; k < w; ++k) {
#pragma GCC unroll 2
        for (int v = 0; v < nv; ++v) {
            const size_t e = static_cast<size_t>(k) * nv + v;
            v8l idx;
            std::memcpy(&idx, ip + 8 * e, sizeof idx);
            const v8d xv = __builtin_shuffle(load64(x0 + 2 * bp[2 * e]), load64(x0 + 2 * bp[2 * e + 1]), idx);
            fma(a[v], rp + 2 * L * e, xv);
            if constexpr (!Real) fma(b[v], jp + 2 * L * e, xv);
        }
    }
    for (int v = 0; v < nv; ++v) {
        if constexpr (std::is_same_v<T, double>) {
            const v8d sign = {-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0};
            const v8d o = Real ? a[v] : a[v] + sign * __builtin_shufflevector(b[v], b[v], 1, 0, 3, 2, 5, 4, 7, 6);
            simd::store(acc + 8 * v, o);
        } else {
            v16f af, bf;
            std::memcpy(&af, &a[v], sizeof af);
            std::memcpy(&bf, &b[v], sizeof bf);
            const v16f sign = {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1};
            const v16f o = Real ? af
                                : af + sign * __builtin_shufflevector(bf, bf, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10,
                                                                       13, 12, 15, 14);
            std::memcpy(acc + 16 * v, &o, sizeof o);
        }
    }
}

/// The potential term of 4 complex lanes starting at row q (q % B == 0 for a per-site
/// potential): d = V - shift per complex value, repeated over its (re, im).
template <int B>
__attribute__((always_inline)) inline simd::v8d potential_lanes(const double* pot, bool per_row, global_index q,
                                                                double shift)
{
    using simd::v8d;
    if (per_row) {
        const simd::v4d p = simd::load<simd::v4d>(pot + q);
        return __builtin_shufflevector(p, p, 0, 0, 1, 1, 2, 2, 3, 3) - shift;
    }
    if constexpr (B == 4) {
        return v8d{} + (pot[q / 4] - shift);
    } else {
        static_assert(B == 2, "B = 2 or 4");
        const double p0 = pot[q / 2] - shift, p1 = pot[q / 2 + 1] - shift;
        return v8d{p0, p0, p0, p0, p1, p1, p1, p1};
    }
}

/// One vector register of T: 4 complex doubles or 8 complex floats.
template <class T>
using VecOf = std::conditional_t<std::is_same_v<T, double>, simd::v8d, v16f>;

template <class T>
__attribute__((always_inline)) inline VecOf<T> load_vec(const T* p)
{
    VecOf<T> v;
    std::memcpy(&v, p, sizeof v);  // unaligned
    return v;
}

/// A constant v of the float epilogue dithered over the rows (kernels::cpu::dithered_float,
/// row_epilogue.hpp) as complex float lanes: row j's value at lanes 2j and 2j + 1 for
/// j < 32 (the 16-row pattern twice), so the lanes of the rows q .. q + 7 are the 16 floats
/// at at(q) (row q takes the value DitheredFloat::at(q) gives).
struct DitheredLanes {
    alignas(64) float v[64];
    explicit DitheredLanes(double value)
    {
        const kernels::cpu::DitheredFloat d = kernels::cpu::dithered_float(value);
        for (int j = 0; j < 32; ++j) v[2 * j] = v[2 * j + 1] = d.v[j % 16];
    }
    const float* at(global_index q) const { return v + 2 * (q & 15); }
};

/// Dot lanes of the float epilogue (xx += x x, yx += y x, yxs += y swap(x) per float lane),
/// each a float sum of at most kSingleDotRun products before add_to() puts it into the
/// double lanes of `lanes` and starts the next run.
struct FloatDotLanes {
    v16f xx{}, yx{}, yxs{};
    void add_to(kernels::cpu::DotLanes& lanes)
    {
        auto widen_add = [](simd::v8d& acc, v16f v) __attribute__((always_inline)) {
            acc += __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7), simd::v8d) +
                   __builtin_convertvector(__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15), simd::v8d);
        };
        widen_add(lanes.xx, xx);
        widen_add(lanes.yx, yx);
        widen_add(lanes.yxs, yxs);
        xx = yx = yxs = v16f{};
    }
};

/// The potential term of 8 complex float lanes starting at row q (q % B == 0 for a
/// per-site potential): d = fl(V - shift) per complex value, repeated over its (re, im).
template <int B>
__attribute__((always_inline)) inline v16f potential_lanes_f(const double* pot, bool per_row, global_index q,
                                                             double shift)
{
    if (per_row) {
        simd::v8d p;
        std::memcpy(&p, pot + q, sizeof p);
        const v8f d = __builtin_convertvector(p - shift, v8f);
        return __builtin_shufflevector(d, d, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    }
    constexpr int kSites = 8 / B;  // sites per vector, 2 B lanes each
    v16f d;
    for (int k = 0; k < kSites; ++k) {
        const float dk = static_cast<float>(pot[q / B + k] - shift);
        for (int l = 0; l < 2 * B; ++l) d[2 * B * k + l] = dk;
    }
    return d;
}

/// The interior rows [ra, re) of one z-column in the shifted-load form (ShiftTable), with
/// the epilogue fused: the sums never leave the registers. ra % B == 0, (re - ra) % kLanes
/// == 0, and every row of every site in [ra, re) has all its neighbours inside the box.
/// Two vectors per iteration with their own dot lanes (the dot FMAs' latency, not their
/// throughput, would bound one chain); `lanes` gets both. Not inlined: one call per column,
/// and the loop keeps its own register allocation.
/// T = float: the whole row in float, 16 lanes (8 complex rows) per vector, no conversion
/// per row: y = fl(scale) (a + fl(V - shift) x) + fl(beta) y0 in float fused multiply-adds,
/// with scale and a uniform V - shift dithered over the rows (dithered_lanes); beta, -1 or 0
/// in the KPM recurrence, is one float. The dots: float lane sums of kSingleDotRun products,
/// added to the double lanes after each run (stencil_kernels.hpp).
template <class T, bool Real, int ND, int B>
__attribute__((noinline)) void shift_run(const ShiftTable<T>& t, const T* __restrict x, T* __restrict y, global_index ra, global_index re,
               const double* pot, bool per_row, bool uniform, double scale, double shift, double beta,
               bool want_dots, kernels::cpu::DotLanes& lanes)
{
    using simd::v8d;
    using V = VecOf<T>;
    constexpr int L = ShiftTable<T>::kLanes;
    constexpr bool kDouble = std::is_same_v<T, double>;
    V vr[ND], vi[ND];
    std::ptrdiff_t off[ND];
#pragma GCC unroll 8
    for (int i = 0; i < ND; ++i) {
        vr[i] = load_vec(t.vr.data() + 2 * L * i);
        if constexpr (!Real) vi[i] = load_vec(t.vi.data() + 2 * L * i);
        off[i] = 2 * t.offset[static_cast<size_t>(i)];
    }
    // The row sums a = sum_i v_i x(r + d_i), in T.
    auto sums = [&](const T* xb) __attribute__((always_inline)) {
        V a = vr[0] * load_vec(xb + off[0]), b{};
        if constexpr (!Real) b = vi[0] * load_vec(xb + off[0]);
#pragma GCC unroll 8
        for (int i = 1; i < ND; ++i) {
            const V xv = load_vec(xb + off[i]);
            a += vr[i] * xv;
            if constexpr (!Real) b += vi[i] * xv;
        }
        if constexpr (!Real) {
            if constexpr (kDouble) {
                const v8d sign = {-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0};
                a += sign * __builtin_shufflevector(b, b, 1, 0, 3, 2, 5, 4, 7, 6);
            } else {
                const v16f sign = {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1};
                a += sign * __builtin_shufflevector(b, b, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
            }
        }
        return a;
    };
    if constexpr (kDouble) {
        const v8d sv = v8d{} + scale;
        const v8d du = v8d{} + (pot[0] - shift);  // uniform potential: one value for every row
        kernels::cpu::DotLanes l0 = lanes, l1{};
        auto body = [&](global_index r0, kernels::cpu::DotLanes& dl) __attribute__((always_inline)) {
            const T* xb = x + 2 * r0;
            const v8d a = sums(xb);
            const v8d dv = uniform ? du : potential_lanes<B>(pot, per_row, r0, shift);
            kernels::cpu::finish_vector_sums(a, xb, y + 2 * r0, sv, dv, beta, want_dots, dl);
        };
        global_index r0 = ra;
        for (; r0 + 2 * L <= re; r0 += 2 * L) {
            body(r0, l0);
            body(r0 + L, l1);
        }
        if (r0 < re) body(r0, l0);
        lanes.xx = l0.xx + l1.xx;
        lanes.yx = l0.yx + l1.yx;
        lanes.yxs = l0.yxs + l1.yxs;
    } else {
        const DitheredLanes ds(scale), dd(pot[0] - shift);  // uniform potential: not read per row
        const v16f sv[2] = {loadf<v16f>(ds.v), loadf<v16f>(ds.v + 16)};
        const v16f du[2] = {loadf<v16f>(dd.v), loadf<v16f>(dd.v + 16)};
        const v16f bv = v16f{} + static_cast<float>(beta);
        const bool read_y = beta != 0.0;  // beta == 0: y is never read
        // y of 8 rows at r0 (dither half 0 or 1); the dots of its x and the stored y into fd.
        auto body = [&](global_index r0, int half, FloatDotLanes& fd) __attribute__((always_inline)) {
            const T* xb = x + 2 * r0;
            T* yb = y + 2 * r0;
            const v16f a = sums(xb);
            const v16f xv = load_vec(xb);
            const v16f dv = uniform ? du[half] : potential_lanes_f<B>(pot, per_row, r0, shift);
            const v16f old = read_y ? bv * load_vec(yb) : v16f{};
            const v16f yv = sv[half] * (a + dv * xv) + old;
            std::memcpy(yb, &yv, sizeof yv);
            if (want_dots) {
                fd.xx += xv * xv;
                fd.yx += yv * xv;
                fd.yxs += yv * __builtin_shufflevector(xv, xv, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
            }
        };
        // Float lane sums of kSingleDotRun products each (two sets: f0, f1, added in float),
        // then into the double lanes.
        constexpr int kDotChunk = 2 * kSingleDotRun;
        auto flush = [&](const FloatDotLanes& f0, const FloatDotLanes& f1) __attribute__((always_inline)) {
            FloatDotLanes sum{f0.xx + f1.xx, f0.yx + f1.yx, f0.yxs + f1.yxs};
            sum.add_to(lanes);
        };
        global_index r0 = ra;
        while (r0 < re) {
            FloatDotLanes f0, f1;
            const global_index end = std::min<global_index>(re, r0 + static_cast<global_index>(kDotChunk) * L);
            for (; r0 + 2 * L <= end; r0 += 2 * L) {
                body(r0, 0, f0);
                body(r0 + L, 1, f1);
            }
            if (r0 < end) {
                body(r0, 0, f0);
                r0 += L;
            }
            if (want_dots) flush(f0, f1);
        }
    }
}

/// The sums of S consecutive sites of one SiteForm<double> class (x0: the first site's 4
/// rows), in double lanes.
template <int S>
__attribute__((always_inline)) inline void site_sums(const SiteForm<double>::Class& c, const double* __restrict x0,
                                                     simd::v8d (&a)[S])
{
    using simd::v8d;
    using simd::v8l;
    v8d b[S];
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) a[s] = b[s] = v8d{};
    const std::ptrdiff_t* off = c.off.data();
    const v8l* ip = c.idx.data();
    const v8d* rp = c.vr.data();
    const v8d* jp = c.vi.data();
    const int e_re = c.n_re, e_im = e_re + c.n_im, e_all = e_im + c.n_both;
    auto xs = [&](int i, int s) __attribute__((always_inline)) {
        return __builtin_shuffle(simd::load<v8d>(x0 + 8 * s + off[i]), ip[i]);
    };
    for (int i = 0; i < e_re; ++i) {
        const v8d v = rp[i];
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s) a[s] += v * xs(i, s);
    }
    for (int i = e_re; i < e_im; ++i) {
        const v8d v = jp[i];
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s) b[s] += v * xs(i, s);
    }
    for (int i = e_im; i < e_all; ++i) {
        const v8d vr = rp[i], vi = jp[i];
#pragma GCC unroll 8
        for (int s = 0; s < S; ++s) {
            const v8d xv = xs(i, s);
            a[s] += vr * xv;
            b[s] += vi * xv;
        }
    }
    const v8d sign = {-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0};
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) a[s] += sign * __builtin_shufflevector(b[s], b[s], 1, 0, 3, 2, 5, 4, 7, 6);
}

/// The 4 complex floats of one site at p in the low half of a vector, zeros above (one
/// 256-bit load: nothing past the site is read).
__attribute__((always_inline)) inline v16f load_one_site(const float* p)
{
    const v8f v = loadf<v8f>(p);
    return __builtin_shufflevector(v, v8f{}, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

/// The complex lanes of v (two sites of 4) permuted within each site: lane o takes lane
/// o ^ C (a fixed shuffle of 64-bit lanes; C = 0: none).
template <int C>
__attribute__((always_inline)) inline v16f xor_lanes(v16f v)
{
    if constexpr (C == 0) {
        return v;
    } else {
        simd::v8d p;  // the same bits: one complex float per lane
        std::memcpy(&p, &v, sizeof p);
        p = __builtin_shufflevector(p, p, C, 1 ^ C, 2 ^ C, 3 ^ C, 4 + C, 4 + (1 ^ C), 4 + (2 ^ C), 4 + (3 ^ C));
        std::memcpy(&v, &p, sizeof v);
        return v;
    }
}

/// The sums of two consecutive sites of one SiteForm<float> class (x0: the first site's 4
/// rows) in out[0], or of one site in the low half (Lone), or of four sites in out[0] and
/// out[1] (Quad), in float lanes: per item and pair one load of the neighbour sites, the
/// permute of their complex lanes that the item's diagonal c fixes (none for c = 0) and one
/// FMA with the item's values. A lone site runs the pair's 512-bit operations on a zero high
/// half and a quad two pairs' side by side, so each lane's arithmetic (and rounding) is the
/// same in all three.
template <bool Lone, int Quad>
__attribute__((always_inline)) inline void site_sums_f(const SiteForm<float>::Class& c, const float* __restrict x0,
                                                       v16f (&out)[Quad ? 2 * Quad : 1])
{
    const std::ptrdiff_t* off = c.off.data();
    const v16f* rp = c.vr.data();
    const v16f* jp = c.vi.data();
    v16f a0{}, b0{}, a1{}, b1{}, a2{}, b2{}, a3{}, b3{};
    auto items = [&](auto kind, auto diagonal) __attribute__((always_inline)) {
        constexpr int K = decltype(kind)::value, C = decltype(diagonal)::value;
        for (int i = c.first[4 * K + C]; i < c.first[4 * K + C + 1]; ++i) {
            const float* p = x0 + off[i];
            const v16f xv = xor_lanes<C>(Lone ? load_one_site(p) : loadf<v16f>(p));
            if constexpr (K != 1) a0 += rp[i] * xv;
            if constexpr (K != 0) b0 += jp[i] * xv;
            if constexpr (Quad >= 1) {
                const v16f xw = xor_lanes<C>(loadf<v16f>(p + 16));
                if constexpr (K != 1) a1 += rp[i] * xw;
                if constexpr (K != 0) b1 += jp[i] * xw;
            }
            if constexpr (Quad >= 2) {
                const v16f xw = xor_lanes<C>(loadf<v16f>(p + 32));
                if constexpr (K != 1) a2 += rp[i] * xw;
                if constexpr (K != 0) b2 += jp[i] * xw;
                const v16f xu = xor_lanes<C>(loadf<v16f>(p + 48));
                if constexpr (K != 1) a3 += rp[i] * xu;
                if constexpr (K != 0) b3 += jp[i] * xu;
            }
        }
    };
    using std::integral_constant;
    auto all_diagonals = [&](auto kind) __attribute__((always_inline)) {
        items(kind, integral_constant<int, 0>{});
        items(kind, integral_constant<int, 1>{});
        items(kind, integral_constant<int, 2>{});
        items(kind, integral_constant<int, 3>{});
    };
    all_diagonals(integral_constant<int, 0>{});
    all_diagonals(integral_constant<int, 1>{});
    all_diagonals(integral_constant<int, 2>{});
    const v16f sign = {-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1};
    out[0] = a0 + sign * __builtin_shufflevector(b0, b0, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    if constexpr (Quad >= 1)
        out[1] = a1 + sign * __builtin_shufflevector(b1, b1, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    if constexpr (Quad >= 2) {
        out[2] = a2 + sign * __builtin_shufflevector(b2, b2, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
        out[3] = a3 + sign * __builtin_shufflevector(b3, b3, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    }
}

/// The float epilogue of two sites (Lone: one, in the low half) whose first row is q
/// (x0 = x + 2 q, y0 = y + 2 q):
///     y = s (a + d x) + fl(beta) y0       (float fused multiply-adds)
/// s and a uniform d (d_rows != nullptr) dithered by row (DitheredLanes), a per-site or
/// per-row d = V - shift rounded to float; the dots into fd (one product per lane).
template <bool Lone>
__attribute__((always_inline)) inline void site_finish_f(v16f a, const float* __restrict x0, float* __restrict y0,
                                                         global_index q, const DitheredLanes& s_rows,
                                                         const DitheredLanes* d_rows, const double* pot, bool per_row,
                                                         double shift, float beta, bool read_y, bool want_dots,
                                                         FloatDotLanes& fd)
{
    auto load = [](const float* p) __attribute__((always_inline)) { return Lone ? load_one_site(p) : loadf<v16f>(p); };
    const v16f sv = loadf<v16f>(s_rows.at(q));
    v16f dv;
    if (d_rows != nullptr) {
        dv = loadf<v16f>(d_rows->at(q));
    } else if constexpr (!Lone) {
        dv = potential_lanes_f<4>(pot, per_row, q, shift);
    } else if (per_row) {  // the site's 4 rows only
        simd::v4d p;
        std::memcpy(&p, pot + q, sizeof p);
        const simd::v4f d = __builtin_convertvector(p - shift, simd::v4f);
        dv = __builtin_shufflevector(d, d, 0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 2, 2, 3, 3);
    } else {
        dv = v16f{} + static_cast<float>(pot[q / 4] - shift);
    }
    const v16f xv = load(x0);
    const v16f old = read_y ? (v16f{} + beta) * load(y0) : v16f{};  // beta == 0: y is never read
    const v16f yv = sv * (a + dv * xv) + old;
    std::memcpy(y0, &yv, Lone ? sizeof(float) * 8 : sizeof yv);
    if (want_dots) {  // a lone site's high lanes are 0
        fd.xx += xv * xv;
        fd.yx += yv * xv;
        fd.yxs += yv * __builtin_shufflevector(xv, xv, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    }
}

/// The float epilogue's constants of the site form (T = float): scale and a uniform
/// V - shift dithered by row; uniform_d = nullptr: the potential is read per site (or row).
struct SiteFloatConstants {
    const DitheredLanes* scale = nullptr;
    const DitheredLanes* uniform_d = nullptr;
};

/// Sites za <= z < zb of the z-column whose first site is `site0` and whose (x, y) classes
/// are cx, cy, in the SiteForm with the epilogue fused: 8, 4, 2 or 1 sites of one class per
/// step (fewer where the class changes: the z faces), each site with its own sums.
/// T = double: site_sums<S> (a vector per site; the dot lanes alternate between two sets by
/// site) and finish_vector_sums.
/// T = float: two sites per vector (site_sums_f) and the float epilogue (site_finish_f: no
/// conversion per row; dots per float lane in runs of at most kSingleDotRun products, then
/// into `lanes`); `fc` holds its dithered constants.
template <class T>
__attribute__((noinline)) void site_column(const SiteForm<T>& f, int cx, int cy, const T* __restrict x,
                                           T* __restrict y, global_index site0, int za, int zb,
                                           const double* pot, bool per_row, double scale, double shift,
                                           double beta, bool want_dots, kernels::cpu::DotLanes& lanes,
                                           const SiteFloatConstants& fc)
{
    using simd::v8d;
    const int* zcls = f.cls[2].data();
    if constexpr (std::is_same_v<T, double>) {
        (void)fc;
        const v8d sv = v8d{} + scale;
        kernels::cpu::DotLanes l1{};
        for (int z = za; z < zb;) {
            const int cz = zcls[z];
            const SiteForm<double>::Class& c = f.at(cx, cy, cz);
            const global_index site = site0 + z;
            const T* x0 = x + 8 * site;
            T* y0 = y + 8 * site;
            // N sites of one class in one step: each site's sums and row ending as alone, the
            // dots alternating between two lane sets.
            const auto sites = [&](auto n) __attribute__((always_inline)) {
                constexpr int N = decltype(n)::value;
                v8d a[N];
                site_sums<N>(c, x0, a);
#pragma GCC unroll 8
                for (int k = 0; k < N; ++k)
                    kernels::cpu::finish_vector_sums(a[k], x0 + 8 * k, y0 + 8 * k, sv,
                                                     potential_lanes<4>(pot, per_row, 4 * site + 4 * k, shift), beta,
                                                     want_dots, k % 2 == 0 ? lanes : l1);
                z += N;
            };
            if (z + 7 < zb && zcls[z + 7] == cz) sites(std::integral_constant<int, 8>{});
            else if (z + 3 < zb && zcls[z + 3] == cz) sites(std::integral_constant<int, 4>{});  // (classes are monotone along z)
            else if (z + 1 < zb && zcls[z + 1] == cz) sites(std::integral_constant<int, 2>{});
            else sites(std::integral_constant<int, 1>{});
        }
        lanes.xx += l1.xx;
        lanes.yx += l1.yx;
        lanes.yxs += l1.yxs;
    } else {
        (void)scale;
        const float beta_f = static_cast<float>(beta);
        const bool read_y = beta != 0.0;
        FloatDotLanes fd, fd2;  // the even and the odd pairs of a step
        int run = 0;            // products per lane in fd since its last add_to (fd2: at most as many)
        for (int z = za; z < zb;) {
            const int cz = zcls[z];
            const SiteForm<float>::Class& c = f.at(cx, cy, cz);
            const global_index site = site0 + z;
            const float* x0 = x + 8 * site;
            float* y0 = y + 8 * site;
            const bool eight = z + 7 < zb && zcls[z + 7] == cz;  // (classes are monotone along z)
            const int products = eight ? 2 : 1;                  // this step's, per lane of fd
            if (want_dots && run + products > kSingleDotRun) {
                fd.add_to(lanes);
                fd2.add_to(lanes);
                run = 0;
            }
            run += products;
            if (eight) {
                v16f sums[4];
                site_sums_f<false, 2>(c, x0, sums);
                for (int k = 0; k < 4; ++k)
                    site_finish_f<false>(sums[k], x0 + 16 * k, y0 + 16 * k, 4 * site + 8 * k, *fc.scale, fc.uniform_d, pot, per_row,
                                     shift, beta_f, read_y, want_dots, k % 2 ? fd2 : fd);
                z += 8;
            } else if (z + 3 < zb && zcls[z + 3] == cz) {
                v16f sums[2];
                site_sums_f<false, 1>(c, x0, sums);
                site_finish_f<false>(sums[0], x0, y0, 4 * site, *fc.scale, fc.uniform_d, pot, per_row, shift, beta_f,
                                     read_y, want_dots, fd);
                site_finish_f<false>(sums[1], x0 + 16, y0 + 16, 4 * site + 8, *fc.scale, fc.uniform_d, pot, per_row,
                                     shift, beta_f, read_y, want_dots, fd2);
                z += 4;
            } else if (z + 1 < zb && zcls[z + 1] == cz) {
                v16f sums[1];
                site_sums_f<false, 0>(c, x0, sums);
                site_finish_f<false>(sums[0], x0, y0, 4 * site, *fc.scale, fc.uniform_d, pot, per_row, shift, beta_f,
                                     read_y, want_dots, fd);
                z += 2;
            } else {
                v16f sums[1];
                site_sums_f<true, 0>(c, x0, sums);
                site_finish_f<true>(sums[0], x0, y0, 4 * site, *fc.scale, fc.uniform_d, pot, per_row, shift, beta_f,
                                    read_y, want_dots, fd);
                z += 1;
            }
        }
        if (want_dots && run > 0) {
            fd.add_to(lanes);
            fd2.add_to(lanes);
        }
    }
}

template <class T, int R, int B, bool Real>
void CpuStencilOperator::sweep(const T* x, T* y, int runtime_r, const AugmentedOps& ops, DotSums* dots) const
{
    constexpr bool kSingle = std::is_same_v<T, float>;
    static_assert(kSingle || std::is_same_v<T, double>, "float or double");
    constexpr int kComplexBytes = 2 * static_cast<int>(sizeof(T));  // one vector entry
    constexpr int kPerLine = 64 / static_cast<int>(sizeof(T));      // T values per cache line
    constexpr int G = R > 0 ? group_size<T>(R) : 1;
    // Real couplings where a real-valued product exists; the other widths keep the complex
    // tables (imaginary parts 0: the same sums).
    constexpr bool kReal = Real && real_group_product<T, R, G>();
    constexpr int kPer = kReal ? 1 : 2;  // table values per entry
    const int rr = R > 0 ? R : runtime_r;
    const int nb = B > 0 ? B : nb_;
    const int nx = extent_[0], ny = extent_[1], nz = extent_[2];
    const int w = width_;
    const int num_terms = static_cast<int>(offsets_.size());
    const double scale = ops.scale, shift = ops.shift, beta = ops.beta;
    const bool want_dots = dots != nullptr;
    // AugmentedOps' accumulation (fuses_accumulation: the R >= 4 double epilogue only).
    double* const acc_out =
        ops.accumulate != nullptr && R >= 4 && !kSingle ? reinterpret_cast<double*>(ops.accumulate->data()) : nullptr;
    const double acc_co = ops.acc_old, acc_cx = ops.acc_x, acc_cn = ops.acc_new;
    const bool per_row = s_.potential_per_row();
    const double* pot = s_.potential.data();
    const bool periodic[3] = {periodic_[0], periodic_[1], periodic_[2]};

    // R = 1: the shifted-load form where the stencil has few distinct offsets (graphene),
    // else the permuted-load form of the fast tables where the lattice allows it (ti).
    constexpr int kShiftLanes = ShiftTable<T>::kLanes;
    const ShiftTable<T>* shift_t = nullptr;
    if constexpr (R == 1 && (B == 2 || B == 4))
        if (shift_form<T>().nd > 0) shift_t = &shift_form<T>();
    const bool uniform = uniform_potential_;
    // R = 1, B = 4: the site form for every site (ti; single: two sites per vector, the
    // float epilogue with the constants below).
    constexpr bool kSiteForm = kWindowForm && R == 1 && B == 4;
    const SiteForm<T>& sites = site_tables<T>();
    const bool site_form = kSiteForm && sites.ok;
    std::vector<std::ptrdiff_t> fast_cols;
    std::vector<T> fast_vals;
    if (shift_t == nullptr && !site_form) fast_tables<T>(G, kPer, fast_cols, fast_vals);
    constexpr int kWinLanes = WindowTable<T>::kLanes;
    constexpr bool kWindow = kWindowForm && R == 1 && G % kWinLanes == 0 && G / kWinLanes <= 2;
    WindowTable<T> win;
    if constexpr (kWindow)
        if (shift_t == nullptr && !site_form) win = window_table<T>(nb, w, G, kPer, fast_cols, fast_vals);
    const global_index num_rows_total = s_.num_rows();

    // Software prefetch (fast path): the rows D ahead in every distinct x stream and in y.
    // Only for R >= 16, where a row is >= 4 lines in double (at R <= 8 it measured neutral
    // to slower). Streams: the row itself and every neighbour offset at least one z-column away.
    std::vector<std::ptrdiff_t> streams;  // in T values, relative to x + 2 R r0
    if (rr >= 16) {
        std::vector<std::ptrdiff_t> rows_off{0};
        for (const std::ptrdiff_t dl : dlin_)
            if ((dl >= std::ptrdiff_t(nz) || dl <= -std::ptrdiff_t(nz)) &&
                std::find(rows_off.begin(), rows_off.end(), dl * nb) == rows_off.end())
                rows_off.push_back(dl * nb);
        const std::ptrdiff_t ahead = std::max<std::ptrdiff_t>(G, 4096 / (kComplexBytes * rr));  // 4 KiB ahead
        for (const std::ptrdiff_t o : rows_off) streams.push_back(2 * rr * (o + ahead));
    }
    const std::ptrdiff_t pf_ahead_y = streams.empty() ? 0 : streams[0];
    const int pf_lines = (G * rr * kComplexBytes + 63) / 64;
    const int num_streams = static_cast<int>(streams.size());

    // Single, R >= 2: the float epilogue (FloatRowEpilogue), scale and a uniform V - shift
    // dithered over the rows as in the R = 1 shifted-load form.
    constexpr bool kFloatRows = kSingle && (R == 2 || R == 4 || (R > 0 && R % 8 == 0));
    const kernels::cpu::DitheredFloat s_dither = kernels::cpu::dithered_float(scale);
    const kernels::cpu::DitheredFloat d_dither = kernels::cpu::dithered_float(pot[0] - shift);
    const float beta_f = static_cast<float>(beta);
    // Single, R = 1, the site form: the same dithers as complex lanes.
    std::optional<DitheredLanes> site_scale, site_d;
    SiteFloatConstants site_fc;
    if (kSingle && site_form) {
        site_fc.scale = &site_scale.emplace(scale);
        if (uniform) site_fc.uniform_d = &site_d.emplace(pot[0] - shift);
    }

    const int max_threads = omp_get_max_threads();
    const Tiling tiling = choose_tiling(rr, max_threads, kComplexBytes);
    const int ntx = (nx + tiling.tx - 1) / tiling.tx, nty = (ny + tiling.ty - 1) / tiling.ty,
              ntz = (nz + tiling.tz - 1) / tiling.tz;
    const long num_tiles = static_cast<long>(ntx) * nty * ntz;
    std::vector<double> partial(static_cast<size_t>(max_threads) * 3 * rr, 0.0);
    int team = 1;

#pragma omp parallel num_threads(max_threads)
    {
#pragma omp single
        team = omp_get_num_threads();
        constexpr int kDots = R > 0 ? R : 1;
        double xx_fixed[kDots] = {}, yr_fixed[kDots] = {}, yi_fixed[kDots] = {};
        std::vector<double> dyn(R > 0 ? 0 : 3 * static_cast<size_t>(rr), 0.0);
        double* const txx = R > 0 ? xx_fixed : dyn.data();
        double* const tyr = R > 0 ? yr_fixed : dyn.data() + rr;
        double* const tyi = R > 0 ? yi_fixed : dyn.data() + 2 * rr;
        // R >= 4: per double lane, sxx = x x, syx = y x, syxs = y swap(x) (re/im swapped);
        // <x|x> = sxx[2c] + sxx[2c+1], Re <y|x> = syx[2c] + syx[2c+1],
        // Im <y|x> = syxs[2c] - syxs[2c+1] (= Re y Im x - Im y Re x). No de-interleaving
        // shuffles in the row loop. (Single: the same double lanes, from the float values.)
        constexpr int kLanes = R >= 4 ? 2 * R : 8;
        alignas(64) double sxx[kLanes] = {}, syx[kLanes] = {}, syxs[kLanes] = {};

        alignas(64) T acc_fixed[R > 0 ? 2 * G * R : 1];
        std::vector<T> acc_dyn(R > 0 ? 0 : 2 * static_cast<size_t>(rr));
        T* const acc = R > 0 ? acc_fixed : acc_dyn.data();
        // Checked-group table and the neighbour sites of the site last seen.
        std::vector<std::ptrdiff_t> chk_cols(static_cast<size_t>(w) * G);
        std::vector<T> chk_vals(2 * chk_cols.size());
        std::vector<global_index> nbr(static_cast<size_t>(std::max(num_terms, 1)));

        // R = 1: the dots of whole groups as vector lanes (row_epilogue.hpp, DotLanes).
        kernels::cpu::DotLanes lanes;
        // Single, R >= 2: the rows' epilogue and dots in float (row_epilogue.hpp).
        std::conditional_t<kFloatRows, kernels::cpu::FloatRowEpilogue<kFloatRows ? R : 2>, char> float_rows{};

        // y rows [r0, r0 + count) from acc.
        auto finish = [&](global_index r0, int count) {
            if constexpr (R == 1 && G % 4 == 0) {
                if (count == G) {  // whole group: G / 4 vectors of 4 complex, potential per lane
                    using simd::v8d;
                    const v8d sv = v8d{} + scale;
#pragma GCC unroll 4
                    for (int v = 0; v < G / 4; ++v) {
                        const global_index row0 = r0 + 4 * v;
                        v8d dv;
                        if (per_row) {  // graphene: 4 contiguous values, each over its (re, im)
                            const simd::v4d p = simd::load<simd::v4d>(pot + row0);
                            dv = __builtin_shufflevector(p, p, 0, 0, 1, 1, 2, 2, 3, 3) - shift;
                        } else if (B == 4 && row0 % 4 == 0) {  // ti: the 4 rows of one site
                            dv = v8d{} + (pot[row0 / 4] - shift);
                        } else {
                            for (int l = 0; l < 4; ++l)
                                dv[2 * l] = dv[2 * l + 1] = pot[(row0 + l) / nb] - shift;
                        }
                        const std::ptrdiff_t o = 2 * (r0 + 4 * v);
                        kernels::cpu::finish_vector(acc + 8 * v, x + o, y + o, sv, dv, beta, want_dots, lanes);
                    }
                    return;
                }
            }
            for (int g = 0; g < count; ++g) {
                const global_index row = r0 + g;
                const double v = per_row ? pot[row] : pot[row / nb];
                const double dshift = v - shift;
                const T* __restrict xo = x + 2 * row * rr;
                T* __restrict yo = y + 2 * row * rr;
                const T* __restrict a = acc + 2 * g * rr;
                if constexpr (R >= 4 && !kSingle) {  // whole vectors of 4 complex, dots kept interleaved
                    using simd::v8d;
                    const v8d sv = v8d{} + scale, dv = v8d{} + dshift, bv = v8d{} + beta;
                    const v8d ko = v8d{} + acc_co, kx = v8d{} + acc_cx, kn = v8d{} + acc_cn;
#pragma GCC unroll 8
                    for (int v = 0; v < R / 4; ++v) {
                        const v8d xv = simd::load<v8d>(xo + 8 * v);
                        v8d yv = sv * (simd::load<v8d>(a + 8 * v) + dv * xv);
                        const v8d yold = beta != 0.0 ? simd::load<v8d>(yo + 8 * v) : v8d{};  // beta == 0: never read y
                        yv += bv * yold;
                        simd::store(yo + 8 * v, yv);
                        if (acc_out != nullptr) {  // acc += c_old y_old + c_x x + c_new y
                            T* ao = acc_out + 2 * row * rr + 8 * v;
                            simd::store(ao, simd::load<v8d>(ao) + ko * yold + kx * xv + kn * yv);
                        }
                        if (want_dots) {
                            const v8d xs = __builtin_shufflevector(xv, xv, 1, 0, 3, 2, 5, 4, 7, 6);
                            simd::store(sxx + 8 * v, simd::load<v8d>(sxx + 8 * v) + xv * xv);
                            simd::store(syx + 8 * v, simd::load<v8d>(syx + 8 * v) + yv * xv);
                            simd::store(syxs + 8 * v, simd::load<v8d>(syxs + 8 * v) + yv * xs);
                        }
                    }
                    continue;
                } else if constexpr (kFloatRows) {  // single, R >= 2: the float epilogue
                    const float d = uniform ? d_dither.at(row) : static_cast<float>(dshift);
                    float_rows.row(a, xo, yo, s_dither.at(row), d, beta_f, beta != 0.0, want_dots);
                    continue;
                } else {
                    // y = scale (acc + (V - shift) x) + beta y: the shared epilogue with shift - V
                    // (for floats: in double, rounded once; row_epilogue.hpp).
                    finish_row<R>(a, xo, yo, rr, scale, -dshift, beta, want_dots, txx, tyr, tyi);
                }
            }
        };

        // Interior rows [ra, re) of a z-column in the shifted-load form.
        auto shift_rows = [&](global_index ra, global_index re) {
            if constexpr (R == 1 && (B == 2 || B == 4)) {
                const ShiftTable<T>& st = *shift_t;
                switch (st.nd) {
#define TOPOKPM_SHIFT_CASE(n)                                                                                       \
    case n:                                                                                                         \
        return shift_run<T, Real, n, B>(st, x, y, ra, re, pot, per_row, uniform, scale, shift, beta, want_dots, \
                                        lanes);
                    TOPOKPM_SHIFT_CASE(1)
                    TOPOKPM_SHIFT_CASE(2)
                    TOPOKPM_SHIFT_CASE(3)
                    TOPOKPM_SHIFT_CASE(4)
                    TOPOKPM_SHIFT_CASE(5)
                    TOPOKPM_SHIFT_CASE(6)
#undef TOPOKPM_SHIFT_CASE
                default: break;
                }
            }
            (void)ra;
            (void)re;
        };

        // Rows [ra, re) of the z-column (cx, cy) with explicit neighbour checks.
        auto checked = [&](int cx, int cy, global_index col_site0, global_index ra, global_index re) {
            global_index last_site = -1;
            for (global_index r0 = ra; r0 < re; r0 += G) {
                const int count = static_cast<int>(std::min<global_index>(G, re - r0));
                for (int g = 0; g < G; ++g) {
                    if (g >= count) {  // past the end: a valid column, value 0, output dropped
                        for (int k = 0; k < w; ++k) {
                            chk_cols[static_cast<size_t>(k) * G + g] = 0;
                            chk_vals[kPer * (static_cast<size_t>(k) * G + g)] = T(0);
                            if constexpr (!kReal) chk_vals[2 * (static_cast<size_t>(k) * G + g) + 1] = T(0);
                        }
                        continue;
                    }
                    const global_index row = r0 + g;
                    const global_index site = row / nb;
                    const int o = static_cast<int>(row - site * nb);
                    if (site != last_site) {
                        last_site = site;
                        const int cz = static_cast<int>(site - col_site0);
                        for (int t = 0; t < num_terms; ++t) {
                            const auto& d = offsets_[t];
                            const int qx = neighbour_coord(cx + d[0], nx, periodic[0]);
                            const int qy = neighbour_coord(cy + d[1], ny, periodic[1]);
                            const int qz = neighbour_coord(cz + d[2], nz, periodic[2]);
                            nbr[t] = (qx < 0 || qy < 0 || qz < 0)
                                         ? -1
                                         : qz + global_index(nz) * (qy + global_index(ny) * qx);
                        }
                    }
                    const auto& ent = entries_[o];
                    const int len = static_cast<int>(ent.size());
                    for (int k = 0; k < w; ++k) {
                        const size_t i = static_cast<size_t>(k) * G + g;
                        std::ptrdiff_t col = g;  // padding / dropped: own row, value 0
                        T vr = T(0), vi = T(0);
                        if (k < len) {
                            const RowEntry& e = ent[k];
                            const global_index ns = e.term < 0 ? site : nbr[e.term];
                            if (ns >= 0) {
                                col = static_cast<std::ptrdiff_t>(global_index(nb) * ns + e.b - r0);
                                vr = static_cast<T>(e.v.real());
                                vi = static_cast<T>(e.v.imag());
                                (void)vi;
                            }
                        }
                        chk_cols[i] = col;
                        chk_vals[kPer * i] = vr;
                        if constexpr (!kReal) chk_vals[2 * i + 1] = vi;
                    }
                }
                group_product<T, R, G, kReal>(w, chk_vals.data(), chk_cols.data(), x + 2 * r0 * rr, acc, rr);
                finish(r0, count);
            }
        };

#pragma omp for schedule(static)
        for (long tile = 0; tile < num_tiles; ++tile) {
            const int jx = static_cast<int>(tile / (long(nty) * ntz));
            const int jy = static_cast<int>((tile / ntz) % nty);
            const int jz = static_cast<int>(tile % ntz);
            const int x0 = jx * tiling.tx, x1 = std::min(nx, x0 + tiling.tx);
            const int y0 = jy * tiling.ty, y1 = std::min(ny, y0 + tiling.ty);
            const int za = jz * tiling.tz, zb = std::min(nz, za + tiling.tz);
            for (int cx = x0; cx < x1; ++cx)
                for (int cy = y0; cy < y1; ++cy) {
                    const global_index col_site0 = global_index(nz) * (cy + global_index(ny) * cx);
                    const global_index ra = nb * (col_site0 + za), re = nb * (col_site0 + zb);
                    if constexpr (kSiteForm) {
                        if (site_form) {
                            site_column(sites, sites.cls[0][static_cast<size_t>(cx)],
                                        sites.cls[1][static_cast<size_t>(cy)], x, y, col_site0, za, zb, pot,
                                        per_row, scale, shift, beta, want_dots, lanes, site_fc);
                            continue;
                        }
                    }
                    if (shift_t != nullptr) {
                        // The whole vectors of interior sites shifted, the rest checked (also every
                        // column whose shifted reads would leave the vector: the lattice's ends).
                        const int iza = std::max(za, lo_[2]), izb = std::min(zb, hi_[2]);
                        global_index sa = re, se = re;
                        if (cx >= lo_[0] && cx < hi_[0] && cy >= lo_[1] && cy < hi_[1] && iza < izb) {
                            sa = nb * (col_site0 + iza);
                            se = sa + (nb * (col_site0 + izb) - sa) / kShiftLanes * kShiftLanes;
                        }
                        if (se > sa && sa + shift_t->lo >= 0 && se - kShiftLanes + shift_t->hi < num_rows_total) {
                            checked(cx, cy, col_site0, ra, sa);
                            shift_rows(sa, se);
                            checked(cx, cy, col_site0, se, re);
                        } else {
                            checked(cx, cy, col_site0, ra, re);
                        }
                        continue;
                    }
                    global_index fa = re, fe = re;  // fast rows [fa, fe)
                    const int iza = std::max(za, lo_[2]), izb = std::min(zb, hi_[2]);
                    if (cx >= lo_[0] && cx < hi_[0] && cy >= lo_[1] && cy < hi_[1] && iza < izb) {
                        fa = nb * (col_site0 + iza);
                        fe = fa + (nb * (col_site0 + izb) - fa) / G * G;
                    }
                    if (fa >= fe) fa = fe = re;  // no whole interior group: all checked
                    checked(cx, cy, col_site0, ra, std::min(fa, re));
                    for (global_index r0 = fa; r0 < fe; r0 += G) {
                        if (num_streams > 0) {
                            const T* xb = x + 2 * r0 * rr;
                            for (int st = 0; st < num_streams; ++st)
                                for (int l = 0; l < pf_lines; ++l)
                                    __builtin_prefetch(xb + streams[st] + kPerLine * l, 0, 3);
                            const T* yb = y + 2 * r0 * rr + pf_ahead_y;
                            for (int l = 0; l < pf_lines; ++l) __builtin_prefetch(yb + kPerLine * l, 1, 3);
                        }
                        const int phase = static_cast<int>(r0 % nb);
                        if constexpr (kWindow) {
                            if (win.ok[static_cast<size_t>(phase)] && r0 + win.lo >= 0 && r0 + win.hi < num_rows_total) {
                                window_product<T, kReal, G / kWinLanes>(win, phase, w, x + 2 * r0, acc);
                                finish(r0, G);
                                continue;
                            }
                        }
                        const size_t off = static_cast<size_t>(phase) * w * G;
                        group_product<T, R, G, kReal>(w, fast_vals.data() + kPer * off, fast_cols.data() + off,
                                                      x + 2 * r0 * rr, acc, rr);
                        finish(r0, G);
                    }
                    checked(cx, cy, col_site0, std::max(fe, ra), re);
                }
        }

        if constexpr (R == 1) kernels::cpu::add_dot_lanes<1>(lanes, txx, tyr, tyi);
        if constexpr (R >= 4)
            for (int j = 0; j < R; ++j) {
                txx[j] = sxx[2 * j] + sxx[2 * j + 1];
                tyr[j] = syx[2 * j] + syx[2 * j + 1];
                tyi[j] = syxs[2 * j] - syxs[2 * j + 1];
            }
        if constexpr (kFloatRows) float_rows.add_to(txx, tyr, tyi);
        store_thread_dots(partial, rr, txx, tyr, tyi);
    }
    if (want_dots) collect_dots(partial, team, rr, dots);
}

/// Rows [ra, re) one at a time with explicit neighbour checks, in double (the values rounded
/// to T first, as the tables are), dots into sums = {<x|x>, Re<y|x>, Im<y|x>}: the column ends
/// and wrapped columns of the two-step pass (a few rows per lattice line).
template <class T>
void CpuStencilOperator::checked_rows(const T* x, T* y, global_index ra, global_index re, const AugmentedOps& ops,
                                      bool want_dots, double* sums) const
{
    const int nb = nb_, nx = extent_[0], ny = extent_[1], nz = extent_[2];
    if (ra >= re) return;
    // The site and its coordinates are stepped along with the row: the divisions that find
    // them cost more than the row's arithmetic (a line's end is a few rows per call).
    global_index site = ra / nb;
    int o = static_cast<int>(ra - site * nb);
    int cz = static_cast<int>(site % nz), cy = static_cast<int>((site / nz) % ny),
        cx = static_cast<int>(site / (global_index(nz) * ny));
    for (global_index row = ra; row < re; ++row) {
        if (row > ra && ++o == nb) {
            o = 0;
            ++site;
            if (++cz == nz) {
                cz = 0;
                if (++cy == ny) {
                    cy = 0;
                    ++cx;
                }
            }
        }
        double ar = 0.0, ai = 0.0;
        for (const RowEntry& e : entries_[static_cast<size_t>(o)]) {
            global_index ns = site;
            if (e.term >= 0) {
                const auto& d = offsets_[static_cast<size_t>(e.term)];
                const int qx = neighbour_coord(cx + d[0], nx, periodic_[0]);
                const int qy = neighbour_coord(cy + d[1], ny, periodic_[1]);
                const int qz = neighbour_coord(cz + d[2], nz, periodic_[2]);
                if (qx < 0 || qy < 0 || qz < 0) continue;
                ns = qz + global_index(nz) * (qy + global_index(ny) * qx);
            }
            const global_index c = global_index(nb) * ns + e.b;
            const double vr = static_cast<double>(static_cast<T>(e.v.real()));
            const double vi = static_cast<double>(static_cast<T>(e.v.imag()));
            const double xr = static_cast<double>(x[2 * c]), xi = static_cast<double>(x[2 * c + 1]);
            ar += vr * xr - vi * xi;
            ai += vr * xi + vi * xr;
        }
        finish_checked_row(x, y, row, ar, ai, ops, want_dots, sums);
    }
}

/// Row `row` of y from its hopping sum (ar, ai), dots into sums (checked_rows, end_rows).
template <class T>
void CpuStencilOperator::finish_checked_row(const T* x, T* y, global_index row, double ar, double ai,
                                            const AugmentedOps& ops, bool want_dots, double* sums) const
{
    {
        const double* pot = s_.potential.data();
        // A uniform potential is not read per row: a line's end rows are 16 KiB apart and
        // would miss the cache on every line (graphene's potential is stored per row).
        const double dv = (uniform_potential_           ? pot[0]
                           : s_.potential_per_row() ? pot[row]
                                                    : pot[row / nb_]) -
                          ops.shift;
        const double xr = static_cast<double>(x[2 * row]), xi = static_cast<double>(x[2 * row + 1]);
        double yr = ops.scale * (ar + dv * xr), yi = ops.scale * (ai + dv * xi);
        if (ops.beta != 0.0) {  // beta == 0: y is never read
            yr += ops.beta * static_cast<double>(y[2 * row]);
            yi += ops.beta * static_cast<double>(y[2 * row + 1]);
        }
        y[2 * row] = static_cast<T>(yr);
        y[2 * row + 1] = static_cast<T>(yi);
        if (want_dots) {  // from the stored y
            const double sr = static_cast<double>(y[2 * row]), si = static_cast<double>(y[2 * row + 1]);
            sums[0] += xr * xr + xi * xi;
            sums[1] += sr * xr + si * xi;
            sums[2] += sr * xi - si * xr;
        }
    }
}

/// The LineEnds table of st's run bounds (step_lines: sa, se), from the line cy = lo_[1].
template <class T>
void CpuStencilOperator::line_ends(LineEnds& t, const ShiftTable<T>& st) const
{
    t = LineEnds{};
    const int nb = nb_, ny = extent_[1], nz = extent_[2];
    constexpr int L = ShiftTable<T>::kLanes;
    if (st.nd == 0 || extent_[0] != 1 || !(0 >= lo_[0] && 0 < hi_[0]) || lo_[1] >= hi_[1] || lo_[2] >= hi_[2]) return;
    const int cy = lo_[1];
    const global_index ra = global_index(nb) * nz * cy;
    const int line = nb * nz, head = nb * lo_[2];
    const int tail = head + (nb * (hi_[2] - lo_[2])) / L * L;
    t.first.push_back(0);
    auto add_row = [&](int q) {
        const int cz = q / nb, o = q % nb;
        for (const RowEntry& e : entries_[static_cast<size_t>(o)]) {
            global_index ns = global_index(nz) * cy + cz;
            if (e.term >= 0) {
                const auto& d = offsets_[static_cast<size_t>(e.term)];
                const int qx = neighbour_coord(d[0], 1, periodic_[0]);
                const int qy = neighbour_coord(cy + d[1], ny, periodic_[1]);
                const int qz = neighbour_coord(cz + d[2], nz, periodic_[2]);
                if (qx < 0 || qy < 0 || qz < 0) continue;
                ns = qz + global_index(nz) * (qy + global_index(ny) * qx);
            }
            t.col.push_back(static_cast<std::ptrdiff_t>(global_index(nb) * ns + e.b - ra));
            t.vr.push_back(static_cast<double>(static_cast<T>(e.v.real())));
            t.vi.push_back(static_cast<double>(static_cast<T>(e.v.imag())));
        }
        t.first.push_back(static_cast<int>(t.col.size()));
    };
    for (int q = 0; q < head; ++q) add_row(q);
    for (int q = tail; q < line; ++q) add_row(q);
    t.head = head;
    t.tail = tail;
    t.line = line;
}

/// End rows i0 .. i1 - 1 of the LineEnds table (row ra + i for i < head, ra + tail + i -
/// head after) of the interior line starting at row ra: checked_rows' arithmetic.
template <class T>
void CpuStencilOperator::end_rows(const LineEnds& t, int i0, int i1, const T* x, T* y, global_index ra,
                                  const AugmentedOps& ops, bool want_dots, double* sums) const
{
    const T* xl = x + 2 * ra;
    for (int i = i0; i < i1; ++i) {
        double ar = 0.0, ai = 0.0;
        for (int k = t.first[static_cast<size_t>(i)]; k < t.first[static_cast<size_t>(i) + 1]; ++k) {
            const std::ptrdiff_t c = t.col[static_cast<size_t>(k)];
            const double vr = t.vr[static_cast<size_t>(k)], vi = t.vi[static_cast<size_t>(k)];
            const double xr = static_cast<double>(xl[2 * c]), xi = static_cast<double>(xl[2 * c + 1]);
            ar += vr * xr - vi * xi;
            ai += vr * xi + vi * xr;
        }
        const global_index row = ra + (i < t.head ? i : t.tail + (i - t.head));
        finish_checked_row(x, y, row, ar, ai, ops, want_dots, sums);
    }
}

/// One step y := scale (H - shift) x + beta y on the lattice lines (relabelled columns, cx = 0)
/// [c0, c1): the interior of each line in the shifted-load form (shift_run), its ends and the
/// lines the shifted reads would wrap wrongly in checked_rows.
template <class T, int B, bool Real>
void CpuStencilOperator::step_lines(const T* x, T* y, int c0, int c1, const AugmentedOps& ops, bool want_dots,
                                    kernels::cpu::DotLanes& lanes, double* sums) const
{
    const ShiftTable<T>& st = shift_form<T>();
    constexpr int L = ShiftTable<T>::kLanes;
    const int nz = extent_[2];
    const global_index n = s_.num_rows();
    const bool per_row = s_.potential_per_row();
    const double* pot = s_.potential.data();
    for (int cy = c0; cy < c1; ++cy) {
        const global_index col_site0 = global_index(nz) * cy;
        const global_index ra = global_index(B) * col_site0, re = global_index(B) * (col_site0 + nz);
        global_index sa = re, se = re;
        if (0 >= lo_[0] && 0 < hi_[0] && cy >= lo_[1] && cy < hi_[1] && lo_[2] < hi_[2]) {
            sa = global_index(B) * (col_site0 + lo_[2]);
            se = sa + (global_index(B) * (col_site0 + hi_[2]) - sa) / L * L;
        }
        if (!(se > sa && sa + st.lo >= 0 && se - L + st.hi < n)) {
            checked_rows(x, y, ra, re, ops, want_dots, sums);
            continue;
        }
        const LineEnds& ends = std::is_same_v<T, double> ? line_ends_double_ : line_ends_single_;
        const bool table = ends.line == B * nz && sa - ra == ends.head && se - ra == ends.tail;
        if (table) end_rows(ends, 0, ends.head, x, y, ra, ops, want_dots, sums);
        else checked_rows(x, y, ra, sa, ops, want_dots, sums);
        switch (st.nd) {
#define TOPOKPM_TWO_STEP_CASE(k)                                                                                  \
    case k:                                                                                                       \
        shift_run<T, Real, k, B>(st, x, y, sa, se, pot, per_row, uniform_potential_, ops.scale, ops.shift, ops.beta, \
                                 want_dots, lanes);                                                               \
        break;
            TOPOKPM_TWO_STEP_CASE(1)
            TOPOKPM_TWO_STEP_CASE(2)
            TOPOKPM_TWO_STEP_CASE(3)
            TOPOKPM_TWO_STEP_CASE(4)
            TOPOKPM_TWO_STEP_CASE(5)
            TOPOKPM_TWO_STEP_CASE(6)
#undef TOPOKPM_TWO_STEP_CASE
        default: TOPOKPM_REQUIRE(false, "shifted-load form with ", st.nd, " offsets");
        }
        if (table) end_rows(ends, ends.head, ends.head + ends.line - ends.tail, x, y, ra, ops, want_dots, sums);
        else checked_rows(x, y, se, re, ops, want_dots, sums);
    }
}

/// Two steps in one pass over memory: A: y := s (H - shift) x + beta y, then B: x := s (H -
/// shift) y + beta x. The lattice lines are cut into n blocks of at least `reach` lines (the
/// largest line offset of a term), so a row's neighbours lie in its own or an adjacent block
/// (block 0 and n - 1 are adjacent on a periodic lattice). Each thread takes a contiguous
/// range [b0, b1) and runs a wavefront with a lag of one block: A on b, then B on b - 1, which
/// needs the A results of b - 2 .. b (all its own) and overwrites x on b - 1, which no A step
/// still to come reads (A on b + 1 reads b .. b + 2). B on b0 (it needs A on the previous
/// thread's last block) and on b1 - 1 (its x is read by A on the next thread's first block) wait
/// for a barrier; so do the periodic wrap's blocks 0 and n - 1, which are such ends. While A
/// on b runs, x of b - 1 .. b + 1 and y of b - 2 .. b are still in cache for B on b - 1: each
/// vector entry is loaded from memory once per two steps. Dots per step and thread, summed in
/// thread order.
template <class T, int B, bool Real>
void CpuStencilOperator::two_steps(T* x, T* y, const AugmentedOps& ops, DotSums* first, DotSums* second) const
{
    // Lines per block: about kTBlockBytes of one vector, so that the ~7 blocks of x and y the
    // wavefront touches at once stay in one core's L2 (graphene 2048^2: one line of 64 KiB was
    // the fastest of 1 .. 16 lines; docs/performance.md, issue 13 fifth part).
    constexpr double kTBlockBytes = 64.0 * 1024;
    const int ncols = extent_[1];
    int reach = 1;
    for (const auto& d : offsets_) reach = std::max(reach, std::abs(d[1]));
    const double line_bytes = 2.0 * sizeof(T) * B * extent_[2];
    int lines = tuning_.tblock_lines;
    if (lines <= 0) lines = static_cast<int>(std::max(1.0, kTBlockBytes / line_bytes));
    lines = std::max(lines, reach);
    const int nblocks = std::max(1, ncols / lines);
    auto line_of = [&](int b) { return static_cast<int>(static_cast<long long>(ncols) * b / nblocks); };
    const bool want_dots = first != nullptr;
    const int max_threads = omp_get_max_threads();
    std::vector<double> part_a(static_cast<size_t>(max_threads) * 3, 0.0), part_b(part_a.size(), 0.0);
    int team = 1;
#pragma omp parallel num_threads(max_threads)
    {
#pragma omp single
        team = omp_get_num_threads();
        const int t = omp_get_thread_num(), p = omp_get_num_threads();
        const int b0 = static_cast<int>(static_cast<long long>(nblocks) * t / p);
        const int b1 = static_cast<int>(static_cast<long long>(nblocks) * (t + 1) / p);
        kernels::cpu::DotLanes lanes_a, lanes_b;
        double sums_a[3] = {}, sums_b[3] = {};
        auto step_a = [&](int b) {
            step_lines<T, B, Real>(x, y, line_of(b), line_of(b + 1), ops, want_dots, lanes_a, sums_a);
        };
        auto step_b = [&](int b) {
            step_lines<T, B, Real>(y, x, line_of(b), line_of(b + 1), ops, want_dots, lanes_b, sums_b);
        };
        for (int b = b0; b < b1; ++b) {
            step_a(b);
            if (b >= b0 + 2) step_b(b - 1);
        }
#pragma omp barrier
        if (b1 > b0) step_b(b0);
        if (b1 - 1 > b0) step_b(b1 - 1);
        if (want_dots) {
            kernels::cpu::add_dot_lanes<1>(lanes_a, sums_a, sums_a + 1, sums_a + 2);
            kernels::cpu::add_dot_lanes<1>(lanes_b, sums_b, sums_b + 1, sums_b + 2);
            store_thread_dots(part_a, 1, sums_a, sums_a + 1, sums_a + 2);
            store_thread_dots(part_b, 1, sums_b, sums_b + 1, sums_b + 2);
        }
    }
    if (want_dots) {
        collect_dots(part_a, team, 1, first);
        collect_dots(part_b, team, 1, second);
    }
}

}  // namespace

std::unique_ptr<Operator> make_cpu_stencil_operator(BlockStencil stencil)
{
    return make_cpu_stencil_operator(std::move(stencil), Precision::Double, StencilTuning{});
}

std::unique_ptr<Operator> make_cpu_stencil_operator(BlockStencil stencil, Precision precision,
                                                    const StencilTuning& tuning)
{
    return make_cpu_stencil_operator(std::make_shared<const BlockStencil>(std::move(stencil)), precision, tuning);
}

std::unique_ptr<Operator> make_cpu_stencil_operator(std::shared_ptr<const BlockStencil> stencil, Precision precision,
                                                    const StencilTuning& tuning)
{
    return std::make_unique<CpuStencilOperator>(std::move(stencil), precision, tuning);
}

}  // namespace topokpm::numerics
