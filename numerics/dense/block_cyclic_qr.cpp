#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include "numerics/dense/block_cyclic.hpp"
#include "numerics/dense/dense_kernels.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"
#include "runtime/mpi/communicator.hpp"

namespace topokpm::numerics::dense {

using tasks::Access;
using tasks::DataId;
using tasks::TaskContext;

namespace {

/// One node of step k's reduction tree: GEQRT of row a; TSQRT of [R_a; A_b] (b a
/// full tile below a in a's domain); TTQRT of [R_a; R_b] (b the first row of another domain).
enum class Kind { ge, ts, tt };
struct Op {
    Kind kind;
    int a, b;  ///< tile rows; b == a for ge
    int source() const { return kind == Kind::ge ? a : b; }  ///< the row holding the reflectors
    int factor_matrix() const { return kind == Kind::tt ? 2 : 1; }  ///< T or T2
};

/// Step k's nodes in their fixed order: per domain (first rows k, k+1, ..., k+D-1) its flat
/// chain, then the binary tree over the domains' first rows.
std::vector<Op> step_ops(int k, int mt, int domains)
{
    std::vector<Op> ops;
    std::vector<int> heads;
    for (int h = k; h < std::min(mt, k + domains); ++h) {
        heads.push_back(h);
        ops.push_back({Kind::ge, h, h});
        for (int i = h + domains; i < mt; i += domains) ops.push_back({Kind::ts, h, i});
    }
    for (std::size_t s = 1; s < heads.size(); s *= 2)
        for (std::size_t p = 0; p + s < heads.size(); p += 2 * s) ops.push_back({Kind::tt, heads[p], heads[p + s]});
    return ops;
}

constexpr int matrix_a = 0, matrix_t = 1, matrix_t2 = 2, matrix_c = 3, matrix_temp = 4;
constexpr int tag_there = 41, tag_back = 42, tag_factor = 43;

/// Shared by the factorization and apply_q: the rank's runtime, its registered tiles,
/// received buffers, and the three phases of a step (panel, factor distribution, update).
template <class T>
class TreeQr {
public:
    TreeQr(BlockCyclicQr<T>& f, const DenseExecution& execution, MPI_Comm comm)
        : f_(f),
          a_(f.a),
          g_(f.a.grid()),
          mt_(f.a.mt()),
          nt_(f.a.nt()),
          ib_(f.inner_block),
          runtime_((require_host_addressable(execution, "the block-cyclic QR"), make_runtime(execution)))
    {
        mpi::check(MPI_Comm_split(comm, g_.row, g_.col, &row_comm_), "MPI_Comm_split(row)");
        mpi::check(MPI_Comm_split(comm, g_.col, g_.row, &col_comm_), "MPI_Comm_split(column)");
        accelerators_ = execution.device_workers > 0 ? 1 : 0;
        slices_ = execution.slices;
        register_matrix(a_, matrix_a);
        for (int k = 0; k < nt_; ++k)
            for (int i = k; i < mt_; ++i) {
                if (!a_.mine(i, k)) continue;
                for (int m : {matrix_t, matrix_t2}) {
                    auto& store = (m == matrix_t ? f_.t : f_.t2)[index(i, k)];
                    if (!store.empty())
                        runtime_->register_data(tile_id(m, i, k), store.data(), store.size() * sizeof(T), owner(k));
                }
            }
    }
    ~TreeQr()
    {
        MPI_Comm_free(&row_comm_);
        MPI_Comm_free(&col_comm_);
    }
    TreeQr(const TreeQr&) = delete;
    TreeQr& operator=(const TreeQr&) = delete;

    void register_matrix(BlockCyclicMatrix<T>& x, int matrix)
    {
        for (int i = 0; i < x.mt(); ++i)
            for (int j = 0; j < x.nt(); ++j)
                if (x.mine(i, j))
                    runtime_->register_data(tile_id(matrix, i, j), x.tile(i, j),
                                            std::size_t(x.tile_rows(i)) * x.tile_cols(j) * sizeof(T), owner(j));
    }

    /// Priorities (higher first): every panel node above every update, so step k + 1's
    /// panel overtakes step k's trailing updates (lookahead); then the updates of the next
    /// panel column; earlier steps first within each class.
    double panel_priority(int k) const { return 3.0 * nt_ + (nt_ - k); }
    double update_priority(int k, int j, bool next_panel) const
    {
        return (next_panel && j == k + 1 ? 2.0 * nt_ : 0.0) + (nt_ - k);
    }

