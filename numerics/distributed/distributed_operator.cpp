#include "numerics/distributed/distributed_operator.hpp"

#include <omp.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <numeric>
#include <type_traits>

#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"
#include "runtime/mpi/communicator.hpp"
#include "runtime/tasks/task_queue.hpp"
#include "runtime/mpi/environment.hpp"
#include "runtime/topology/affinity.hpp"
#include "runtime/topology/topology.hpp"

namespace topokpm::numerics {

CommMode parse_comm_mode(const std::string& text)
{
    if (text == "vector") return CommMode::Vector;
    if (text == "overlap") return CommMode::Overlap;
    if (text == "task") return CommMode::Task;
    throw InputError(detail::concat("{comm_mode} '", text, "': allowed are vector, overlap, task"));
}

const char* comm_mode_name(CommMode mode)
{
    switch (mode) {
    case CommMode::Vector: return "vector";
    case CommMode::Overlap: return "overlap";
    case CommMode::Task: return "task";
    }
    return "?";
}

namespace {

int owner_of(const std::vector<global_index>& bounds, global_index col)
{
    return static_cast<int>(std::upper_bound(bounds.begin(), bounds.end(), col) - bounds.begin()) - 1;
}

double now() { return MPI_Wtime(); }

}  // namespace

/// Requests of one exchange in flight, and where this sweep packed (the window's
/// alternating buffers: which one).
struct DistributedOperator::Exchange {
    std::vector<MPI_Request> requests;
    void* send = nullptr;
    int parity = 0;
};

/// The node's shared window of the halo (DistributedOptions::shared_memory_halo). Rank q's
/// segment holds two buffers of its send_rows x width values (width: the widest r so far,
/// the same on every rank of the node); exchange k packs into buffer k % 2 (r <= width
/// values per row). A peer copies its rows out of buffer k % 2 after the zero-byte "packed" message of
/// exchange k; the owner writes that buffer again in exchange k + 2, which it starts only
/// after the peer's "packed" of exchange k + 1, sent once the peer is done with exchange k
/// (its unpack ended, or, on a GPU, its wait_packed of k + 1 waited for the queued copies).
/// Hence two buffers and no "consumed" message. Shared peers are peers both ways (H is
/// Hermitian: whoever needs my rows has rows I need).
struct DistributedOperator::SharedWindow {
    MPI_Comm node = MPI_COMM_NULL;
    std::vector<int> recv_node_rank;       ///< per recv peer: its rank in `node`, or -1: messages
    std::vector<char> send_shared;         ///< per send peer: through the window
    std::vector<global_index> peer_offset; ///< per shared recv peer: my rows' offset in its send rows
    std::vector<global_index> peer_sends;  ///< per shared recv peer: its send rows
    int peers = 0;                         ///< shared recv peers of this rank
    MPI_Win win = MPI_WIN_NULL;
    int width = 0;                         ///< the r the window holds
    char* mine = nullptr;                  ///< this rank's segment
    std::vector<char*> peer_segment;       ///< per recv peer (null: messages)
    long exchanges = 0;
};

namespace {

constexpr int halo_tag = 3141, packed_tag = 3142, layout_tag = 3143;

/// Bytes free on the file system MPI backs shared windows with (Open MPI: /dev/shm).
double shared_memory_free_bytes()
{
    struct statvfs fs {};
    if (statvfs("/dev/shm", &fs) != 0) return 0.0;
    return static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
}

}  // namespace

/// The communication thread of --comm-mode task: a one-PU TaskQueue.
struct DistributedOperator::TaskMachinery {
    topology::Topology topology;
    std::unique_ptr<tasks::TaskQueue> queue;
};

DistributedOperator::DistributedOperator(const RowSource& source, std::vector<global_index> bounds,
                                         DistributedOptions opts, std::shared_ptr<const Operator> local)
    : bounds_(std::move(bounds)), opts_(opts), local_op_(std::move(local))
{
    MPI_Comm_rank(opts_.comm, &rank_);
    MPI_Comm_size(opts_.comm, &num_ranks_);
    TOPOKPM_REQUIRE(static_cast<int>(bounds_.size()) == num_ranks_ + 1 && bounds_.front() == 0 &&
                        bounds_.back() == source.num_rows() && std::is_sorted(bounds_.begin(), bounds_.end()),
                    "row bounds of ", bounds_.size(), " entries for ", num_ranks_, " ranks and N = ",
                    source.num_rows());
    row_begin_ = bounds_[rank_];
    row_end_ = bounds_[rank_ + 1];
    const global_index n = row_end_ - row_begin_;

    TOPOKPM_REQUIRE(local_op_ != nullptr, "distributed operator without a local part");
    TOPOKPM_REQUIRE(local_op_->num_rows() == n, "local operator ", local_op_->name(), " has ", local_op_->num_rows(),
                    " rows, the rank owns ", n);

    // Remote part: one pass over the own rows collects the foreign columns.
    const int max_len = source.max_row_length();
    std::vector<global_index> cols(max_len);
    std::vector<complex_type> vals(max_len);
    HaloPattern pat;
    std::vector<global_index> remote_global;  // per remote entry, until positions are known
    for (global_index i = 0; i < n; ++i) {
        const int len = source.row(row_begin_ + i, cols.data(), vals.data());
        bool any = false;
        for (int k = 0; k < len; ++k) {
            if (cols[k] >= row_begin_ && cols[k] < row_end_) continue;
            remote_global.push_back(cols[k]);
            pat.remote_vals.push_back(vals[k]);
            any = true;
        }
        if (any) {
            pat.remote_row.push_back(static_cast<local_index>(i));
            pat.remote_ptr.push_back(static_cast<std::int64_t>(remote_global.size()));
        }
    }
    halo_global_ = remote_global;
    std::sort(halo_global_.begin(), halo_global_.end());
    halo_global_.erase(std::unique(halo_global_.begin(), halo_global_.end()), halo_global_.end());
    TOPOKPM_REQUIRE(halo_global_.size() < static_cast<size_t>(std::numeric_limits<local_index>::max()),
                    "halo of ", halo_global_.size(), " rows exceeds 32-bit positions");
    pat.halo_rows = static_cast<global_index>(halo_global_.size());
    pat.remote_col.resize(remote_global.size());
    for (size_t e = 0; e < remote_global.size(); ++e)
        pat.remote_col[e] = static_cast<local_index>(
            std::lower_bound(halo_global_.begin(), halo_global_.end(), remote_global[e]) - halo_global_.begin());

    // Receive side: the halo is sorted by column, hence grouped by owner.
    std::vector<int> want(num_ranks_, 0);
    for (const global_index c : halo_global_) ++want[owner_of(bounds_, c)];
    global_index offset = 0;
    for (int q = 0; q < num_ranks_; ++q) {
        if (want[q] == 0) continue;
        TOPOKPM_REQUIRE(q != rank_, "own column in the halo");
        recv_peer_.push_back(q);
        recv_offset_.push_back(offset);
        recv_count_.push_back(want[q]);
        offset += want[q];
    }
    // Send side: tell every owner which of its rows we need.
    std::vector<int> give(num_ranks_, 0);
    mpi::check(MPI_Alltoall(want.data(), 1, MPI_INT, give.data(), 1, MPI_INT, opts_.comm), "MPI_Alltoall");
    std::vector<int> want_displ(num_ranks_, 0), give_displ(num_ranks_, 0);
    std::partial_sum(want.begin(), want.end() - 1, want_displ.begin() + 1);
    std::partial_sum(give.begin(), give.end() - 1, give_displ.begin() + 1);
    std::vector<global_index> asked(static_cast<size_t>(give_displ.back() + give.back()));
    mpi::check(MPI_Alltoallv(halo_global_.data(), want.data(), want_displ.data(), MPI_INT64_T, asked.data(),
                             give.data(), give_displ.data(), MPI_INT64_T, opts_.comm),
               "MPI_Alltoallv");
    for (int q = 0; q < num_ranks_; ++q) {
        if (give[q] == 0) continue;
        send_peer_.push_back(q);
        send_offset_.push_back(static_cast<global_index>(pat.send_index.size()));
        send_count_.push_back(give[q]);
        for (int k = 0; k < give[q]; ++k) {
            const global_index g = asked[static_cast<size_t>(give_displ[q] + k)];
            TOPOKPM_REQUIRE(g >= row_begin_ && g < row_end_, "rank ", q, " asked rank ", rank_, " for row ", g,
                            " outside [", row_begin_, ", ", row_end_, ")");
            pat.send_index.push_back(static_cast<local_index>(g - row_begin_));
        }
    }
    if (local_op_->precision() == Precision::Single)
        halo_ = make_halo_device<complex_single>(opts_.device, std::move(pat));
    else
        halo_ = make_halo_device<complex_double>(opts_.device, std::move(pat));

    // Shared-window peers: on this node, and peers both ways. Each tells each rank it sends
    // to where that rank's rows start in its send rows, and how many it sends in all.
    if (opts_.shared_memory_halo && num_ranks_ > 1) {
        auto w = std::make_unique<SharedWindow>();
        mpi::check(MPI_Comm_split_type(opts_.comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &w->node),
                   "MPI_Comm_split_type(node)");
        MPI_Group all = MPI_GROUP_NULL, node = MPI_GROUP_NULL;
        MPI_Comm_group(opts_.comm, &all);
        MPI_Comm_group(w->node, &node);
        w->recv_node_rank.assign(recv_peer_.size(), MPI_UNDEFINED);
        MPI_Group_translate_ranks(all, static_cast<int>(recv_peer_.size()), recv_peer_.data(), node,
                                  w->recv_node_rank.data());
        std::vector<int> send_node_rank(send_peer_.size(), MPI_UNDEFINED);
        MPI_Group_translate_ranks(all, static_cast<int>(send_peer_.size()), send_peer_.data(), node,
                                  send_node_rank.data());
        MPI_Group_free(&all);
        MPI_Group_free(&node);
        const auto both_ways = [](const std::vector<int>& peers, int q) {
            return std::find(peers.begin(), peers.end(), q) != peers.end();
        };
        for (size_t p = 0; p < recv_peer_.size(); ++p)
            if (w->recv_node_rank[p] == MPI_UNDEFINED || !both_ways(send_peer_, recv_peer_[p])) w->recv_node_rank[p] = -1;
        w->send_shared.assign(send_peer_.size(), 0);
        for (size_t p = 0; p < send_peer_.size(); ++p)
            w->send_shared[p] = send_node_rank[p] != MPI_UNDEFINED && both_ways(recv_peer_, send_peer_[p]);
        std::vector<std::int64_t> told(2 * send_peer_.size()), heard(2 * recv_peer_.size());
        std::vector<MPI_Request> requests(send_peer_.size() + recv_peer_.size(), MPI_REQUEST_NULL);
        for (size_t p = 0; p < recv_peer_.size(); ++p)
            mpi::check(MPI_Irecv(&heard[2 * p], 2, MPI_INT64_T, recv_peer_[p], layout_tag, opts_.comm, &requests[p]),
                       "MPI_Irecv(halo layout)");
        for (size_t p = 0; p < send_peer_.size(); ++p) {
            told[2 * p] = send_offset_[p];
            told[2 * p + 1] = static_cast<std::int64_t>(pattern().send_index.size());
            mpi::check(MPI_Isend(&told[2 * p], 2, MPI_INT64_T, send_peer_[p], layout_tag, opts_.comm,
                                 &requests[recv_peer_.size() + p]),
                       "MPI_Isend(halo layout)");
        }
        mpi::check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
                   "MPI_Waitall(halo layout)");
        w->peer_offset.assign(recv_peer_.size(), 0);
        w->peer_sends.assign(recv_peer_.size(), 0);
        w->peer_segment.assign(recv_peer_.size(), nullptr);
        for (size_t p = 0; p < recv_peer_.size(); ++p) {
            if (w->recv_node_rank[p] < 0) continue;
            w->peer_offset[p] = heard[2 * p];
            w->peer_sends[p] = heard[2 * p + 1];
            ++w->peers;
        }
        int any = w->peers > 0 ? 1 : 0;
        mpi::check(MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, w->node), "MPI_Allreduce(shared halo)");
        if (any != 0)
            shared_ = std::move(w);
        else
            MPI_Comm_free(&w->node);
    }

    // Overlap on a device rank: its host threads idle while the device sweeps, so a
    // communication thread drives the exchange meanwhile (the H200 node: an 8 MB halo moved
    // only in the final wait, 2.2 ms after a 1.3 ms sweep); needs MPI_THREAD_SERIALIZED.
    sweep_mode_ = opts_.mode;
    if (opts_.mode == CommMode::Overlap && opts_.device != device::no_device) {
        int provided = MPI_THREAD_SINGLE;
        mpi::check(MPI_Query_thread(&provided), "MPI_Query_thread");
        if (provided >= MPI_THREAD_SERIALIZED) sweep_mode_ = CommMode::Task;
    }
    // Collective the first time (MPI_COMM_WORLD split by node, kept): every rank asks,
    // whether it sweeps as task or not.
    const int node_rank = mpi::node_rank(), node_size = mpi::node_size();
    if (sweep_mode_ == CommMode::Task) {
        tasks_ = std::make_unique<TaskMachinery>();
        // The last PU of this rank's own CPU set (the external binding, or the node's cores
        // split among its ranks): pinning every rank's communication thread to the same PU
        // made them time-slice against each other (8 ms per sweep on 2 ranks instead of 0.02).
        std::vector<unsigned> pus =
            topology::rank_cpuset(tasks_->topology, node_rank, node_size);
        if (pus.empty()) pus = tasks_->topology.all_pus();
        tasks_->queue = std::make_unique<tasks::TaskQueue>(tasks_->topology, std::vector<unsigned>{pus.back()});
    }
}

