#include "app/mpi/distribution.hpp"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "app/cli/operator_choice.hpp"
#include "app/cli/resolved_run.hpp"
#include "numerics/distributed/distributed_operator.hpp"
#include "numerics/distributed/row_permutation.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/base/log.hpp"
#include "runtime/device/device.hpp"
#include "runtime/hetero/work_split.hpp"
#include "runtime/mpi/communicator.hpp"
#include "runtime/mpi/environment.hpp"
#include "runtime/topology/affinity.hpp"
#include "runtime/topology/topology.hpp"

namespace topokpm::app {

bool launched_by_mpi()
{
    return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
           std::getenv("PMI_RANK") != nullptr;
}

int use_threads(const RunConfig& cfg)
{
    if (cfg.runtime.threads > 0) omp_set_num_threads(cfg.runtime.threads);
    return omp_get_max_threads();
}

int use_threads_alone(const RunConfig& cfg)
{
    const int threads = use_threads(cfg);
    const std::string w = topology::threads_warning(threads, omp_get_num_procs(), "this process's");
    if (!w.empty()) log::perf_warning(w);
    return threads;
}

Distribution Distribution::from_mpi(const RunConfig& cfg)
{
    Distribution d;
    d.rank_ = mpi::rank();
    d.size_ = mpi::size();
    d.provenance_ = cfg.provenance;
    if (d.size_ == 1) {
        use_threads_alone(cfg);
        return d;
    }
    if (!cfg.runtime.pin_threads) return d;
    // One CPU set per rank of the node (the launcher's binding when it gave one), the
    // rank's OpenMP threads pinned inside it, and GHOST's PERFWARNINGs for odd layouts.
    const int local_rank = mpi::node_rank(), local_ranks = mpi::node_size();  // collective: on every rank
    // --device cuda: the node ranks that drive a GPU (operator_spec() below, the same rule).
    // Beside CPU ranks each occupies one core (rank_cpuset) and runs no more threads than
    // that core has PUs: it queues kernels and copies, and the CPU ranks get the other cores.
    int gpu_ranks = 0;
    if (cfg.storage.device == DeviceKind::Cuda)
        for (int r = 0, visible = device::visible_device_count(); r < local_ranks; ++r)
            gpu_ranks += device::rank_device(r, visible) >= 0 ? 1 : 0;
    std::unique_ptr<const topology::Topology> topo;
    std::vector<unsigned> set;
    int threads = use_threads(cfg);  // the team that runs (--threads), not OpenMP's default
    d.agree([&] {  // a binding refused on one rank is one message, not an abort
        topo = std::make_unique<const topology::Topology>();
        set = topology::rank_cpuset(*topo, local_rank, local_ranks, gpu_ranks);
        if (local_rank < gpu_ranks && gpu_ranks < local_ranks && threads > static_cast<int>(set.size())) {
            threads = static_cast<int>(set.size());
            omp_set_num_threads(threads);
        }
        topology::pin_openmp_threads(*topo, set, threads);
    });
    d.cpuset_ = topology::format_pus(set);
    topology::LayoutFacts facts;
    facts.ranks_per_node = local_ranks;
    facts.threads = threads;
    facts.cpuset_pus = static_cast<int>(set.size());
    facts.cpuset_numa_nodes = topo->numa_nodes_spanned(set);
    if (d.root()) topology::warn_about_layout(topo->info(), facts);
    return d;
}

void Distribution::agree(const std::function<void()>& validate) const
{
    // Messages name the flags the user typed, without the --config file's values, before
    // any rank prints them.
    const std::function<void()> named = [&] { with_user_messages(provenance_, validate); };
    if (!distributed()) {
        named();
        return;
    }
    mpi::agree_or_throw(named);
}

double Distribution::sum(double value) const { return distributed() ? mpi::allreduce_sum(value) : value; }

void Distribution::max(std::vector<std::int64_t>& values) const
{
    if (!distributed()) return;
    mpi::check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_INT64_T, MPI_MAX,
                             MPI_COMM_WORLD),
               "MPI_Allreduce(MPI_MAX)");
}

std::vector<std::pair<global_index, global_index>> Distribution::row_runs(global_index num_rows) const
{
    if (bounds_.empty()) return {{0, num_rows}};
    return runs_;
}

