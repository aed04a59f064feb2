#pragma once
/// @file distributed_operator.hpp
/// The augmented SpMMV of a row-distributed matrix over MPI (docs/scaling.md, part 2;
/// seed 000 Fig. 3 and 5, seed 002 Fig. 4).
///
/// Rank p owns the contiguous rows [bounds[p], bounds[p+1]) of the canonical order and
/// builds only those. Its rows are split by column at build time:
///   local part   columns inside the own range: an operator on the rank's rows that the
///                caller builds with numerics::make_operator and spec.rows = the rank's
///                range (SELL-C-σ with local column indices col - row_begin, or the
///                matrix-free stencil of the rank's x-slab);
///   remote part  the other columns, mapped to 32-bit positions h in a halo buffer of
///                halo_rows x R (sorted by owner rank, then global column, deduplicated),
///                stored as a compressed list of the few rows that have any (the x-plane
///                next to each slab boundary for the lattice models).
/// The communication pattern (who sends which of its rows to whom) is built once with an
/// MPI_Alltoall of counts and an MPI_Alltoallv of global indices; owners come from the
/// bounds, not from communication.
///
/// One apply(): pack the rows others need into the send buffer, exchange with non-blocking
/// point-to-point messages (or, with a peer on the same node, through the node's shared
/// window: DistributedOptions::shared_memory_halo), run the local part, then the remote
/// correction
///     y_i += scale * sum_h H_ih halo_h,     <y|x>_c += conj(dy_ic) x_ic
/// which is exact because <y|x> is linear in y (and <x|x> does not involve y): the dots of
/// the local sweep plus the remote correction are the dots of the full sweep. The three
/// --comm-mode values differ only in what overlaps:
///   vector   pack, send/receive, wait; then local and remote parts (no overlap; baseline)
///   overlap  post the non-blocking exchange, local part, wait, remote part (relies on the
///            MPI library progressing in the background)
///   task     a communication task on a dedicated thread (the runtime's TaskQueue, one PU
///            of the rank's set) sends, receives, waits and unpacks while the OpenMP team
///            minus one thread runs the local part; then the remote part. MPI is called off
///            the main thread: needs MPI_THREAD_SERIALIZED or better.
/// On a device rank (a GPU, or the host stand-in) overlap sweeps as task when MPI provides
/// MPI_THREAD_SERIALIZED: the rank's host threads are idle while the device sweeps, and
/// without a thread calling MPI meanwhile the halo moves only in the final wait.
/// The pack always starts on the calling thread: a CPU rank's is a loop for its team, a GPU
/// rank's gather and download are queued on the halo's copy stream ahead of the local sweep
/// (post_exchange waits for them). On a GPU rank in task mode the bus copies and the
/// exchange thus overlap the local sweep.
/// Where x and y live: DistributedOptions::device selects the HaloDevice (halo_device.hpp)
/// the pack and the remote part run on, the local operator's device: the host (a CPU rank),
/// a CUDA GPU (a GPU rank: the halo gathered on the device into a page-locked buffer, sent
/// by MPI, copied back and applied there; only the halo rows and the dots cross the bus),
/// or the host stand-in (tests). Ranks of one job may differ; the exchange is the same.
/// Dots: local per sweep; KPM sums its moment array over the ranks once at the end
/// (sum_over_ranks), or, with reduce_every_sweep, every apply() reduces its dots
/// (seed 004 Table III's comparison).
/// One step per pass: fused_steps() keeps the default 1 (the halo is one step deep; two
/// fused steps would need a halo of depth 2), so the KPM recurrence runs one sweep per
/// apply() under MPI even where the local operator fuses two (the CPU stencil, graphene).

#include <mpi.h>

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "numerics/base/operator.hpp"
#include "numerics/base/row_source.hpp"
#include "numerics/distributed/halo_device.hpp"

namespace topokpm::numerics {

enum class CommMode { Vector, Overlap, Task };

/// "vector", "overlap", "task"; anything else is an InputError naming --comm-mode.
CommMode parse_comm_mode(const std::string& text);
const char* comm_mode_name(CommMode mode);

struct DistributedOptions {
    CommMode mode = CommMode::Overlap;
    bool reduce_every_sweep = false; ///< allreduce the dots in every apply()
    MPI_Comm comm = MPI_COMM_WORLD;
    /// The canonical rows of this rank when `source` is in a permuted order (a 2-D
    /// decomposition: PermutedRows of row_permutation.hpp, bounds = RowPermutation::bounds());
    /// what row_runs() reports. Empty: the source is in canonical order.
    RowRuns canonical_runs;
    /// Where the local operator keeps x and y: device::no_device (the host arrays), a CUDA
    /// device index (the local operator is a CUDA one on it) or device::host_standin (the
    /// local operator is make_host_standin_operator's). See halo_device.hpp.
    int device = device::no_device;
    /// Peers on this node (MPI_COMM_TYPE_SHARED) exchange through a shared window instead
    /// of messages: each rank packs into its segment of the window (two alternating
    /// buffers), a zero-byte message says "packed", the peer copies its rows straight out
    /// of that segment (a GPU rank: one bus copy each way, no MPI copy). Off-node peers and
    /// a node whose shared-memory file system has no room use messages. false: messages
    /// everywhere (tests compare the two).
    bool shared_memory_halo = true;
};

/// Seconds spent per phase since construction (accumulated over apply() calls).
struct DistributedTimes {
    double pack = 0, local = 0, wait = 0, remote = 0, reduce = 0;  ///< pack: pack + unpack
    long applies = 0;
};

class DistributedOperator final : public Operator {
public:
    /// Collective over opts.comm. `bounds` has P + 1 ascending entries, bounds[0] = 0,
    /// bounds[P] = source.num_rows() (e.g. runtime/hetero split_rows); this rank builds
    /// rows [bounds[rank], bounds[rank + 1]).
    /// @param local  the local part: an operator on the rank's rows applying exactly the
    ///               entries of those rows whose columns are inside the range, renumbered
    ///               from row_begin (make_operator with spec.rows = the rank's range builds
    ///               it for every kind). Required.
    DistributedOperator(const RowSource& source, std::vector<global_index> bounds, DistributedOptions opts,
                        std::shared_ptr<const Operator> local);
    ~DistributedOperator() override;