DistributedOperator::~DistributedOperator()
{
    if (!shared_) return;
    // Freeing a window is collective: while an exception unwinds (one rank failing, the job
    // about to abort) the others may never come, so leave it to the abort; after
    // MPI_Finalize there is nothing left to free.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (std::uncaught_exceptions() > 0 || finalized != 0) return;
    release_window();
    MPI_Comm_free(&shared_->node);
}

void DistributedOperator::release_window() const
{
    SharedWindow& w = *shared_;
    if (w.win == MPI_WIN_NULL) return;
    std::visit([&](const auto& h) {  // waits for the device copies that read or write them
        h->unregister_host(w.mine);
        for (char* segment : w.peer_segment)
            if (segment != nullptr) h->unregister_host(segment);
    }, halo_);
    MPI_Barrier(w.node);  // no peer still copies out of this rank's segment
    MPI_Win_unlock_all(w.win);
    MPI_Win_free(&w.win);
    w.mine = nullptr;
    std::fill(w.peer_segment.begin(), w.peer_segment.end(), nullptr);
}

int DistributedOperator::shared_peers() const { return shared_ ? shared_->peers : 0; }

template <class T>
T* DistributedOperator::send_buffer(int r, Exchange& ex) const
{
    BasicHaloDevice<T>& h = halo<T>();
    SharedWindow* w = shared_.get();
    if (w != nullptr && r > w->width) {  // (the halo's precision, hence T, is fixed)
        // Grow: every rank of the node here at once (they sweep in step with width r).
        const std::size_t bytes = w->peers > 0 ? 2 * pattern().send_index.size() * static_cast<std::size_t>(r) * sizeof(T) : 0;
        double need = static_cast<double>(bytes);
        mpi::check(MPI_Allreduce(MPI_IN_PLACE, &need, 1, MPI_DOUBLE, MPI_SUM, w->node), "MPI_Allreduce(window size)");
        // Room on the shared-memory file system for twice the window (else the pages of a
        // full tmpfs fault when touched); the node's ranks decide together.
        int room = need <= 0.5 * shared_memory_free_bytes() ? 1 : 0;
        mpi::check(MPI_Allreduce(MPI_IN_PLACE, &room, 1, MPI_INT, MPI_MIN, w->node), "MPI_Allreduce(window room)");
        release_window();
        if (room == 0) {  // messages from now on, for every peer of every rank of the node
            MPI_Comm_free(&w->node);
            shared_.reset();
            w = nullptr;
        } else {
            MPI_Info info = MPI_INFO_NULL;
            MPI_Info_create(&info);
            MPI_Info_set(info, "alloc_shared_noncontig", "true");  // page-aligned segments: each registers alone
            mpi::check(MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, info, w->node, &w->mine, &w->win),
                       "MPI_Win_allocate_shared(halo)");
            MPI_Info_free(&info);
            mpi::check(MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win), "MPI_Win_lock_all(halo)");
            h.register_host(w->mine, bytes);
            for (size_t p = 0; p < recv_peer_.size(); ++p) {
                if (w->recv_node_rank[p] < 0) continue;
                MPI_Aint size = 0;
                int unit = 1;
                void* base = nullptr;
                mpi::check(MPI_Win_shared_query(w->win, w->recv_node_rank[p], &size, &unit, &base),
                           "MPI_Win_shared_query(halo)");
                w->peer_segment[p] = static_cast<char*>(base);
                h.register_host(base, static_cast<std::size_t>(size));
            }
            w->width = r;
        }
    }
    if (w == nullptr || w->peers == 0) {
        ex.send = h.send_staging(r);
        return static_cast<T*>(ex.send);
    }
    ex.parity = static_cast<int>(w->exchanges % 2);
    // The buffers sit at the window's width, not r: a narrower sweep must not write into the
    // buffer a peer may still read.
    ex.send = reinterpret_cast<T*>(w->mine) + static_cast<std::size_t>(ex.parity) * pattern().send_index.size() * w->width;
    return static_cast<T*>(ex.send);
}

