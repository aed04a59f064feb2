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
    TOPOKPM_USER_REQUIRE(a.mb() == a.nb(), "Cholesky needs square tiles, got ", a.mb(), " x ", a.nb());
    const double start = wall_seconds();
    auto runtime = make_runtime(execution);
    register_tiles(*runtime, a, 0, execution);
    const int nt = a.nt();
    const int nb = a.nb();
    auto id = [](int i, int j) { return tile_id(0, i, j); };
    // Every body runs the CPU kernels: host workers and the host-memory device both see
    // host-addressable memory. A CUDA device would branch on TaskContext::kind here.
    for (int k = 0; k < nt; ++k) {
        const int nk = a.tile_cols(k);
        const double base = 3.0 * (nt - k);
        runtime->submit({[=](const TaskContext& c) {
                             const int info = kernels::cpu::potrf(nk, c.as<T>(id(k, k)), nk);
                             if (info != 0)
                                 throw NumericalError(detail::concat(
                                     "Cholesky: the matrix is not positive definite: the leading minor of order ",
                                     global_index(k) * nb + info, " is not positive (column ",
                                     global_index(k) * nb + info - 1, ", 0-based)"));
                         },
                         {{id(k, k), Access::read_write}},
                         base + 2});
        for (int i = k + 1; i < nt; ++i) {
            const int mi = a.tile_rows(i);
            runtime->submit({[=](const TaskContext& c) {
                                 kernels::cpu::trsm_right_lower_conj(mi, nk, c.as<T>(id(k, k)), nk,
                                                                     c.as<T>(id(i, k)), mi);
                             },
                             {{id(i, k), Access::read_write}, {id(k, k), Access::read}},
                             base + 1});
        }
        for (int i = k + 1; i < nt; ++i) {
            const int mi = a.tile_rows(i);
            for (int j = k + 1; j < i; ++j) {
                const int nj = a.tile_cols(j);
                runtime->submit({[=](const TaskContext& c) {
                                     kernels::cpu::gemm_minus_conj(mi, nj, nk, c.as<T>(id(i, k)), mi,
                                                                   c.as<T>(id(j, k)), nj, c.as<T>(id(i, j)), mi);
                                 },
                                 {{id(i, j), Access::read_write}, {id(i, k), Access::read}, {id(j, k), Access::read}},
                                 base + (j == k + 1 ? 1 : 0)});
            }
            runtime->submit({[=](const TaskContext& c) {
                                 kernels::cpu::herk_minus(mi, nk, c.as<T>(id(i, k)), mi, c.as<T>(id(i, i)), mi);
                             },
                             {{id(i, i), Access::read_write}, {id(i, k), Access::read}},
                             base + (i == k + 1 ? 1 : 0)});
        }
    }
    runtime->wait_all();
    return {wall_seconds() - start, runtime->stats()};
}

template DenseReport cholesky<complex_double>(TileMatrix<complex_double>&, const DenseExecution&);
template DenseReport cholesky<complex_single>(TileMatrix<complex_single>&, const DenseExecution&);

}  // namespace topokpm::numerics::dense
