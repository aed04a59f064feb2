#include "numerics/dense/cholesky.hpp"

#include "numerics/dense/dense_kernels.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::numerics::dense {

using tasks::Access;
using tasks::TaskContext;

double cholesky_flops(double n)
{
    // LAWN 41: multiplies n^3/6 + n^2/2 + n/3, adds n^3/6 - n/6; complex: 6 M + 2 A.
    const double mults = n * n * n / 6 + n * n / 2 + n / 3;
    const double adds = n * n * n / 6 - n / 6;
    return 6 * mults + 2 * adds;
}

template <class T>
DenseReport cholesky(TileMatrix<T>& a, const DenseExecution& execution)
{
    TOPOKPM_USER_REQUIRE(a.rows() == a.cols(), "Cholesky needs a square matrix, got ", a.rows(), " x ", a.cols());
    const std::vector<ColumnStep> steps = column_steps(a);
    const double start = wall_seconds();
    auto runtime = make_runtime(execution);
    register_tiles(*runtime, a, 0, execution);
    const int nt = a.nt();
    auto id = [](int i, int j) { return tile_id(0, i, j); };
    // Every body takes its kernels from the executing device's table (CPU or CUDA). The
    // updates carry their real flops (complex: 8 per multiply-add) for the runtime's cost
    // model (execution.rates): movable; POTF2' stays with its column's owner.
    for (int k = 0; k < nt; ++k) {
        // Column k: rows [off, off + w) of tile row t hold its diagonal block (seed §3.2).
        const int t = steps[k].row, off = steps[k].offset, w = a.tile_cols(k), rt = a.tile_rows(t);
        const global_index col0 = a.col_start(k);
        const double base = 3.0 * (nt - k);
        // POTF2': the diagonal block, then the rows below it in the same tile.
        runtime->submit({[=](const TaskContext& c) {
                             const auto& K = kernels::tile_kernels<T>(c.kind);
                             T* l = c.as<T>(id(t, k));
                             const int info = K.potrf(c.queue, w, l + off, rt);
                             if (info != 0)
                                 throw NumericalError(detail::concat(
                                     "Cholesky: the matrix is not positive definite: the leading minor of order ",
                                     col0 + info, " is not positive (column ", col0 + info - 1, ", 0-based)"));
                             if (rt - off - w > 0)
                                 K.trsm_right_lower_conj(c.queue, rt - off - w, w, l + off, rt, l + off + w, rt);
                         },
                         {{id(t, k), Access::read_write}},
                         base + 2});
        for (int i = t + 1; i < a.mt(); ++i) {
            const int mi = a.tile_rows(i);
            runtime->submit({[=](const TaskContext& c) {
                                 kernels::tile_kernels<T>(c.kind).trsm_right_lower_conj(
                                     c.queue, mi, w, c.as<T>(id(t, k)) + off, rt, c.as<T>(id(i, k)), mi);
                             },
                             {{id(i, k), Access::read_write}, {id(t, k), Access::read}},
                             base + 1, -1, 4.0 * mi * w * w});
        }
        // Trailing update of every later column j: A(rows >= col_start(j), j) -=
        // L(those rows, k) L(columns of j, k)^H. The rows of L for j's columns lie in
        // tile (tj, k) at offset oj; on the diagonal block a HERK, below it GEMMs.
        for (int j = k + 1; j < nt; ++j) {
            const int tj = steps[j].row, oj = steps[j].offset, wj = a.tile_cols(j), rtj = a.tile_rows(tj);
            const double priority = base + (j == k + 1 ? 1 : 0);
            for (int i = tj; i < a.mt(); ++i) {
                const int mi = a.tile_rows(i);
                if (i == tj) {
                    runtime->submit({[=](const TaskContext& c) {
                                         const auto& K = kernels::tile_kernels<T>(c.kind);
                                         const T* l = c.as<T>(id(tj, k));
                                         T* x = c.as<T>(id(tj, j));
                                         K.herk_minus(c.queue, wj, w, l + oj, rtj, x + oj, rtj);
                                         if (rtj - oj - wj > 0)
                                             K.gemm_minus_conj(c.queue, rtj - oj - wj, wj, w, l + oj + wj, rtj, l + oj,
                                                               rtj, x + oj + wj, rtj);
                                     },
                                     {{id(tj, j), Access::read_write}, {id(tj, k), Access::read}},
                                     priority, -1, 4.0 * wj * wj * w + 8.0 * (rtj - oj - wj) * wj * w});
                } else {
                    runtime->submit({[=](const TaskContext& c) {
                                         kernels::tile_kernels<T>(c.kind).gemm_minus_conj(
                                             c.queue, mi, wj, w, c.as<T>(id(i, k)), mi, c.as<T>(id(tj, k)) + oj, rtj,
                                             c.as<T>(id(i, j)), mi);
                                     },
                                     {{id(i, j), Access::read_write}, {id(i, k), Access::read},
                                      {id(tj, k), Access::read}},
                                     priority, -1, 8.0 * mi * wj * w});
                }
            }
        }
        // Column k is final: its device copies go once step k's tasks are done (seed §4.3).
        for (int i = 0; i < a.mt(); ++i) runtime->release(id(i, k));
    }
    runtime->wait_all();
    return {wall_seconds() - start, runtime->stats()};
}

template DenseReport cholesky<complex_double>(TileMatrix<complex_double>&, const DenseExecution&);
template DenseReport cholesky<complex_single>(TileMatrix<complex_single>&, const DenseExecution&);

}  // namespace topokpm::numerics::dense
