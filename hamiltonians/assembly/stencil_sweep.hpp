#pragma once
/// @file stencil_sweep.hpp
/// The arithmetic shared by the matrix-free operators of both models: one augmented
/// sweep y := scale * (H - shift) * x + beta * y (operator.hpp) whose rows are produced
/// on the fly by a model's stencil instead of being read from a stored matrix.
///
/// Rows come in groups of `RowsPerSite` consecutive rows (the orbitals of one ti site, the
/// two atoms of one graphene cell). For every group the stencil writes the stored entries
/// of its rows, columns ascending exactly as Model::row() gives them, and this file
/// multiplies them with the R columns of the row-major block x (x(i, c) = data[i*R + c]).
/// Each row's products are summed in that column order and then updated as
/// scale * (acc - shift * x) + beta * y, so the result is bitwise that of a stored sweep
/// doing the same in row() order (hamiltonians/ is compiled without FMA contraction) and
/// equal to any other stored sweep to rounding. Sites are split statically over the
/// OpenMP threads: with x the slowest index, each thread owns contiguous x-slabs.

#include <omp.h>

#include <array>
#include <vector>

#include "numerics/base/block_vector.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/base/types.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::hamiltonians::detail {

/// Stored entries of one group of rows, as written by a stencil.
template <int RowsPerSite, int MaxRowLength>
struct SiteRows {
    std::array<int, RowsPerSite> length{};                                  ///< entries per row
    std::array<std::array<global_index, MaxRowLength>, RowsPerSite> cols{};  ///< ascending
    std::array<std::array<complex_type, MaxRowLength>, RowsPerSite> vals{};
};

/// acc[0 .. 2R) := sum_k vals[k] * x(cols[k], :) as interleaved (re, im) doubles, summed in
/// the order of the entries. std::complex multiplication is written out so the compiler
/// neither inserts the C99 NaN-recovery call nor loses the restrict information that lets
/// it vectorise over the R columns; the formula (re = vr xr - vi xi, im = vr xi + vi xr) is
/// the same.
template <int Width>
inline void row_times_block(int len, const global_index* cols, const complex_type* vals,
                            const double* __restrict x, double* __restrict acc, int num_cols)
{
    const int width = Width > 0 ? Width : num_cols;
    for (int c = 0; c < 2 * width; ++c) acc[c] = 0.0;
    for (int k = 0; k < len; ++k) {
        const double vr = vals[k].real(), vi = vals[k].imag();
        const double* __restrict xj = x + 2 * cols[k] * width;
        for (int c = 0; c < width; ++c) {
            acc[2 * c] += vr * xj[2 * c] - vi * xj[2 * c + 1];
            acc[2 * c + 1] += vr * xj[2 * c + 1] + vi * xj[2 * c];
        }
    }
}

