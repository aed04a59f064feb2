#include "numerics/dense/block_cyclic.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <type_traits>
#include <memory>

#include "numerics/dense/dense_kernels.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"
#include "runtime/mpi/communicator.hpp"

namespace topokpm::numerics::dense {

using tasks::Access;
using tasks::TaskContext;

namespace {

template <class T>
MPI_Datatype element_type()
{
    return std::is_same_v<T, complex_double> ? MPI_C_DOUBLE_COMPLEX : MPI_C_FLOAT_COMPLEX;
}

/// Broadcast of `count` elements (a tile: far below INT_MAX), waited for with sleeps
/// between tests (mpi::wait_sleeping): MPI_Bcast would poll on a core the rank's workers use.
template <class T>
void bcast(T* data, std::size_t count, int root, MPI_Comm comm)
{
    MPI_Request request;
    mpi::check(MPI_Ibcast(data, static_cast<int>(count), element_type<T>(), root, comm, &request), "MPI_Ibcast(tile)");
    mpi::wait_sleeping(request, "MPI_Ibcast(tile)");
}

}  // namespace

ProcessGrid ProcessGrid::of(MPI_Comm comm)
{
    int size = 1, rank = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    ProcessGrid g;
    for (int r = 1; r * r <= size; ++r)
        if (size % r == 0) g.rows = r;
    g.cols = size / g.rows;
    g.row = rank / g.cols;
    g.col = rank % g.cols;
    return g;
}

template <class T>
BlockCyclicMatrix<T>::BlockCyclicMatrix(global_index m, global_index n, int tile, const ProcessGrid& grid)
    : m_(m), n_(n), b_(tile), grid_(grid)
{
    TOPOKPM_USER_REQUIRE(m >= 1 && n >= 1 && tile >= 1,
                         "a block-cyclic matrix needs m, n >= 1 and {tile_size} >= 1, got ", m, ", ", n, " and ", tile);
    mt_ = static_cast<int>((m + tile - 1) / tile);
    nt_ = static_cast<int>((n + tile - 1) / tile);
    tiles_.resize(static_cast<std::size_t>(mt_) * nt_);
    for (int i = 0; i < mt_; ++i)
        for (int j = 0; j < nt_; ++j)
            if (mine(i, j)) tiles_[index(i, j)].assign(std::size_t(tile_rows(i)) * tile_cols(j), T(0));
}

template <class T>
void BlockCyclicMatrix<T>::from_global(const T* a, global_index lda)
{
    for (int i = 0; i < mt_; ++i)
        for (int j = 0; j < nt_; ++j) {
            if (!mine(i, j)) continue;
            T* t = tile(i, j);
            for (int c = 0; c < tile_cols(j); ++c)
                std::copy_n(a + (global_index(j) * b_ + c) * lda + global_index(i) * b_, tile_rows(i),
                            t + std::size_t(c) * tile_rows(i));
        }
}

template <class T>
std::vector<T> BlockCyclicMatrix<T>::gather(int root, MPI_Comm comm) const
{
    int me = 0;
    MPI_Comm_rank(comm, &me);
    std::vector<T> full(me == root ? std::size_t(m_) * n_ : 0);
    for (int i = 0; i < mt_; ++i)
        for (int j = 0; j < nt_; ++j) {
            const int owner = grid_.rank_of(i % grid_.rows, j % grid_.cols);
            const std::size_t count = std::size_t(tile_rows(i)) * tile_cols(j);
            std::vector<T> buffer;
            const T* t = nullptr;
            if (owner == me) t = tiles_[index(i, j)].data();
            if (me == root && owner != root) {
                buffer.resize(count);
                mpi::check(MPI_Recv(buffer.data(), static_cast<int>(count), element_type<T>(), owner, i * nt_ + j,
                                    comm, MPI_STATUS_IGNORE),
                           "MPI_Recv(tile)");
                t = buffer.data();
            } else if (owner == me && me != root) {
                mpi::check(MPI_Send(t, static_cast<int>(count), element_type<T>(), root, i * nt_ + j, comm),
                           "MPI_Send(tile)");
            }
            if (me != root) continue;
            for (int c = 0; c < tile_cols(j); ++c)
                std::copy_n(t + std::size_t(c) * tile_rows(i), tile_rows(i),
                            full.data() + (global_index(j) * b_ + c) * m_ + global_index(i) * b_);
        }
    return full;
}

template <class T>
DenseReport block_cyclic_cholesky(BlockCyclicMatrix<T>& a, const DenseExecution& execution, MPI_Comm comm)
{
    TOPOKPM_USER_REQUIRE(a.m() == a.n(), "block-cyclic Cholesky needs a square matrix, got ", a.m(), " x ", a.n());
    const double start = wall_seconds();
    const ProcessGrid& g = a.grid();
    MPI_Comm row_comm, col_comm;  // ranks of this process row (ranked by column) / column
    mpi::check(MPI_Comm_split(comm, g.row, g.col, &row_comm), "MPI_Comm_split(row)");
    mpi::check(MPI_Comm_split(comm, g.col, g.row, &col_comm), "MPI_Comm_split(column)");
    auto runtime = make_runtime(execution);
    const int nt = a.nt();
    const int accelerators = execution.device_workers > 0 ? 1 : 0;
    auto id = [](int i, int j) { return tile_id(0, i, j); };
    for (int j = 0; j < nt; ++j)
        for (int i = j; i < nt; ++i)
            if (a.mine(i, j))
                runtime->register_data(id(i, j), a.tile(i, j), sizeof(T) * a.tile_rows(i) * std::size_t(a.tile_rows(j)),
                                       column_owner(j / g.cols, execution.slices, accelerators));
    // Panel tiles (i, k) this rank reads but does not own: buffers registered as matrix 1.
    std::map<std::pair<int, int>, std::unique_ptr<std::vector<T>>> received;
    auto panel = [&](int i, int k) -> T* {
        if (a.mine(i, k)) return a.tile(i, k);
        auto& slot = received[{i, k}];
        if (!slot) {
            slot = std::make_unique<std::vector<T>>(std::size_t(a.tile_rows(i)) * a.tile_rows(k));
            runtime->register_data(tile_id(1, i, k), slot->data(), slot->size() * sizeof(T), 0);
        }
        return slot->data();
    };
    auto panel_id = [&](int i, int k) { return a.mine(i, k) ? id(i, k) : tile_id(1, i, k); };
    auto has = [&](int i, int k) { return a.mine(i, k) || received.count({i, k}) > 0; };
    int info = 0;
    for (int k = 0; k < nt; ++k) {
        const int rk = k % g.rows, ck = k % g.cols, nk = a.tile_rows(k);
        // The critical path (POTRF and TRSMs of column k, the step-k updates of column k + 1)
        // outranks every other update: a rank then factors and broadcasts panel k + 1 while the
        // rest of step k's trailing update still runs (look-ahead), instead of leaving the other
        // ranks idle in the broadcast. Priorities reorder only independent tasks: each tile still
        // receives its updates in the serial order.
        const double base = 3.0 * (nt - k), critical = 3.0 * nt + (nt - k);
        // POTRF; its outcome goes to every rank (all must stop together).
        if (a.mine(k, k)) {
            runtime->submit({[=, &info](const TaskContext& c) {
                                 info = kernels::tile_kernels<T>(c.kind).potrf(c.queue, nk, c.as<T>(id(k, k)), nk);
                             },
                             {{id(k, k), Access::read_write}},
                             critical + 1});
            runtime->wait_for(id(k, k));
        }
        MPI_Request info_request;
        mpi::check(MPI_Ibcast(&info, 1, MPI_INT, g.rank_of(rk, ck), comm, &info_request), "MPI_Ibcast(info)");
        mpi::wait_sleeping(info_request, "MPI_Ibcast(info)");
        if (info != 0) {
            runtime->wait_all();
            MPI_Comm_free(&row_comm);
            MPI_Comm_free(&col_comm);
            throw NumericalError(detail::concat(
                "Cholesky: the matrix is not positive definite: the leading minor of order ",
                global_index(k) * a.tile() + info, " is not positive (column ", global_index(k) * a.tile() + info - 1,
                ", 0-based)"));
        }
        // L_kk to the process column that solves with it, then the TRSMs there.
        if (g.col == ck) {
            bcast(panel(k, k), std::size_t(nk) * nk, rk, col_comm);
            for (int i = k + 1; i < nt; ++i) {
                if (!a.mine(i, k)) continue;
                const int mi = a.tile_rows(i);
                const auto lkk = panel_id(k, k);
                runtime->submit({[=](const TaskContext& c) {
                                     kernels::tile_kernels<T>(c.kind).trsm_right_lower_conj(
                                         c.queue, mi, nk, c.as<T>(lkk), nk, c.as<T>(id(i, k)), mi);
                                 },
                                 {{id(i, k), Access::read_write}, {lkk, Access::read}},
                                 critical + 1});
            }
        }
        // L_ik along process row i mod Pr (tiles (i, j), j <= i), then down process column
        // i mod Pc (tiles (j, i), j >= i). Row phase first for every i, so no rank waits in a
        // column broadcast for a root still in a row broadcast.
        for (int i = k + 1; i < nt; ++i)
            if (g.row == i % g.rows) {
                if (a.mine(i, k)) runtime->wait_for(id(i, k));
                bcast(panel(i, k), std::size_t(a.tile_rows(i)) * nk, ck, row_comm);
            }
        for (int i = k + 1; i < nt; ++i)
            if (g.col == i % g.cols) bcast(panel(i, k), std::size_t(a.tile_rows(i)) * nk, i % g.rows, col_comm);
        // Trailing update of this rank's tiles, in the serial order of cholesky().
        for (int j = k + 1; j < nt; ++j) {
            const int nj = a.tile_rows(j);
            const double priority = j == k + 1 ? critical : base;
            for (int i = j; i < nt; ++i) {
                if (!a.mine(i, j)) continue;
                const int mi = a.tile_rows(i);
                const auto lik = panel_id(i, k), ljk = panel_id(j, k);
                if (i == j)
                    runtime->submit({[=](const TaskContext& c) {
                                         kernels::tile_kernels<T>(c.kind).herk_minus(
                                             c.queue, nj, nk, c.as<T>(lik), nj, c.as<T>(id(j, j)), nj);
                                     },
                                     {{id(j, j), Access::read_write}, {lik, Access::read}},
                                     priority});
                else
                    runtime->submit({[=](const TaskContext& c) {
                                         kernels::tile_kernels<T>(c.kind).gemm_minus_conj(
                                             c.queue, mi, nj, nk, c.as<T>(lik), mi, c.as<T>(ljk), nj, c.as<T>(id(i, j)),
                                             mi);
                                     },
                                     {{id(i, j), Access::read_write}, {lik, Access::read}, {ljk, Access::read}},
                                     priority});
            }
        }
        for (int i = k; i < nt; ++i)  // column k is final here and read by nothing after step k
            if (has(i, k)) runtime->release(panel_id(i, k));
        // Received panels of step k - 2 are read by nothing later: free them.
        for (auto it = received.begin(); it != received.end();) {
            if (it->first.second <= k - 2) {
                runtime->wait_for(tile_id(1, it->first.first, it->first.second));
                it = received.erase(it);
            } else {
                ++it;
            }
        }
    }
    runtime->wait_all();
    MPI_Comm_free(&row_comm);
    MPI_Comm_free(&col_comm);
    return {wall_seconds() - start, runtime->stats()};
}

#define TOPOKPM_BLOCK_CYCLIC(T)                                                                      \
    template class BlockCyclicMatrix<T>;                                                             \
    template DenseReport block_cyclic_cholesky<T>(BlockCyclicMatrix<T>&, const DenseExecution&, MPI_Comm);
TOPOKPM_BLOCK_CYCLIC(complex_double)
TOPOKPM_BLOCK_CYCLIC(complex_single)

}  // namespace topokpm::numerics::dense