    /// Step k's panel: every node on the rank of its row a in process column k mod Pc;
    /// a tile b on another process row travels there and back (with its factor). A GEQRT's
    /// reflectors are copied out (snap_) once computed: the tile's R part changes in later
    /// nodes, and the updates and broadcasts need only the reflectors.
    void panel(int k, const std::vector<Op>& ops)
    {
        snap_.assign(ops.size(), 0);
        const int ck = k % g_.cols;
        if (g_.col != ck) return;
        const double priority = panel_priority(k);
        for (std::size_t o = 0; o < ops.size(); ++o) {
            const Op& op = ops[o];
            const int ra = op.a % g_.rows, rb = op.b % g_.rows;
            const DataId va = tile_id(matrix_a, op.a, k);
            const DataId tf = tile_id(op.factor_matrix(), op.source(), k);
            if (op.kind == Kind::ge || ra == rb) {
                if (g_.row != ra) continue;
                submit_panel(op, k, va, tile_id(matrix_a, op.b, k), tf, priority);
                if (op.kind == Kind::ge) {
                    snap_[o] = temp(elements(op.a, k));
                    copy_into(snap_[o], va, elements(op.a, k), priority);
                }
                continue;
            }
            const std::size_t vcount = elements(op.b, k), tcount = std::size_t(ib_) * a_.tile_cols(k);
            if (g_.row == rb) {
                runtime_->wait_for(tile_id(matrix_a, op.b, k));
                send(a_.tile(op.b, k), vcount, ra, tag_there);
                const DataId v = receive(vcount, ra, tag_back);
                const DataId t = receive(tcount, ra, tag_back);
                copy_into(tile_id(matrix_a, op.b, k), v, vcount, priority);
                copy_into(tf, t, tcount, priority);
            } else if (g_.row == ra) {
                const DataId v = receive(vcount, rb, tag_there);
                const DataId t = temp(tcount);
                submit_panel(op, k, va, v, t, priority);
                runtime_->wait_for(v);
                runtime_->wait_for(t);
                send(pointer(v), vcount, rb, tag_back);
                send(pointer(t), tcount, rb, tag_back);
            }
        }
    }

    /// Brings node o's reflectors and factor to every rank of process row a mod Pr (from
    /// the owner in process column k mod Pc, via that column when the owner's row differs);
    /// afterwards v_[o], t_[o] name them on those ranks. Call in node order on every rank.
    void distribute(int k, const std::vector<Op>& ops, std::size_t o)
    {
        const int ck = k % g_.cols;
        if (o == 0) {
            v_.assign(ops.size(), 0);
            t_.assign(ops.size(), 0);
        }
        const Op& op = ops[o];
        const int src = op.source(), ra = op.a % g_.rows, rs = src % g_.rows;
        DataId v = tile_id(matrix_a, src, k), t = tile_id(op.factor_matrix(), src, k);
        if (op.kind == Kind::ge && g_.row == ra && g_.col == ck && snap_[o] != 0) v = snap_[o];
        const std::size_t vcount = elements(src, k), tcount = std::size_t(ib_) * a_.tile_cols(k);
        if (rs != ra && g_.col == ck) {  // owner row -> row a, in process column ck
            if (g_.row == rs) {
                runtime_->wait_for(v);
                send(a_.tile(src, k), vcount, ra, tag_factor);
                runtime_->wait_for(t);
                send(host_pointer(t), tcount, ra, tag_factor);
            } else if (g_.row == ra) {
                v = receive(vcount, rs, tag_factor);
                t = receive(tcount, rs, tag_factor);
            }
        }
        if (g_.row != ra) return;
        if (g_.cols > 1) {  // along process row ra from column ck
            if (g_.col == ck) {
                runtime_->wait_for(v);
                bcast(host_pointer(v), vcount, ck);
                runtime_->wait_for(t);
                bcast(host_pointer(t), tcount, ck);
            } else {
                v = temp(vcount);
                bcast(pointer(v), vcount, ck);
                t = temp(tcount);
                bcast(pointer(t), tcount, ck);
            }
        }
        v_[o] = v;
        t_[o] = t;
    }