/// One sweep with block width R = `Width` (compile time) or x.num_cols() (Width = 0).
/// `fill(site, rows)` must write the entries of rows [site*RowsPerSite, (site+1)*RowsPerSite).
template <int Width, int RowsPerSite, int MaxRowLength, class Fill>
void stencil_sweep(global_index num_sites, const Fill& fill, const BlockVector& x, BlockVector& y,
                   const AugmentedOps& ops, DotSums* dots)
{
    const int num_cols = x.num_cols();
    const int width = Width > 0 ? Width : num_cols;
    // Array-oriented access to std::complex (interleaved re, im) is guaranteed by the standard.
    const double* xp = reinterpret_cast<const double*>(x.data());
    double* yp = reinterpret_cast<double*>(y.data());
    const double scale = ops.scale, shift = ops.shift, beta = ops.beta;
    const bool want_dots = ops.want_dots;

    // Dots are reduced per thread, then summed in thread order after the sweep.
    const int max_threads = omp_get_max_threads();
    std::vector<double> part_xx(want_dots ? static_cast<size_t>(max_threads) * width : 0, 0.0);
    std::vector<complex_type> part_yx(part_xx.size(), complex_type(0.0, 0.0));
    int used_threads = 1;

#pragma omp parallel
    {
        const int tid = omp_get_thread_num();
#pragma omp single
        used_threads = omp_get_num_threads();

        std::vector<double> acc(2 * static_cast<size_t>(width));
        std::vector<double> my_xx(want_dots ? width : 0, 0.0);
        std::vector<double> my_yx(want_dots ? 2 * static_cast<size_t>(width) : 0, 0.0);
        SiteRows<RowsPerSite, MaxRowLength> rows;

#pragma omp for schedule(static)
        for (global_index site = 0; site < num_sites; ++site) {
            fill(site, rows);
            for (int r = 0; r < RowsPerSite; ++r) {
                const global_index i = site * RowsPerSite + r;
                row_times_block<Width>(rows.length[r], rows.cols[r].data(), rows.vals[r].data(), xp, acc.data(),
                                       width);
                const double* __restrict xi = xp + 2 * i * width;
                double* __restrict yi = yp + 2 * i * width;
                for (int c = 0; c < width; ++c) {
                    const double xr = xi[2 * c], xim = xi[2 * c + 1];
                    double yr = scale * (acc[2 * c] - shift * xr);
                    double yim = scale * (acc[2 * c + 1] - shift * xim);
                    // beta == 0: y may hold garbage (even NaN); never read it.
                    if (beta != 0.0) {
                        yr += beta * yi[2 * c];
                        yim += beta * yi[2 * c + 1];
                    }
                    yi[2 * c] = yr;
                    yi[2 * c + 1] = yim;
                    if (want_dots) {
                        my_xx[c] += xr * xr + xim * xim;
                        my_yx[2 * c] += yr * xr + yim * xim;   // Re conj(y) x
                        my_yx[2 * c + 1] += yr * xim - yim * xr;  // Im conj(y) x
                    }
                }
            }
        }
        if (want_dots) {
            for (int c = 0; c < width; ++c) {
                part_xx[static_cast<size_t>(tid) * width + c] = my_xx[c];
                part_yx[static_cast<size_t>(tid) * width + c] = complex_type(my_yx[2 * c], my_yx[2 * c + 1]);
            }
        }
    }

    if (want_dots) {
        dots->reset(num_cols);
        for (int t = 0; t < used_threads; ++t)
            for (int c = 0; c < width; ++c) {
                dots->xx[c] += part_xx[static_cast<size_t>(t) * width + c];
                dots->yx[c] += part_yx[static_cast<size_t>(t) * width + c];
            }
    }
}

/// Checks the operands and dispatches to the instance for the block width R: compile-time
/// instances for R in {1, 2, 4, 8, 16, 32}, the runtime-width loop otherwise.
template <int RowsPerSite, int MaxRowLength, class Fill>
void stencil_apply(global_index num_sites, const Fill& fill, const BlockVector& x, BlockVector& y,
                   const AugmentedOps& ops, DotSums* dots)
{
    const global_index n = num_sites * RowsPerSite;
    TOPOKPM_REQUIRE(x.num_rows() == n && y.num_rows() == n, "matrix-free apply: operator has ", n,
                    " rows, x has ", x.num_rows(), ", y has ", y.num_rows());
    TOPOKPM_REQUIRE(x.num_cols() >= 1 && x.num_cols() == y.num_cols(),
                    "matrix-free apply: x has ", x.num_cols(), " columns, y has ", y.num_cols());
    TOPOKPM_REQUIRE(&x != &y && x.data() != y.data(), "matrix-free apply: x and y must not alias");
    TOPOKPM_REQUIRE(!ops.want_dots || dots != nullptr, "matrix-free apply: want_dots without DotSums");
    switch (x.num_cols()) {
    case 1: stencil_sweep<1, RowsPerSite, MaxRowLength>(num_sites, fill, x, y, ops, dots); break;
    case 2: stencil_sweep<2, RowsPerSite, MaxRowLength>(num_sites, fill, x, y, ops, dots); break;
    case 4: stencil_sweep<4, RowsPerSite, MaxRowLength>(num_sites, fill, x, y, ops, dots); break;
    case 8: stencil_sweep<8, RowsPerSite, MaxRowLength>(num_sites, fill, x, y, ops, dots); break;
    case 16: stencil_sweep<16, RowsPerSite, MaxRowLength>(num_sites, fill, x, y, ops, dots); break;
    case 32: stencil_sweep<32, RowsPerSite, MaxRowLength>(num_sites, fill, x, y, ops, dots); break;
    default: stencil_sweep<0, RowsPerSite, MaxRowLength>(num_sites, fill, x, y, ops, dots); break;
    }
}

}  // namespace topokpm::hamiltonians::detail
