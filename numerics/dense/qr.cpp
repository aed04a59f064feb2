#include "numerics/dense/qr.hpp"

#include <algorithm>

#include "numerics/dense/dense_kernels.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::numerics::dense {

using tasks::Access;
using tasks::TaskContext;

double qr_flops(double m, double n)
{
    // LAWN 41 xGEQRF (m >= n); complex: 6 per multiply, 2 per add.
    const double mults = m * n * n - n * n * n / 3 + m * n + n * n / 2 + 23 * n / 6;
    const double adds = m * n * n - n * n * n / 3 + n * n / 2 + 5 * n / 6;
    return 6 * mults + 2 * adds;
}

template <class T>
TileQr<T> qr(TileMatrix<T> a, const DenseExecution& execution, DenseReport* report)
{
    const std::vector<ColumnStep> steps = column_steps(a);
    const double start = wall_seconds();
    const int ib = std::min(execution.inner_block, a.nb());
    TileQr<T> f{std::move(a), TileMatrix<T>(), ib};
    TileMatrix<T>& A = f.a;
    f.t = TileMatrix<T>(global_index(A.mt()) * ib, ib, A.column_widths());
    auto runtime = make_runtime(execution);
    register_tiles(*runtime, A, 0, execution);
    register_tiles(*runtime, f.t, 1, execution);
    auto a_id = [](int i, int j) { return tile_id(0, i, j); };
    auto t_id = [](int i, int j) { return tile_id(1, i, j); };
    const int mt = A.mt(), nt = A.nt();
    // UNMQR and TSMQR carry their flops (complex: 8 per multiply-add) for the runtime's cost
    // model (execution.rates): movable; the panel GEQRT/TSQRT stays with its column's owner.
    for (int k = 0; k < nt && steps[k].row < mt; ++k) {
        // Column k reduces rows [off, rt) of tile row t and every tile row below (seed §3.3).
        const int t = steps[k].row, off = steps[k].offset, rt = A.tile_rows(t), w = A.tile_cols(k);
        const int mk = rt - off, kk = std::min(mk, w);
        const double base = 3.0 * (nt - k);
        runtime->submit({[=](const TaskContext& c) {
                             kernels::tile_kernels<T>(c.kind).geqrt(
                                 c.queue, mk, w, ib, c.as<T>(a_id(t, k)) + off, rt, c.as<T>(t_id(t, k)), ib);
                         },
                         {{a_id(t, k), Access::read_write}, {t_id(t, k), Access::read_write}},
                         base + 2});
        for (int j = k + 1; j < nt; ++j) {
            const int nj = A.tile_cols(j);
            runtime->submit({[=](const TaskContext& c) {
                                 kernels::tile_kernels<T>(c.kind).gemqrt(
                                     c.queue, 'C', mk, nj, kk, ib, c.as<T>(a_id(t, k)) + off, rt, c.as<T>(t_id(t, k)),
                                     ib, c.as<T>(a_id(t, j)) + off, rt);
                             },
                             {{a_id(t, j), Access::read_write}, {a_id(t, k), Access::read}, {t_id(t, k), Access::read}},
                             base + (j == k + 1 ? 1 : 0), -1, 8.0 * nj * kk * (2.0 * mk - kk)});
        }
        // Below tile row t the column's R block is w x w (tile row t is full there).
        for (int i = t + 1; i < mt; ++i) {
            const int mi = A.tile_rows(i);
            runtime->submit({[=](const TaskContext& c) {
                                 kernels::tile_kernels<T>(c.kind).tpqrt(
                                     c.queue, mi, w, 0, ib, c.as<T>(a_id(t, k)) + off, rt, c.as<T>(a_id(i, k)), mi,
                                     c.as<T>(t_id(i, k)), ib);
                             },
                             {{a_id(t, k), Access::read_write}, {a_id(i, k), Access::read_write},
                              {t_id(i, k), Access::read_write}},
                             base + 2});
            for (int j = k + 1; j < nt; ++j) {
                const int nj = A.tile_cols(j);
                runtime->submit({[=](const TaskContext& c) {
                                     kernels::tile_kernels<T>(c.kind).tpmqrt(
                                         c.queue, 'C', mi, nj, w, 0, ib, c.as<T>(a_id(i, k)), mi, c.as<T>(t_id(i, k)),
                                         ib, c.as<T>(a_id(t, j)) + off, rt, c.as<T>(a_id(i, j)), mi);
                                 },
                                 {{a_id(t, j), Access::read_write}, {a_id(i, j), Access::read_write},
                                  {a_id(i, k), Access::read}, {t_id(i, k), Access::read}},
                                 base + (j == k + 1 ? 1 : 0), -1, 16.0 * mi * nj * w});
            }
        }
        // Column k of A and T is final: free its device copies once step k is done.
        for (int i = 0; i < mt; ++i) {
            runtime->release(a_id(i, k));
            runtime->release(t_id(i, k));
        }
    }
    for (int j = 0; j < nt; ++j)  // and the columns without a factor step (wide matrices)
        for (int i = 0; i < mt; ++i) {
            runtime->release(a_id(i, j));
            runtime->release(t_id(i, j));
        }
    runtime->wait_all();
    if (report != nullptr) *report = {wall_seconds() - start, runtime->stats()};
    return f;
}