    /// Applies node o of step k to tile columns [j0, j1) of matrix `matrix` (matrix_a or
    /// matrix_c); a tile b on another process row than a travels to a's rank and back.
    void update(int k, const std::vector<Op>& ops, std::size_t o, char trans, int matrix, int j0, int j1)
    {
        const double base = update_priority(k, -1, false);
        const Op& op = ops[o];
        const int ra = op.a % g_.rows, rb = op.b % g_.rows;
        std::vector<int> remote;
        for (int j = j0; j < j1; ++j) {
            if (g_.col != j % g_.cols) continue;
            const double priority = update_priority(k, j, matrix == matrix_a);
            if (op.kind == Kind::ge || ra == rb) {
                if (g_.row == ra)
                    submit_update(op, k, o, trans, tile_id(matrix, op.a, j), tile_id(matrix, op.b, j), j, priority);
            } else {
                remote.push_back(j);
            }
        }
        if (remote.empty() || (g_.row != ra && g_.row != rb)) return;
        if (g_.row == rb) {
            for (int j : remote) {
                runtime_->wait_for(tile_id(matrix, op.b, j));
                send(host_pointer(tile_id(matrix, op.b, j)), elements_in(matrix, op.b, j), ra, tag_there);
            }
            for (int j : remote)
                copy_into(tile_id(matrix, op.b, j), receive(elements_in(matrix, op.b, j), ra, tag_back), elements_in(matrix, op.b, j),
                          base);
        } else {
            std::vector<DataId> held;
            for (int j : remote) {
                held.push_back(receive(elements_in(matrix, op.b, j), rb, tag_there));
                submit_update(op, k, o, trans, tile_id(matrix, op.a, j), held.back(), j, base);
            }
            for (std::size_t r = 0; r < remote.size(); ++r) {
                runtime_->wait_for(held[r]);
                send(pointer(held[r]), elements_in(matrix, op.b, remote[r]), rb, tag_back);
            }
        }
    }

    /// Ends a step: buffers received two steps ago are read by nothing later (waiting for
    /// the last step's would stall the master while their updates run).
    void retire()
    {
        for (auto it = temps_.begin(); it != temps_.end();) {
            if (it->second.phase <= phase_ - 2) {
                runtime_->release(it->first);
                runtime_->wait_for(it->first);
                it = temps_.erase(it);
            } else {
                ++it;
            }
        }
        ++phase_;
    }

    void release_column(int k)
    {
        for (int i = 0; i < mt_; ++i) {
            if (!a_.mine(i, k)) continue;
            runtime_->release(tile_id(matrix_a, i, k));
            if (i >= k && !f_.t[index(i, k)].empty()) runtime_->release(tile_id(matrix_t, i, k));
            if (i >= k && !f_.t2[index(i, k)].empty()) runtime_->release(tile_id(matrix_t2, i, k));
        }
    }

    DenseReport finish(double start)
    {
        runtime_->wait_all();
        temps_.clear();
        return {wall_seconds() - start, runtime_->stats()};
    }

    int nt() const { return nt_; }
    /// apply_q: the factors exist already; no snapshots.
    void panel_skipped(std::size_t nodes) { snap_.assign(nodes, 0); }

private:
    struct Temp {
        std::vector<T> data;
        int phase;
    };

    std::size_t index(int i, int j) const { return std::size_t(i) * nt_ + j; }
    std::size_t elements(int i, int j) const { return std::size_t(a_.tile_rows(i)) * a_.tile_cols(j); }
    /// Elements of tile (i, j) of matrix_a or matrix_c (apply_q's c: A's rows, its own columns).
    std::size_t elements_in(int matrix, int i, int j) const
    {
        const BlockCyclicMatrix<T>& x = matrix == matrix_c ? *c_ : a_;
        return std::size_t(x.tile_rows(i)) * x.tile_cols(j);
    }
    int owner(int j) const { return column_owner(j / g_.cols, slices_, accelerators_); }

    DataId temp(std::size_t count)
    {
        const DataId id = tile_id(matrix_temp, int(next_ >> 28), int(next_ & 0xFFFFFFF));
        ++next_;
        Temp& t = temps_[id];
        t.data.assign(count, T(0));
        t.phase = phase_;
        runtime_->register_data(id, t.data.data(), count * sizeof(T), 0);
        return id;
    }
    T* pointer(DataId id) { return temps_.at(id).data.data(); }
    /// The host memory of a registered item: a received buffer or one of this rank's tiles.
    T* host_pointer(DataId id)
    {
        const auto it = temps_.find(id);
        if (it != temps_.end()) return it->second.data.data();
        const int matrix = int(id >> 56), i = int((id >> 28) & 0xFFFFFFF), j = int(id & 0xFFFFFFF);
        if (matrix == matrix_t) return f_.t[index(i, j)].data();
        if (matrix == matrix_t2) return f_.t2[index(i, j)].data();
        return (matrix == matrix_c ? c_ : &a_)->tile(i, j);
    }