std::string Distribution::layout() const
{
    if (bounds_.empty()) return "1 rank";
    auto list = [](const auto& values) {
        std::string t;
        for (std::size_t i = 0; i < values.size(); ++i) t += (i ? ":" : "") + std::to_string(values[i]);
        return t;
    };
    if (!grid_.x_cuts.empty())
        return detail::concat("2d grid ", grid_.px, "x", grid_.py, " x ", list(grid_.x_cuts), " y ", list(grid_.y_cuts));
    return "1d rows " + list(bounds_);
}

SpectralBounds Distribution::gershgorin(const RowSource& source) const
{
    if (!distributed()) return gershgorin_bounds(source);
    TOPOKPM_REQUIRE(bounds_.size() == static_cast<size_t>(size_) + 1, "gershgorin() before split_rows()");
    SpectralBounds mine{INFINITY, -INFINITY};
    for (const auto& [b, e] : runs_) {
        const SpectralBounds run = gershgorin_bounds(source, b, e);
        mine = {std::min(mine.lower, run.lower), std::max(mine.upper, run.upper)};
    }
    return {-mpi::allreduce_max(-mine.lower), mpi::allreduce_max(mine.upper)};
}

namespace {

/// The canonical row runs of every rank's tile of a 2-D decomposition: rank q = i py + j owns
/// the tile (i, j), one run per x-plane, canonical order inside.
std::vector<RowRuns> tile_runs(const hetero::ProcessGrid& grid, const hamiltonians::Model& model, int ranks)
{
    const auto& mp = model.params();
    const global_index column = static_cast<global_index>(model.orbitals_per_site()) * mp.nz;
    std::vector<RowRuns> all(static_cast<size_t>(ranks));
    for (int q = 0; q < ranks; ++q) {
        const int i = q / grid.py, j = q % grid.py;
        for (auto x = global_index(grid.x_cuts[i]); x < global_index(grid.x_cuts[i + 1]); ++x)
            all[size_t(q)].push_back({column * (x * mp.ny + global_index(grid.y_cuts[j])),
                                      column * (x * mp.ny + global_index(grid.y_cuts[j + 1]))});
    }
    return all;
}

}  // namespace

