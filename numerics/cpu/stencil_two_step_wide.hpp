#pragma once
/// @file stencil_two_step_wide.hpp
/// Two KPM steps per pass over memory (temporal blocking) for the CPU matrix-free stencil at
/// block widths R > 1 on a 2-D lattice (graphene), the kernel behind the CPU stencil
/// operator's apply_two_steps() for those widths (numerics/cpu/stencil_kernels.cpp owns the
/// R = 1 form and decides through fused_steps(R) which one runs):
///     A:  y := scale (H - shift) x + beta y      dots of A: <x|x>, <y|x> (new y)
///     B:  x := scale (H - shift) y + beta x      dots of B: <y|y>, <x|y> (new x)
/// equal to two apply() calls to rounding (rows are summed in another order than the
/// one-step kernel's; dots per thread and step, then in thread order).
///
/// Layout: the lattice is `lines` lines of `sites` consecutive sites of B rows each (the
/// relabelled axes of stencil_kernels.cpp: line = the middle coordinate, site = the fastest);
/// a block is row-major, R complex values per row (complex double, or complex float for
/// --precision single: interleaved re, im). A row's entries reach the adjacent lines only
/// (|dline| <= 1) and sites up to `site_reach` away in its line.
///
/// Float: each row within the float epilogue's bound (cpu_stencil_single_test.cpp): the
/// couplings times scale and a uniform scale (V - shift) dithered over the sites
/// (row_epilogue.hpp's DitheredFloat), a per-row one rounded to the nearest float, the sums
/// in float, beta y added last; the dots in float runs of at most kSingleDotRun rows per
/// lane, then in double.
///
/// Why strips: at R = 16 one line of a 2048-site graphene lattice is 1 MiB per block, so the
/// R = 1 form's wavefront over whole lines (about eight lines of x and y live at once) would
/// hold 8 MiB per thread. Each line is cut into strips of `strip_sites` sites; every
/// thread sweeps its contiguous range of lines once per strip with a lag of one line (A on
/// line l, then B on line l - 1) and B's site range shifted back by site_reach, so that what B
/// reads of A's results (lines l - 2 .. l, sites of this strip and the previous ones) is
/// complete and nothing that a later A reads of x is overwritten. The periodic wrap along the
/// sites (B's first site_reach sites) and B on each thread's first and last line (they need
/// the neighbour thread's A) wait until the end, the latter for one barrier. The live set is
/// about eight strips of one line (x of l - 2 .. l + 1, y of l - 2 .. l): 8 strip_sites B R 16
/// bytes in double (8 in float), about 512 KiB per thread at the default strip of 64 KiB of
/// one vector:
/// the wavefront's reuse stays in the 1 MiB L2 (strips of 256 KiB, a 2 MiB live set served
/// by the L3, measured slower; docs/performance.md, "branch s27-r16").

#include <vector>

#include "numerics/base/operator.hpp"

namespace topokpm::numerics::kernels::cpu {

/// A 2-D stencil in the layout above. Entries with |dline| > 1 are not allowed.
struct WideStencil2D {
    struct Entry {
        int dline = 0;  ///< -1, 0 or +1
        int dsite = 0;  ///< neighbour site - site along the line
        int b = 0;      ///< column orbital
        double re = 0.0, im = 0.0;
    };
    int lines = 1, sites = 1, orbitals = 1;
    bool periodic_lines = false, periodic_sites = false;
    int site_reach = 0;                     ///< max |dsite| over the entries
    bool real = false;                      ///< every entry real
    std::vector<std::vector<Entry>> rows;   ///< per row orbital o: its entries (on-site block: dline = dsite = 0)
    const double* potential = nullptr;      ///< per site (line sites + site), or per row when per_row
    bool per_row = false;
    bool uniform_potential = false;         ///< every potential value is potential[0] (not read per row)
};

/// True where the stencil operator offers two steps per pass at width r (fused_steps(r) = 2):
/// R = 2, 4, 8, 16 and 32 in both precisions, where the strip form was measured faster than
/// the one-step stencil and than real-valued SELL (docs/performance.md, "Issue 13, sixth
/// part"; R = 8 since "branch s27-r16"; R = 2 and single precision since "branch s28-fstrip").
bool two_steps_wide_offered(int r);

/// Sites per strip for block width r and value bytes per complex entry: about 64 KiB of one
/// vector per strip of one line (the L2-sized live set above), at least site_reach + 1;
/// `requested` >= 1 (StencilTuning::tblock_strip_sites) overrides it.
int two_steps_wide_strip(const WideStencil2D& s, int r, int complex_bytes, int requested);

/// Steps A and B above on blocks x, y of width r (T = double: complex double, T = float:
/// complex float; interleaved re, im; two_steps_wide_offered(r)), strips of
/// strip_sites >= 1 sites. first / second: the dots of A and B, or nullptr (no dots).
/// Instantiated for double and float.
template <class T>
void two_steps_wide(const WideStencil2D& s, T* x, T* y, int r, const AugmentedOps& ops, DotSums* first,
                    DotSums* second, int strip_sites);

}  // namespace topokpm::numerics::kernels::cpu