    void send(const T* data, std::size_t count, int row, int tag)
    {
        MPI_Request r;
        mpi::check(MPI_Isend(data, int(count), mpi::datatype<T>(), row, tag, col_comm_, &r), "MPI_Isend(tile)");
        mpi::wait_sleeping(r, "MPI_Isend(tile)");
    }
    DataId receive(std::size_t count, int row, int tag)
    {
        const DataId id = temp(count);
        MPI_Request r;
        mpi::check(MPI_Irecv(pointer(id), int(count), mpi::datatype<T>(), row, tag, col_comm_, &r), "MPI_Irecv(tile)");
        mpi::wait_sleeping(r, "MPI_Irecv(tile)");
        return id;
    }
    void bcast(T* data, std::size_t count, int root_col)
    {
        MPI_Request r;
        mpi::check(MPI_Ibcast(data, int(count), mpi::datatype<T>(), root_col, row_comm_, &r), "MPI_Ibcast(tile)");
        mpi::wait_sleeping(r, "MPI_Ibcast(tile)");
    }

    void copy_into(DataId dst, DataId src, std::size_t count, double priority)
    {
        runtime_->submit({[=](const TaskContext& c) { std::memcpy(c.data(dst), c.data(src), count * sizeof(T)); },
                          {{dst, Access::read_write}, {src, Access::read}},
                          priority});
    }

    void submit_panel(const Op& op, int k, DataId va, DataId vb, DataId tf, double priority)
    {
        const int ma = a_.tile_rows(op.a), mb = a_.tile_rows(op.b), w = a_.tile_cols(k), ib = ib_;
        if (op.kind == Kind::ge) {
            runtime_->submit({[=](const TaskContext& c) { kernels::cpu::geqrt(ma, w, ib, c.as<T>(va), ma, c.as<T>(tf), ib); },
                              {{va, Access::read_write}, {tf, Access::read_write}},
                              priority});
            return;
        }
        // TS: B is a full tile (l = 0); TT: B is R_b, upper trapezoidal in its first min(mb, w) rows.
        const int m = op.kind == Kind::ts ? mb : std::min(mb, w), l = op.kind == Kind::ts ? 0 : m;
        runtime_->submit({[=](const TaskContext& c) {
                              kernels::cpu::tpqrt(m, w, l, ib, c.as<T>(va), ma, c.as<T>(vb), mb, c.as<T>(tf), ib);
                          },
                          {{va, Access::read_write}, {vb, Access::read_write}, {tf, Access::read_write}},
                          priority});
    }

    void submit_update(const Op& op, int k, std::size_t o, char trans, DataId xa, DataId xb, int j, double priority)
    {
        const BlockCyclicMatrix<T>& x = int(xa >> 56) == matrix_c ? *c_ : a_;
        const int ma = a_.tile_rows(op.a), mb = a_.tile_rows(op.b), w = a_.tile_cols(k), nj = x.tile_cols(j);
        const int ib = ib_;
        const DataId v = v_[o], t = t_[o];
        if (op.kind == Kind::ge) {
            const int kk = std::min(ma, w);
            runtime_->submit({[=](const TaskContext& c) {
                                  kernels::cpu::gemqrt(trans, ma, nj, kk, ib, c.as<T>(v), ma, c.as<T>(t), ib,
                                                       c.as<T>(xa), ma);
                              },
                              {{xa, Access::read_write}, {v, Access::read}, {t, Access::read}},
                              priority});
            return;
        }
        const int m = op.kind == Kind::ts ? mb : std::min(mb, w), l = op.kind == Kind::ts ? 0 : m;
        runtime_->submit({[=](const TaskContext& c) {
                              kernels::cpu::tpmqrt(trans, m, nj, w, l, ib, c.as<T>(v), mb, c.as<T>(t), ib,
                                                   c.as<T>(xa), ma, c.as<T>(xb), mb);
                          },
                          {{xa, Access::read_write}, {xb, Access::read_write}, {v, Access::read}, {t, Access::read}},
                          priority});
    }

