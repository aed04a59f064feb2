// The naive KPM building blocks of seed 004, Fig. 3: a plain SpMV per column followed by
// separate BLAS-1 style sweeps. Several passes over the vectors instead of one: the
// baseline the fused kernel is measured against, and an independent oracle in tests.
#include <vector>

#include "numerics/spmmv/sell_kernels.hpp"

namespace topokpm::numerics::kernels::reference {

void sell_spmmv(const SellMatrix& a, const complex_type* x, complex_type* y, int num_cols,
                const AugmentedOps& ops, DotSums* dots)
{
    const local_index n = a.num_rows();
    const int c = a.chunk_height();
    const local_index num_chunks = a.num_chunks();
    const int r = num_cols;
    std::vector<complex_type> u(n), xc(n), yc(n);
    if (dots) dots->reset(r);
    for (int col = 0; col < r; ++col) {
        // gather column `col` (the naive code works on one vector at a time)
#pragma omp parallel for schedule(static)
        for (local_index i = 0; i < n; ++i) xc[i] = x[static_cast<std::int64_t>(i) * r + col];
        // spmv(): u = A x
#pragma omp parallel for schedule(static)
        for (local_index ch = 0; ch < num_chunks; ++ch)
            for (int s = 0; s < c; ++s) {
                const local_index row = a.row_of_slot()[static_cast<size_t>(ch) * c + s];
                if (row < 0) continue;
                complex_type acc = 0.0;
                for (local_index k = 0; k < a.chunk_length()[ch]; ++k) {
                    const std::int64_t idx = a.chunk_start()[ch] + static_cast<std::int64_t>(k) * c + s;
                    acc += a.values()[idx] * xc[a.columns()[idx]];
                }
                u[row] = acc;
            }
        // axpy(): u = u - shift x ; scal(): u = scale u
#pragma omp parallel for schedule(static)
        for (local_index i = 0; i < n; ++i) u[i] -= ops.shift * xc[i];
#pragma omp parallel for schedule(static)
        for (local_index i = 0; i < n; ++i) u[i] *= ops.scale;
        // axpby(): y = u + beta y
#pragma omp parallel for schedule(static)
        for (local_index i = 0; i < n; ++i) {
            const std::int64_t idx = static_cast<std::int64_t>(i) * r + col;
            yc[i] = ops.beta == 0.0 ? u[i] : u[i] + ops.beta * y[idx];
            y[idx] = yc[i];
        }
        if (!dots) continue;
        // dot(): <x|x> and <y|x>
        double xx = 0.0;
#pragma omp parallel for reduction(+ : xx) schedule(static)
        for (local_index i = 0; i < n; ++i) xx += std::norm(xc[i]);
        double yx_re = 0.0, yx_im = 0.0;
#pragma omp parallel for reduction(+ : yx_re, yx_im) schedule(static)
        for (local_index i = 0; i < n; ++i) {
            const complex_type p = std::conj(yc[i]) * xc[i];
            yx_re += p.real();
            yx_im += p.imag();
        }
        dots->xx[col] = xx;
        dots->yx[col] = complex_type(yx_re, yx_im);
    }
}

}  // namespace topokpm::numerics::kernels::reference