    global_index num_rows() const override { return row_end_ - row_begin_; }
    global_index global_rows() const override { return bounds_.back(); }
    /// Canonical first row of a rank whose rows are one run; throws (internal error) for a
    /// tile of several runs: its callers must use row_runs().
    global_index row_begin() const override;
    RowRuns row_runs() const override
    {
        return opts_.canonical_runs.empty() ? RowRuns{{row_begin_, row_end_}} : opts_.canonical_runs;
    }
    int rank() const override { return rank_; }
    int num_ranks() const override { return num_ranks_; }
    bool dots_reduced() const override { return opts_.reduce_every_sweep || num_ranks_ == 1; }
    void sum_over_ranks(double* values, std::size_t count) const override;

    std::string name() const override;
    OperatorCost cost() const override;
    /// The local part's: a single-precision local operator gives a single-precision
    /// distributed one (float halo, double dots; docs/cluster.md).
    Precision precision() const override { return local_op_->precision(); }
    /// DistributedOptions::device: where x and y live on this rank.
    int blocks_device() const override { return opts_.device; }

    /// Rows of the halo buffer (distinct remote columns) and rows sent per sweep.
    global_index halo_rows() const { return static_cast<global_index>(halo_global_.size()); }
    global_index send_rows() const { return static_cast<global_index>(pattern().send_index.size()); }
    /// Global column of halo position h (ascending in h), for tests.
    const std::vector<global_index>& halo_columns() const { return halo_global_; }
    /// Where the pack and the remote part run ("host", "host-standin", "cuda:D").
    std::string halo_device() const
    {
        return std::visit([](const auto& h) { return h->name(); }, halo_);
    }
    const DistributedTimes& times() const { return times_; }
    CommMode mode() const { return opts_.mode; }
    /// How this rank sweeps: mode(), except overlap on a device rank (DistributedOptions::
    /// device set) where MPI provides MPI_THREAD_SERIALIZED, which sweeps as task.
    CommMode sweep_mode() const { return sweep_mode_; }
    /// Peers this rank exchanges with through the node's shared window (the others: messages).
    int shared_peers() const;

protected:
    void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override;
    void do_apply(const BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                  const AugmentedOps& ops, DotSums* dots) const override;

private:
    struct Exchange;
    struct SharedWindow;
    /// The buffer this sweep packs into: send_staging(r), or this rank's segment of the
    /// shared window (grown to width r first: collective over the node's ranks).
    template <class T>
    T* send_buffer(int r, Exchange& ex) const;
    /// Frees the shared window (collective over the node's ranks), after the device let go
    /// of its memory; nothing when none is allocated.
    void release_window() const;
    /// One apply() in the local part's precision T (both do_apply overloads).
    template <class T>
    void sweep(const BasicBlockVector<T>& x, BasicBlockVector<T>& y, const AugmentedOps& ops, DotSums* dots) const;
    /// The halo device of precision T (exactly one exists: the local part's precision).
    template <class T>
    BasicHaloDevice<T>& halo() const;
    const HaloPattern& pattern() const
    {
        return std::visit([](const auto& h) -> const HaloPattern& { return h->pattern(); }, halo_);
    }
    /// Pack x into the send staging (timed as pack).
    template <class T>
    void pack(const T* x, int r, T* send) const;
    /// Post the messages (timed as pack).
    template <class T>
    void post_exchange(int r, Exchange& ex) const;
    /// Wait for them (timed as wait), then unpack the halo (timed as pack).
    template <class T>
    void finish_exchange(Exchange& ex, int r) const;

    std::vector<global_index> bounds_;
    DistributedOptions opts_;
    int rank_ = 0, num_ranks_ = 1;
    global_index row_begin_ = 0, row_end_ = 0;
    std::shared_ptr<const Operator> local_op_;  ///< the local part
    std::vector<global_index> halo_global_;
    // pattern: per peer rank, rows received (halo offset, count) and sent (offset into the
    // pattern's send_index)
    std::vector<int> recv_peer_, send_peer_;
    std::vector<global_index> recv_offset_, recv_count_, send_offset_, send_count_;
    /// The remote part and the packing, where x and y live, in the local part's precision.
    std::variant<std::unique_ptr<BasicHaloDevice<complex_double>>, std::unique_ptr<BasicHaloDevice<complex_single>>>
        halo_;
    mutable DistributedTimes times_;
    CommMode sweep_mode_ = CommMode::Overlap;  ///< see sweep_mode()
    struct TaskMachinery;
    std::unique_ptr<TaskMachinery> tasks_;
    mutable std::unique_ptr<SharedWindow> shared_;  ///< null: no rank of this node exchanges through it
};

}  // namespace topokpm::numerics
