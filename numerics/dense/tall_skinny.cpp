#include "numerics/dense/tall_skinny.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "numerics/dense/dense_kernels.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::numerics::dense {

using tasks::Access;
using tasks::TaskContext;

namespace {

template <class T>
void check_block(const TileMatrix<T>& a)
{
    TOPOKPM_USER_REQUIRE(a.nt() == 1, "a tall-skinny block needs one tile column (nb = k), got ", a.nt());
    const int k = a.tile_cols(0);
    for (int i = 0; i < a.mt(); ++i)
        TOPOKPM_USER_REQUIRE(a.tile_rows(i) >= k, "every row block needs >= k = ", k, " rows; block ", i, " has ",
                             a.tile_rows(i), " (choose {block_rows} so the last block is not shorter)");
}

// Ids: matrix 0 = the row blocks, 1.. = the small per-block buffers below.
enum Buffer { kBlock = 0, kLeafT = 1, kR = 2, kTreeT = 3, kC = 4, kGram = 5, kU = 6 };
tasks::DataId buffer_id(Buffer b, int i) { return tile_id(int(b), i, 0); }

}  // namespace

template <class T>
double cholqr2_rcond_threshold(global_index rows, int k)
{
    const double u = std::numeric_limits<typename T::value_type>::epsilon() / 2;
    return 64.0 * (double(rows) * k + double(k) * (k + 1)) * u;
}

template <class T>
TallSkinnyResult<T> tsqr(TileMatrix<T>& a, const DenseExecution& execution)
{
    check_block(a);
    require_host_addressable(execution, "TSQR");
    const double start = wall_seconds();
    const int k = a.tile_cols(0), mt = a.mt();
    const int ib = std::min(execution.inner_block, k);
    const std::size_t kk = std::size_t(k) * k, tk = std::size_t(ib) * k;
    // Leaves: one k x k block reflector each (geqrt with ib = k), so the leaf's part of Q is
    // one GEMM (q_times_top); the tree keeps the inner block ib.
    std::vector<T> leaf_t(kk * mt), r(kk * mt, T(0)), tree_t(tk * mt), cbuf(kk * mt, T(0));
    auto runtime = make_runtime(execution);
    const int accelerators = execution.device_workers > 0 ? 1 : 0;
    for (int i = 0; i < mt; ++i) {
        // Row block i and its small buffers share an owner (one device per block).
        const int owner = column_owner(i, execution.slices, accelerators);
        runtime->register_data(buffer_id(kBlock, i), a.tile(i, 0), a.tile_bytes(i, 0), owner);
        runtime->register_data(buffer_id(kLeafT, i), &leaf_t[kk * i], kk * sizeof(T), owner);
        runtime->register_data(buffer_id(kR, i), &r[kk * i], kk * sizeof(T), owner);
        runtime->register_data(buffer_id(kTreeT, i), &tree_t[tk * i], tk * sizeof(T), owner);
        runtime->register_data(buffer_id(kC, i), &cbuf[kk * i], kk * sizeof(T), owner);
    }
    for (int i = 0; i < mt; ++i) {
        const int mi = a.tile_rows(i);
        runtime->submit({[=](const TaskContext& c) {
                             T* blk = c.as<T>(buffer_id(kBlock, i));
                             kernels::cpu::geqrt(mi, k, k, blk, mi, c.as<T>(buffer_id(kLeafT, i)), k);
                             T* ri = c.as<T>(buffer_id(kR, i));
                             for (int col = 0; col < k; ++col)
                                 for (int row = 0; row <= col; ++row) ri[row + col * k] = blk[row + col * mi];
                         },
                         {{buffer_id(kBlock, i), Access::read_write},
                          {buffer_id(kLeafT, i), Access::read_write},
                          {buffer_id(kR, i), Access::read_write}},
                         1.0});
    }
    // Binary tree: at stride s, R_i (i a multiple of 2s) absorbs R_{i+s}, whose slot keeps V.
    int levels = 0;
    for (int s = 1; s < mt; s *= 2, ++levels)
        for (int i = 0; i + s < mt; i += 2 * s) {
            const int j = i + s;
            runtime->submit({[=](const TaskContext& c) {
                                 kernels::cpu::tpqrt(k, k, k, ib, c.as<T>(buffer_id(kR, i)), k,
                                                     c.as<T>(buffer_id(kR, j)), k, c.as<T>(buffer_id(kTreeT, j)), ib);
                             },
                             {{buffer_id(kR, i), Access::read_write},
                              {buffer_id(kR, j), Access::read_write},
                              {buffer_id(kTreeT, j), Access::read_write}},
                             2.0 + levels});
        }
    // Q = leaves * tree * [I; 0]: C_0 = I, then the tree top-down, then each leaf.
    for (int d = 0; d < k; ++d) cbuf[std::size_t(d) * k + d] = T(1);
    for (int s = 1 << std::max(0, levels - 1); s >= 1 && levels > 0; s /= 2)
        for (int i = 0; i + s < mt; i += 2 * s) {
            const int j = i + s;
            runtime->submit({[=](const TaskContext& c) {
                                 kernels::cpu::tpmqrt('N', k, k, k, k, ib, c.as<T>(buffer_id(kR, j)), k,
                                                      c.as<T>(buffer_id(kTreeT, j)), ib, c.as<T>(buffer_id(kC, i)), k,
                                                      c.as<T>(buffer_id(kC, j)), k);
                             },
                             {{buffer_id(kC, i), Access::read_write},
                              {buffer_id(kC, j), Access::read_write},
                              {buffer_id(kR, j), Access::read},
                              {buffer_id(kTreeT, j), Access::read}},
                             1.0});
        }
    for (int i = 0; i < mt; ++i) {
        const int mi = a.tile_rows(i);
        runtime->submit({[=](const TaskContext& c) {
                             kernels::cpu::q_times_top(mi, k, c.as<T>(buffer_id(kBlock, i)), mi,
                                                       c.as<T>(buffer_id(kLeafT, i)), k,
                                                       c.as<T>(buffer_id(kC, i)), k);
                         },
                         {{buffer_id(kBlock, i), Access::read_write},
                          {buffer_id(kC, i), Access::read},
                          {buffer_id(kLeafT, i), Access::read}},
                         0.0});
    }
    // Everything is submitted: each buffer's device copy goes when its last task is done.
    for (int i = 0; i < mt; ++i)
        for (Buffer kind : {kBlock, kLeafT, kR, kTreeT, kC}) runtime->release(buffer_id(kind, i));
    runtime->wait_all();
    TallSkinnyResult<T> result;
    result.r.assign(kk, T(0));
    for (int col = 0; col < k; ++col)
        for (int row = 0; row <= col; ++row) result.r[row + std::size_t(col) * k] = r[row + std::size_t(col) * k];
    result.report = {wall_seconds() - start, runtime->stats()};
    return result;
}

#define TOPOKPM_TALL_SKINNY(T)                                                          \
    template TallSkinnyResult<T> tsqr<T>(TileMatrix<T>&, const DenseExecution&);        \
    template double cholqr2_rcond_threshold<T>(global_index, int);
TOPOKPM_TALL_SKINNY(complex_double)
TOPOKPM_TALL_SKINNY(complex_single)

}  // namespace topokpm::numerics::dense