void Distribution::split_rows(const RunConfig& cfg, const hamiltonians::Model& model)
{
    grid_ = {};
    order_.reset();
    if (!distributed()) {
        bounds_ = {0, model.num_rows()};
        runs_ = {{0, model.num_rows()}};
        return;
    }
    // The decomposition, agreed (every rank decides the same from the same inputs; an
    // impossible 2d is one message); --plan takes the same (rank_layout).
    RankLayout layout;
    agree([&] { layout = rank_layout(cfg, model, size_); });
    grid_ = layout.grid;
    if (!grid_.x_cuts.empty()) {
        const std::vector<RowRuns> all = tile_runs(grid_, model, size_);
        runs_ = all[size_t(rank_)];
        weights_.assign(size_t(size_), 1.0);
        if (grid_.py == 1) {  // x-slabs of whole planes: the canonical order already is rank-major
            bounds_.assign(1, 0);
            for (const RowRuns& r : all) bounds_.push_back(r.back().second);
            runs_ = {{runs_.front().first, runs_.back().second}};
        } else {
            order_ = std::make_shared<const numerics::RowPermutation>(all);
            bounds_ = order_->bounds();
        }
        if (root())
            log::info("decomposition: 2d, process grid ", grid_.px, " x ", grid_.py, " (x, y), halo ",
                      hetero::tile_halo(*lattice_halo(model), grid_, 0).rows, " rows on rank 0");
        return;
    }
    const global_index block = layout.unit;

    if (hetero::is_auto_weights(cfg.runtime.weights)) {
        // Each rank's SpMMV rate on the same rows: the `auto` weights (GHOST left them as
        // future work, seed 000 §4.1).
        // The probe is the operator this run builds (--matrix, --precision), on the rows one
        // rank owns under equal weights: a smaller sample fits a CPU's cache and is launch-bound
        // on a GPU (64 Ki rows of ti measured 173 Gflop/s for GPU + CPU ranks against 1520
        // for the GPU alone on an H200, issue 36), so it would hand the CPU most of the rows.
        // At most 4 Mi rows (64 MiB per vector column, past any cache; the H200 run probed
        // 3.2 M), so a large rank builds and sweeps a part of its rows, not a second copy.
        // At the block width the run sweeps with (resolve_run), the width its operator was chosen for.
        constexpr global_index max_sample = global_index(1) << 22;
        const global_index sample = std::min(model.num_rows() / size_, max_sample) / block * block;
        TOPOKPM_REQUIRE(cfg.kpm.sweep_width >= 1, "--weights auto before the run was resolved (resolve_run)");
        double rate = 0.0;
        agree([&] {  // a probe that fails on one rank (memory) ends every rank with one message
            rate = numerics::operator_rate(operator_spec(cfg), hamiltonians::operator_source(model),
                                           std::max(sample, block), cfg.kpm.sweep_width);
        });
        const std::vector<double> rates = mpi::allgather(rate);
        // The halo each rank's x-slab receives whatever its share (its two faces): a rank
        // weighted down keeps it (an H200 beside 8 cores: 3 of 200 planes gave the CPU rank a
        // 1.9 ms sweep against the GPU's 1.3, issue 36), so auto charges it (weights_from_rates).
        std::vector<double> halo;
        if (const auto lat = lattice_halo(model); lat && lat->nx >= static_cast<std::uint64_t>(size_)) {
            hetero::ProcessGrid slabs;
            slabs.px = size_;
            slabs.y_cuts = {0, lat->ny};
            for (int i = 0; i <= size_; ++i) slabs.x_cuts.push_back(lat->nx * static_cast<std::uint64_t>(i) / size_);
            for (int q = 0; q < size_; ++q) halo.push_back(static_cast<double>(hetero::tile_halo(*lat, slabs, q).rows));
        }
        agree([&] { weights_ = hetero::weights_from_rates(rates, halo, static_cast<double>(model.num_rows())); });
        if (root()) {
            std::string list;
            for (double w : weights_) list += (list.empty() ? "" : ":") + detail::concat(w);
            log::info("weights     : auto = ", list, " (each rank's ", to_string(cfg.storage.matrix), " SpMMV rate on the same ",
                      std::max(sample, block), " rows",
                      halo.empty() ? std::string()
                                   : detail::concat("; its halo of ", static_cast<global_index>(halo.front()),
                                                    " rows charged as ", hetero::halo_row_cost, " own rows each"),
                      ")");
        }
    }
    // The same inputs on every rank, so every rank fails alike (a bad --weights, more ranks
    // than sites or planes): agreed, the message is printed once and no rank aborts.
    std::vector<hetero::RowRange> ranges;
    agree([&] {
        if (!hetero::is_auto_weights(cfg.runtime.weights)) weights_ = hetero::parse_weights(cfg.runtime.weights, size_);
        ranges = hetero::split_rows(static_cast<std::uint64_t>(model.num_rows()), static_cast<std::uint64_t>(block),
                                    weights_);
    });
    bounds_.assign(1, 0);
    for (const auto& r : ranges) bounds_.push_back(static_cast<global_index>(r.end));
    runs_ = {{bounds_[rank_], bounds_[rank_ + 1]}};
}

numerics::RowRange Distribution::rows() const
{
    if (bounds_.empty()) return {};  // before the split: all rows
    if (order_) return {0, -1, runs_};  // a 2-D tile (possibly one run: one x-plane's y range)
    return {runs_[0].first, runs_[0].second};
}

global_index Distribution::halo_rows(const hamiltonians::Model& model) const
{
    if (!distributed() || bounds_.empty()) return 0;
    const global_index own = bounds_[rank_ + 1] - bounds_[rank_];
    const std::optional<hetero::LatticeHalo> lat = lattice_halo(model);
    if (!lat) return model.num_rows() - own;
    if (!grid_.x_cuts.empty()) return static_cast<global_index>(hetero::tile_halo(*lat, grid_, rank_).rows);
    if (lat->nx < static_cast<std::uint64_t>(size_)) return model.num_rows() - own;
    hetero::ProcessGrid slabs;
    slabs.px = size_;
    slabs.y_cuts = {0, lat->ny};
    for (int i = 0; i <= size_; ++i) slabs.x_cuts.push_back(lat->nx * static_cast<std::uint64_t>(i) / size_);
    return static_cast<global_index>(hetero::tile_halo(*lat, slabs, rank_).rows);
}