global_index DistributedOperator::row_begin() const
{
    if (opts_.canonical_runs.empty()) return row_begin_;
    TOPOKPM_REQUIRE(opts_.canonical_runs.size() == 1, "row_begin() of a rank owning ", opts_.canonical_runs.size(),
                    " row runs (a 2-D tile): use row_runs()");
    return opts_.canonical_runs.front().first;
}

void DistributedOperator::sum_over_ranks(double* values, std::size_t count) const
{
    if (num_ranks_ == 1) return;
    const double t0 = now();
    mpi::check(MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_DOUBLE, MPI_SUM, opts_.comm),
               "MPI_Allreduce(moments)");
    times_.reduce += now() - t0;
}

template <class T>
BasicHaloDevice<T>& DistributedOperator::halo() const
{
    const auto* h = std::get_if<std::unique_ptr<BasicHaloDevice<T>>>(&halo_);
    TOPOKPM_REQUIRE(h != nullptr, name(), ": blocks of another precision than the halo's");
    return **h;
}

template <class T>
void DistributedOperator::pack(const T* x, int r, T* send) const
{
    const double t0 = now();
    halo<T>().pack(x, r, send);
    times_.pack += now() - t0;
}

template <class T>
void DistributedOperator::post_exchange(int r, Exchange& ex) const
{
    const double t0 = now();
    BasicHaloDevice<T>& h = halo<T>();
    h.wait_packed();
    const T* send = static_cast<const T*>(ex.send);
    T* received = h.halo_staging(r);
    const MPI_Datatype type = std::is_same_v<T, complex_double> ? MPI_C_DOUBLE_COMPLEX : MPI_C_FLOAT_COMPLEX;
    const SharedWindow* w = shared_.get();
    if (w != nullptr && w->win != MPI_WIN_NULL) MPI_Win_sync(w->win);  // the pack is visible before "packed"
    ex.requests.assign(recv_peer_.size() + send_peer_.size(), MPI_REQUEST_NULL);
    for (size_t p = 0; p < recv_peer_.size(); ++p) {
        const bool window = w != nullptr && w->recv_node_rank[p] >= 0;
        mpi::check(window ? MPI_Irecv(nullptr, 0, MPI_BYTE, recv_peer_[p], packed_tag, opts_.comm, &ex.requests[p])
                          : MPI_Irecv(received + recv_offset_[p] * r, static_cast<int>(recv_count_[p] * r), type,
                                      recv_peer_[p], halo_tag, opts_.comm, &ex.requests[p]),
                   "MPI_Irecv(halo)");
    }
    for (size_t p = 0; p < send_peer_.size(); ++p) {
        MPI_Request* request = &ex.requests[recv_peer_.size() + p];
        const bool window = w != nullptr && w->send_shared[p] != 0;
        mpi::check(window ? MPI_Isend(nullptr, 0, MPI_BYTE, send_peer_[p], packed_tag, opts_.comm, request)
                          : MPI_Isend(send + send_offset_[p] * r, static_cast<int>(send_count_[p] * r), type,
                                      send_peer_[p], halo_tag, opts_.comm, request),
                   "MPI_Isend(halo)");
    }
    times_.pack += now() - t0;
}