    BlockCyclicQr<T>& f_;
    BlockCyclicMatrix<T>& a_;
    const ProcessGrid g_;
    const int mt_, nt_, ib_;
    std::unique_ptr<tasks::DataflowRuntime> runtime_;
    MPI_Comm row_comm_, col_comm_;
    int accelerators_ = 0, slices_ = 1;
    std::map<DataId, Temp> temps_;
    std::uint64_t next_ = 0;
    int phase_ = 0;  ///< steps retired so far
    std::vector<DataId> v_, t_;  ///< per node of the current step: reflectors and factor on row a's ranks
    std::vector<DataId> snap_;   ///< per node: the copy of a GEQRT's tile on its rank (0: none)

public:
    BlockCyclicMatrix<T>* c_ = nullptr;  ///< apply_q's c (matrix_c)
};

}  // namespace

template <class T>
BlockCyclicQr<T> block_cyclic_qr(BlockCyclicMatrix<T> a, const DenseExecution& execution, MPI_Comm comm, int domains,
                                 DenseReport* report)
{
    TOPOKPM_USER_REQUIRE(domains >= 1, "block-cyclic QR needs {domains} >= 1, got ", domains);
    TOPOKPM_USER_REQUIRE(a.m() >= a.n(), "block-cyclic QR needs m >= n, got ", a.m(), " x ", a.n());
    const double start = wall_seconds();
    const int mt = a.mt(), nt = a.nt(), ib = std::max(1, std::min(execution.inner_block, a.tile()));
    BlockCyclicQr<T> f{std::move(a), {}, {}, ib, domains};
    f.t.resize(std::size_t(mt) * nt);
    f.t2.resize(f.t.size());
    for (int k = 0; k < nt; ++k)
        for (int i = k; i < mt; ++i) {
            if (!f.a.mine(i, k)) continue;
            const std::size_t count = std::size_t(ib) * f.a.tile_cols(k);
            f.t[std::size_t(i) * nt + k].assign(count, T(0));
            if (i > k && i < k + domains) f.t2[std::size_t(i) * nt + k].assign(count, T(0));  // tree nodes' b rows
        }
    DenseReport result;
    {
        TreeQr<T> q(f, execution, comm);
        for (int k = 0; k < nt; ++k) {
            const std::vector<Op> ops = step_ops(k, mt, domains);
            q.panel(k, ops);
            for (std::size_t o = 0; o < ops.size() && k + 1 < nt; ++o) {  // each node's updates as soon as it is here
                q.distribute(k, ops, o);
                q.update(k, ops, o, 'C', matrix_a, k + 1, nt);
            }
            q.release_column(k);
            q.retire();
        }
        result = q.finish(start);
    }
    if (report != nullptr) *report = result;
    return f;
}

template <class T>
DenseReport block_cyclic_apply_q(const BlockCyclicQr<T>& f, char trans, BlockCyclicMatrix<T>& c,
                                 const DenseExecution& execution, MPI_Comm comm)
{
    TOPOKPM_USER_REQUIRE(trans == 'N' || trans == 'C', "apply_q: trans must be 'N' or 'C', got '", trans, "'");
    const ProcessGrid& g = f.a.grid();
    TOPOKPM_USER_REQUIRE(c.m() == f.a.m() && c.tile() == f.a.tile() && c.grid().rows == g.rows &&
                             c.grid().cols == g.cols,
                         "apply_q: c must have ", f.a.m(), " rows in tiles of ", f.a.tile(), " on a ", g.rows, " x ",
                         g.cols, " grid, got ", c.m(), " rows, tile ", c.tile());
    const double start = wall_seconds();
    // The factors are only read; the runtime's items need non-const host pointers.
    TreeQr<T> q(const_cast<BlockCyclicQr<T>&>(f), execution, comm);
    q.c_ = &c;
    q.register_matrix(c, matrix_c);
    const int mt = f.a.mt(), nt = f.a.nt();
    for (int s = 0; s < nt; ++s) {
        const int k = trans == 'C' ? s : nt - 1 - s;
        const std::vector<Op> ops = step_ops(k, mt, f.domains);
        q.panel_skipped(ops.size());
        for (std::size_t o = 0; o < ops.size(); ++o) q.distribute(k, ops, o);
        for (std::size_t n = 0; n < ops.size(); ++n)  // Q: the nodes in reverse
            q.update(k, ops, trans == 'N' ? ops.size() - 1 - n : n, trans, matrix_c, 0, c.nt());
        q.retire();
    }
    return q.finish(start);
}

#define TOPOKPM_BLOCK_CYCLIC_QR(T)                                                                                 \
    template BlockCyclicQr<T> block_cyclic_qr<T>(BlockCyclicMatrix<T>, const DenseExecution&, MPI_Comm, int,       \
                                                 DenseReport*);                                                    \
    template DenseReport block_cyclic_apply_q<T>(const BlockCyclicQr<T>&, char, BlockCyclicMatrix<T>&,            \
                                                 const DenseExecution&, MPI_Comm);
TOPOKPM_BLOCK_CYCLIC_QR(complex_double)
TOPOKPM_BLOCK_CYCLIC_QR(complex_single)

}  // namespace topokpm::numerics::dense
