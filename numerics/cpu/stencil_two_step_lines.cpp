// Two steps per pass over memory at R = 1 on 2-D lattices (graphene): the shifted-load run of
// each lattice line, its end rows from a table, and the wavefront over blocks of lines
// (two_steps()); at R > 1 the strip form of stencil_two_step_wide.cpp. The design:
// stencil_operator.hpp.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "numerics/cpu/row_epilogue.hpp"
#include "numerics/cpu/stencil_operator.hpp"
#include "numerics/cpu/stencil_shift_form.hpp"
#include "numerics/cpu/stencil_two_step_wide.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics::kernels::cpu::stencil {

void CpuStencilOperator::do_apply_two_steps(BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* first,
                                            DotSums* second) const
{
    if (precision_ == Precision::Single) {  // double blocks on a single operator: two rounded sweeps
        apply_in_single(x, y, ops, first);
        apply_in_single(y, x, ops, second);
        return;
    }
    two_steps_run(reinterpret_cast<double*>(x.data()), reinterpret_cast<double*>(y.data()), x.num_cols(), ops, first,
                  second);
}

void CpuStencilOperator::do_apply_two_steps(BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                                            const AugmentedOps& ops, DotSums* first, DotSums* second) const
{
    if (precision_ != Precision::Single) return Operator::do_apply(x, y, ops, first);  // throws
    two_steps_run(reinterpret_cast<float*>(x.data()), reinterpret_cast<float*>(y.data()), x.num_cols(), ops, first,
                  second);
}

/// Two steps on blocks of width r in T's precision: the x-plane wavefront on a 3-D lattice,
/// the strip form at r > 1, else the R = 1 form for the site's orbital count.
template <class T>
void CpuStencilOperator::two_steps_run(T* x, T* y, int r, const AugmentedOps& ops, DotSums* first, DotSums* second) const
{
    if (planes_offered(r)) return two_steps_planes_run(x, y, r, ops, first, second);
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

template void CpuStencilOperator::line_ends(LineEnds& t, const ShiftTable<double>& st) const;
template void CpuStencilOperator::line_ends(LineEnds& t, const ShiftTable<float>& st) const;

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

}  // namespace topokpm::numerics::kernels::cpu::stencil