template <class T>
void DistributedOperator::finish_exchange(Exchange& ex, int r) const
{
    const double t0 = now();
    mpi::check(MPI_Waitall(static_cast<int>(ex.requests.size()), ex.requests.data(), MPI_STATUSES_IGNORE),
               "MPI_Waitall(halo)");
    const double t1 = now();
    times_.wait += t1 - t0;
    BasicHaloDevice<T>& h = halo<T>();
    SharedWindow* w = shared_.get();
    if (w != nullptr && w->win != MPI_WIN_NULL) MPI_Win_sync(w->win);  // the peers' packs, as "packed" said
    std::vector<typename BasicHaloDevice<T>::Piece> pieces(recv_peer_.size());
    const T* received = h.halo_staging(r);
    for (size_t p = 0; p < recv_peer_.size(); ++p) {
        const T* values = received + recv_offset_[p] * r;
        if (w != nullptr && w->recv_node_rank[p] >= 0)
            values = reinterpret_cast<const T*>(w->peer_segment[p]) +
                     static_cast<global_index>(ex.parity) * w->peer_sends[p] * w->width + w->peer_offset[p] * r;
        pieces[p] = {values, recv_offset_[p], recv_count_[p]};
    }
    h.unpack(r, pieces);
    if (w != nullptr) ++w->exchanges;
    times_.pack += now() - t1;
}