numerics::OperatorSpec Distribution::operator_spec(const RunConfig& cfg) const
{
    numerics::OperatorSpec s = app::operator_spec(cfg);
    s.rows = rows();
    // --device cuda under mpirun: one rank per GPU, the node's other ranks on the CPU.
    if (distributed() && s.device == numerics::Backend::Cuda) {
        s.device_index = device::rank_device(mpi::node_rank(), device::visible_device_count());
        if (s.device_index < 0) s.device = numerics::Backend::Cpu;
    }
    return s;
}

std::shared_ptr<const Operator> Distribution::wrap(const RunConfig& cfg, const RowSource& matrix,
                                                   std::shared_ptr<const Operator> local, bool judge_halo) const
{
    if (!distributed()) return local;
    TOPOKPM_REQUIRE(bounds_.size() == static_cast<size_t>(size_) + 1, "wrap() before split_rows()");
    numerics::DistributedOptions opts;
    opts.mode = numerics::parse_comm_mode(cfg.runtime.comm_mode);
    opts.reduce_every_sweep = cfg.runtime.reduce_every_sweep;
    const numerics::OperatorSpec spec = operator_spec(cfg);  // the halo lives where `local` does
    opts.device = spec.device == numerics::Backend::Cuda ? spec.device_index : device::no_device;
    std::shared_ptr<const numerics::DistributedOperator> op;
    if (!order_) {
        op = std::make_shared<numerics::DistributedOperator>(matrix, bounds_, opts, std::move(local));
    } else {
        // A 2-D tile: the operator sees the matrix in the rank-major order (its rows
        // contiguous) and reports the canonical runs for the start vectors.
        opts.canonical_runs = runs_;
        const numerics::PermutedRows permuted(matrix, *order_);
        op = std::make_shared<numerics::DistributedOperator>(permuted, bounds_, opts, std::move(local));
    }
    if (judge_halo) warn_about_halo(*op, opts.device != device::no_device);
    return op;
}

void Distribution::warn_about_halo(const numerics::DistributedOperator& op, bool gpu) const
{
    // A rank weighted down to a small share keeps the halo of its slab's faces, which does not
    // shrink with the share: once the halo has more than half as many rows as the rank owns,
    // the rank moves at least 16 bytes per column through MPI for every 2 rows it sweeps
    // (~100 bytes from memory), and at the few GB/s of a node's shared-memory MPI against tens
    // of GB/s of memory that rivals its share. Seen on an H200 node (2026-11-28,
    // docs/cuda_backend.md): --weights auto gave an 8-core CPU rank 3 of 200 x-planes beside
    // the GPU rank, a halo of 2 planes, and the pair ran at 0.37-0.50 of both alone. Equal
    // shares are not judged: there the rank count is the user's choice of granularity.
    const std::vector<double> mine{double(op.num_rows()), double(op.halo_rows()), gpu ? 1.0 : 0.0};
    const std::vector<double> all = mpi::gatherv(mine);
    if (!root()) return;
    int gpus = 0;
    double total = 0.0;
    for (int q = 0; q < size_; ++q) {
        gpus += all[mine.size() * q + 2] > 0.0 ? 1 : 0;
        total += all[mine.size() * q];
    }
    const double mean = total / size_;
    const bool mixed = gpus > 0 && gpus < size_;
    for (int q = 0; q < size_; ++q) {
        const double rows = all[mine.size() * q], halo = all[mine.size() * q + 1];
        if (rows >= 0.5 * mean || halo <= 0.5 * rows) continue;
        char share[32], ratio[32];
        std::snprintf(share, sizeof share, "%.3f", rows / mean);
        std::snprintf(ratio, sizeof ratio, "%.2f", halo / std::max(rows, 1.0));
        log::perf_warning("rank ", q, (all[mine.size() * q + 2] > 0.0 ? " (GPU)" : " (CPU)"), " holds ",
                          static_cast<global_index>(rows), " rows (", share, " of the mean share) and receives a halo of ",
                          static_cast<global_index>(halo), " rows per sweep, ", ratio,
                          " times its own: its exchange can cost more than its share of the sweep; ",
                          mixed ? detail::concat("with GPU and CPU ranks mixed, run one rank per GPU (mpirun -np ", gpus,
                                                 " here), docs/cuda_backend.md")
                                : std::string("fewer ranks or more even --weights shrink it"));
    }
}