template <class T>
DenseReport apply_q(const TileQr<T>& f, char trans, TileMatrix<T>& c, const DenseExecution& execution)
{
    TOPOKPM_USER_REQUIRE(trans == 'N' || trans == 'C', "apply_q: trans must be 'N' or 'C', got '", trans, "'");
    TOPOKPM_USER_REQUIRE(c.rows() == f.a.rows() && c.mb() == f.a.mb(), "apply_q: c must have ", f.a.rows(),
                         " rows in tiles of ", f.a.mb(), ", got ", c.rows(), " in tiles of ", c.mb());
    const std::vector<ColumnStep> steps = column_steps(f.a);
    const double start = wall_seconds();
    // The factors are only read; the runtime's items need non-const host pointers.
    auto& A = const_cast<TileMatrix<T>&>(f.a);
    auto& Tm = const_cast<TileMatrix<T>&>(f.t);
    auto runtime = make_runtime(execution);
    register_tiles(*runtime, A, 0, execution);
    register_tiles(*runtime, Tm, 1, execution);
    register_tiles(*runtime, c, 2, execution);
    auto a_id = [](int i, int j) { return tile_id(0, i, j); };
    auto t_id = [](int i, int j) { return tile_id(1, i, j); };
    auto c_id = [](int i, int j) { return tile_id(2, i, j); };
    const int ib = f.inner_block;
    const int mt = A.mt();
    int K = 0;  // columns with a factor step
    while (K < A.nt() && steps[K].row < mt) ++K;
    auto unmqr = [&](int k) {
        const int t = steps[k].row, off = steps[k].offset, rt = A.tile_rows(t);
        const int mk = rt - off, kk = std::min(mk, A.tile_cols(k));
        for (int j = 0; j < c.nt(); ++j) {
            const int nj = c.tile_cols(j);
            runtime->submit({[=](const TaskContext& x) {
                                 kernels::tile_kernels<T>(x.kind).gemqrt(
                                     x.queue, trans, mk, nj, kk, ib, x.as<T>(a_id(t, k)) + off, rt, x.as<T>(t_id(t, k)),
                                     ib, x.as<T>(c_id(t, j)) + off, rt);
                             },
                             {{c_id(t, j), Access::read_write}, {a_id(t, k), Access::read}, {t_id(t, k), Access::read}},
                             double(K - k)});
        }
    };
    auto tsmqr = [&](int i, int k) {
        const int t = steps[k].row, off = steps[k].offset, rt = A.tile_rows(t);
        const int mi = A.tile_rows(i), w = A.tile_cols(k);
        for (int j = 0; j < c.nt(); ++j) {
            const int nj = c.tile_cols(j);
            runtime->submit({[=](const TaskContext& x) {
                                 kernels::tile_kernels<T>(x.kind).tpmqrt(
                                     x.queue, trans, mi, nj, w, 0, ib, x.as<T>(a_id(i, k)), mi, x.as<T>(t_id(i, k)), ib,
                                     x.as<T>(c_id(t, j)) + off, rt, x.as<T>(c_id(i, j)), mi);
                             },
                             {{c_id(t, j), Access::read_write}, {c_id(i, j), Access::read_write},
                              {a_id(i, k), Access::read}, {t_id(i, k), Access::read}},
                             double(K - k)});
        }
    };
    // The reflectors of column k are not read after step k: free their device copies then.
    auto release_column = [&](int k) {
        for (int i = 0; i < mt; ++i) {
            runtime->release(a_id(i, k));
            runtime->release(t_id(i, k));
        }
    };
    if (trans == 'C') {
        for (int k = 0; k < K; ++k) {
            unmqr(k);
            for (int i = steps[k].row + 1; i < mt; ++i) tsmqr(i, k);
            release_column(k);
        }
    } else {
        for (int k = K - 1; k >= 0; --k) {
            for (int i = mt - 1; i > steps[k].row; --i) tsmqr(i, k);
            unmqr(k);
            release_column(k);
        }
    }
    for (int j = 0; j < c.nt(); ++j)
        for (int i = 0; i < c.mt(); ++i) runtime->release(c_id(i, j));
    runtime->wait_all();
    return {wall_seconds() - start, runtime->stats()};
}

template <class T>
TileMatrix<T> form_q(const TileQr<T>& f, const DenseExecution& execution)
{
    TileMatrix<T> q(f.a.rows(), f.a.mb(), f.a.column_widths());
    for (global_index d = 0; d < std::min(q.rows(), q.cols()); ++d) q(d, d) = T(1);
    apply_q(f, 'N', q, execution);
    return q;
}

#define TOPOKPM_TILE_QR(T)                                                                   \
    template TileQr<T> qr<T>(TileMatrix<T>, const DenseExecution&, DenseReport*);            \
    template DenseReport apply_q<T>(const TileQr<T>&, char, TileMatrix<T>&, const DenseExecution&); \
    template TileMatrix<T> form_q<T>(const TileQr<T>&, const DenseExecution&);
TOPOKPM_TILE_QR(complex_double)
TOPOKPM_TILE_QR(complex_single)

}  // namespace topokpm::numerics::dense