void DistributedOperator::do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const
{
    if (precision() == Precision::Single)
        apply_in_single(x, y, ops, dots);  // the float sweep, x rounded and y widened
    else
        sweep(x, y, ops, dots);
}

void DistributedOperator::do_apply(const BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                                   const AugmentedOps& ops, DotSums* dots) const
{
    if (precision() != Precision::Single) Operator::do_apply(x, y, ops, dots);  // refuses: a double operator
    sweep(x, y, ops, dots);
}

template <class T>
void DistributedOperator::sweep(const BasicBlockVector<T>& x, BasicBlockVector<T>& y, const AugmentedOps& ops,
                                DotSums* dots) const
{
    const int r = x.num_cols();
    DotSums* want = ops.want_dots ? dots : nullptr;
    BasicHaloDevice<T>& h = halo<T>();
    const T* xp = h.x_values(x);  // where the local operator reads x
    auto local = [&] {
        const double t0 = now();
        local_op_->apply(x, y, ops, want);
        times_.local += now() - t0;
    };

    Exchange ex;
    // Task mode with nothing to exchange (one rank): keep every thread on the sweep.
    const bool idle = recv_peer_.empty() && send_peer_.empty();
    const CommMode mode = sweep_mode_ == CommMode::Task && idle ? CommMode::Overlap : sweep_mode_;
    // Task mode: the team runs one thread short for the whole apply, so that none of its
    // threads shares the communication thread's PU (the last of the rank's set).
    struct TeamSize {
        int team = omp_get_max_threads();
        explicit TeamSize(bool short_by_one) { if (short_by_one && team > 1) omp_set_num_threads(team - 1); }
        ~TeamSize() { omp_set_num_threads(team); }
    } team_size(mode == CommMode::Task);

    pack(xp, r, send_buffer<T>(r, ex));  // a CPU rank's pack is a loop for the team; a GPU rank's is queued ahead of the local sweep
    switch (mode) {
    case CommMode::Vector:
        post_exchange<T>(r, ex);
        finish_exchange<T>(ex, r);
        local();
        break;
    case CommMode::Overlap:
        post_exchange<T>(r, ex);
        local();
        finish_exchange<T>(ex, r);
        break;
    case CommMode::Task: {
        tasks::Task comm;
        comm.threads = 1;
        comm.body = [&] {
            omp_set_num_threads(1);  // this thread's own setting: nothing here starts a second team
            post_exchange<T>(r, ex);
            finish_exchange<T>(ex, r);
        };
        const tasks::TaskHandle handle = tasks_->queue->enqueue(std::move(comm));
        try {
            local();
        } catch (...) {
            handle->wait();
            throw;
        }
        handle->wait();
        break;
    }
    }
    if (want != nullptr && want->xx.size() != static_cast<size_t>(r)) want->reset(r);
    {
        const double t0 = now();
        h.apply_remote(xp, h.y_values(y), r, ops.scale, want);
        times_.remote += now() - t0;
    }
    ++times_.applies;

    if (want != nullptr && opts_.reduce_every_sweep && num_ranks_ > 1) {
        const double t0 = now();
        std::vector<double> buf(static_cast<size_t>(3) * r);
        for (int c = 0; c < r; ++c) {
            buf[c] = want->xx[c];
            buf[r + 2 * c] = want->yx[c].real();
            buf[r + 2 * c + 1] = want->yx[c].imag();
        }
        mpi::allreduce_sum(buf, opts_.comm);
        for (int c = 0; c < r; ++c) {
            want->xx[c] = buf[c];
            want->yx[c] = complex_type(buf[r + 2 * c], buf[r + 2 * c + 1]);
        }
        times_.reduce += now() - t0;
    }
}

std::string DistributedOperator::name() const
{
    return detail::concat("mpi-", local_op_->name(), "-", comm_mode_name(opts_.mode));
}

OperatorCost DistributedOperator::cost() const
{
    const double remote = static_cast<double>(pattern().remote_vals.size());
    const double entry = sizeof(complex_type) + sizeof(local_index);
    OperatorCost c = local_op_->cost();
    c.nonzeros += remote;
    c.matrix_bytes += remote * entry;
    c.storage_bytes += remote * entry + static_cast<double>(pattern().remote_row.size()) * 12.0;
    return c;
}

}  // namespace topokpm::numerics