AttributeList Distribution::imbalance(const Operator& op) const
{
    if (!distributed()) return {};
    const auto* d = dynamic_cast<const numerics::DistributedOperator*>(&op);
    double busy = 0.0, wait = 0.0;
    if (d != nullptr && d->times().applies > 0) {
        const numerics::DistributedTimes& t = d->times();
        busy = (t.pack + t.local + t.remote) / double(t.applies);
        wait = t.wait / double(t.applies);
    }
    const double slowest = mpi::allreduce_max(busy);
    const double mean = mpi::allreduce_sum(busy) / size_;
    const double wait_mean = mpi::allreduce_sum(wait) / size_;
    // Where each rank's sweep goes, for jobs small enough to read (a GPU rank beside CPU
    // ranks: which side waits, and for what): pack, local, remote, wait per sweep.
    if (d != nullptr && size_ <= 8) {
        const numerics::DistributedTimes& t = d->times();
        const double per = t.applies > 0 ? 1e3 / double(t.applies) : 0.0;
        const bool gpu = op.name().find("cuda") != std::string::npos;
        const std::vector<double> mine{t.pack * per, t.local * per, t.remote * per, t.wait * per,
                                       double(op.num_rows()), gpu ? 1.0 : 0.0, double(d->shared_peers())};
        const std::vector<double> all = mpi::gatherv(mine);
        const auto ms = [](double v) {
            char b[32];
            std::snprintf(b, sizeof b, "%.3f ms", v);
            return std::string(b);
        };
        for (int r = 0; root() && r < size_; ++r) {
            const double* v = all.data() + mine.size() * r;
            log::info("rank ", r, (v[5] > 0 ? " (GPU)" : " (CPU)"), ": ", static_cast<global_index>(v[4]),
                      " rows, ", static_cast<int>(v[6]), " peer(s) through shared memory; per sweep pack ", ms(v[0]),
                      ", local ", ms(v[1]), ", remote ", ms(v[2]), ", halo wait ", ms(v[3]));
        }
    }
    return {{"sweep_busy_seconds_slowest", slowest},
            {"sweep_busy_seconds_mean", mean},
            {"sweep_wait_seconds_mean", wait_mean},
            {"rank_imbalance", mean > 0.0 ? slowest / mean : 1.0}};
}

AttributeList Distribution::provenance(const RunConfig& cfg) const
{
    AttributeList out{{"ranks", std::int64_t(size_)}};
    if (!distributed()) return out;
    std::string weights, rows;
    for (double w : weights_) weights += (weights.empty() ? "" : ":") + detail::concat(w);
    for (int q = 0; q < size_; ++q) rows += (q ? ":" : "") + detail::concat(bounds_[q + 1] - bounds_[q]);
    // CPU sets of all ranks, gathered as text on rank 0 ("0-3;4-7").
    std::vector<char> mine(cpuset_.begin(), cpuset_.end());
    mine.push_back(';');
    std::vector<int> counts;
    std::vector<char> all;
    {
        std::vector<int> m(mine.begin(), mine.end());
        const std::vector<int> g = mpi::gatherv(m, 0, &counts);
        all.assign(g.begin(), g.end());
    }
    std::string sets(all.begin(), all.end());
    if (!sets.empty()) sets.pop_back();
    out.push_back({"weights", weights});
    out.push_back({"rows_per_rank", rows});
    out.push_back({"decomposition", grid_.x_cuts.empty() ? std::string("1d")
                                                         : detail::concat("2d ", grid_.px, "x", grid_.py)});
    out.push_back({"comm_mode", cfg.runtime.comm_mode});
    out.push_back({"dot_reduction", std::string(cfg.runtime.reduce_every_sweep ? "every sweep" : "once at the end")});
    out.push_back({"cpusets", sets});
    return out;
}

void Distribution::sum(std::vector<double>& values) const
{
    if (distributed()) mpi::allreduce_sum(values);
}

}  // namespace topokpm::app
