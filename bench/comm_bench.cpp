// comm-bench: the distributed augmented SpMMV under mpirun, per --comm-mode, with the
// time of each phase and the planner's prediction beside it (issue 3, docs/scaling.md).
//
//   mpirun -np P comm-bench [--lattice NXxNYxNZ] [--width R] [--reps N] [--modes LIST]
//                           [--halo shared,messages] [--bandwidth GBS] [--network GBS]
//                           [--decomposition 1d|2d|PXxPY]
//
// --halo: each mode once with the halo through the node's shared window (the default of
// kpm-dos) and once with messages only (DistributedOptions::shared_memory_halo).
//
// ti model, x and y periodic, rows split evenly (sites never split), or with --decomposition
// 2d (or an explicit grid) into (x, y) tiles of whole z-columns as kpm-dos does (the grid of
// hetero::choose_decomposition, rows in the rank-major order of numerics::RowPermutation). For each mode: one warm-up
// sweep, then --reps timed sweeps (beta = -1, dots on, as in a KPM step); the figure is
// the median over sweeps of the slowest rank's time. Phases are accumulated per rank
// (DistributedTimes) and printed as the slowest rank's mean per sweep: pack + post
// (pack), local part (local), waiting for the halo after/without overlap (wait), remote
// correction (remote); the KPM reduction at the end is timed once (reduce).
// The planner (runtime/hetero/plan.hpp) predicts seconds per moment from the memory
// bandwidth (--bandwidth, default: a triad measured here with all ranks running) and the
// network bandwidth (--network, default 10 GB/s); one sweep = two moments, so the
// predicted sweep time is 2 x its seconds per moment.
// Not a test: on an oversubscribed 2-core machine the ranks share cores and the numbers
// show mode overheads, not scaling.
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/operator_choice.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/distributed/row_permutation.hpp"
#include "numerics/distributed/distributed_operator.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/base/system.hpp"
#include "runtime/hetero/plan.hpp"
#include "runtime/hetero/work_split.hpp"
#include "runtime/mpi/communicator.hpp"
#include "runtime/mpi/environment.hpp"

using namespace topokpm;

namespace {

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Args {
    int nx = 32, ny = 32, nz = 40;
    int width = 8;
    int reps = 9;
    std::vector<std::string> modes{"vector", "overlap", "task"};
    std::vector<std::string> halos{"shared", "messages"};
    double bandwidth = 0, network = 10.0;
    std::string decomposition = "1d";
};

Args parse(int argc, char** argv)
{
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string s = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) throw InputError(detail::concat(s, " needs a value"));
            return argv[++i];
        };
        if (s == "--lattice") {
            const std::string v = next();
            if (std::sscanf(v.c_str(), "%dx%dx%d", &a.nx, &a.ny, &a.nz) != 3 || a.nx < 1 || a.ny < 1 || a.nz < 1)
                throw InputError(detail::concat("--lattice '", v, "': expected NXxNYxNZ, each >= 1"));
        } else if (s == "--width") {
            a.width = std::atoi(next().c_str());
            if (a.width < 1) throw InputError("--width: must be >= 1");
        } else if (s == "--reps") {
            a.reps = std::atoi(next().c_str());
            if (a.reps < 1) throw InputError("--reps: must be >= 1");
        } else if (s == "--modes") {
            a.modes.clear();
            std::stringstream in(next());
            for (std::string m; std::getline(in, m, ',');) {
                numerics::parse_comm_mode(m);
                a.modes.push_back(m);
            }
        } else if (s == "--halo") {
            a.halos.clear();
            std::stringstream in(next());
            for (std::string h; std::getline(in, h, ',');) {
                if (h != "shared" && h != "messages")
                    throw InputError(detail::concat("--halo '", h, "': allowed are shared, messages"));
                a.halos.push_back(h);
            }
        } else if (s == "--bandwidth") {
            a.bandwidth = std::atof(next().c_str());
        } else if (s == "--decomposition") {
            a.decomposition = next();
        } else if (s == "--network") {
            a.network = std::atof(next().c_str());
        } else if (s == "--help" || s == "-h") {
            if (mpi::rank() == 0)
                std::printf("usage: mpirun -np P comm-bench [--lattice NXxNYxNZ (32x32x40)] [--width R (8)] "
                            "[--reps N (9)] [--modes vector,overlap,task] [--halo shared,messages] [--bandwidth GB/s (measured)] "
                            "[--network GB/s (10)] [--decomposition 1d|2d|PXxPY (1d)]\n");
            std::exit(0);
        } else {
            throw InputError(detail::concat("unknown option '", s, "'"));
        }
    }
    return a;
}

void run(int argc, char** argv)
{
    const Args args = parse(argc, argv);
    const int p = mpi::size(), me = mpi::rank();
    hamiltonians::ModelParams params;
    params.name = "ti";
    params.nx = args.nx;
    params.ny = args.ny;
    params.nz = args.nz;
    params.boundary = "ppo";
    params.disorder = 0.5;
    const auto model = hamiltonians::make_model(params);
    const global_index n = model->num_rows();
    const hetero::LatticeHalo lattice = *app::lattice_halo(*model);  // ti: always one
    const hetero::ProcessGrid grid = hetero::choose_decomposition(args.decomposition, p, false, lattice);
    std::vector<global_index> bounds{0};
    std::vector<RowRuns> runs(static_cast<size_t>(p));
    if (grid.x_cuts.empty()) {
        const auto ranges = hetero::split_rows(static_cast<std::uint64_t>(n), 4, std::vector<double>(p, 1.0));
        for (const auto& r : ranges) {
            runs[bounds.size() - 1] = {{bounds.back(), static_cast<global_index>(r.end)}};
            bounds.push_back(static_cast<global_index>(r.end));
        }
    } else {
        const global_index column = 4 * global_index(args.nz);
        for (int q = 0; q < p; ++q) {
            const int i = q / grid.py, j = q % grid.py;
            for (auto x = global_index(grid.x_cuts[i]); x < global_index(grid.x_cuts[i + 1]); ++x)
                runs[size_t(q)].push_back({column * (x * args.ny + global_index(grid.y_cuts[j])),
                                           column * (x * args.ny + global_index(grid.y_cuts[j + 1]))});
        }
    }
    const numerics::RowPermutation order(runs);
    if (!grid.x_cuts.empty()) bounds = order.bounds();

    double b = args.bandwidth;
    if (b <= 0) {  // every rank at once: the share of the node a rank really gets
        MPI_Barrier(MPI_COMM_WORLD);
        b = measure_triad_bandwidth_gbs(std::size_t(1) << 23, 5);  // 3 x 64 MiB
        b = mpi::allreduce_sum(b) / p;
    }
    hetero::PlanInput in;
    in.rows = static_cast<std::uint64_t>(n);
    in.nnz = static_cast<std::uint64_t>(model->estimated_nonzeros());
    in.block = 4;
    in.nx = args.nx;
    in.ny = args.ny;
    in.nz = args.nz;
    in.vectors = args.width;
    in.moments = 2;
    in.ranks = p;
    in.memory_gbs = {b};
    in.network_gbs = args.network;
    in.grid = grid;
    in.halo = lattice;
    const hetero::Plan plan = hetero::make_plan(in);

    if (me == 0) {
        std::printf("comm-bench: ti %dx%dx%d (N = %lld rows), R = %d, %d rank(s) x %d thread(s), %d reps, "
                    "decomposition %s\n",
                    args.nx, args.ny, args.nz, static_cast<long long>(n), args.width, p, omp_get_max_threads(),
                    args.reps,
                    grid.x_cuts.empty() ? "1d (x-slabs)"
                                        : detail::concat("2d grid ", grid.px, "x", grid.py).c_str());
        std::printf("planner: memory %.1f GB/s per rank (%s), network %.1f GB/s; predicted sweep %.3f ms "
                    "(no overlap), %.3f ms (overlap)\n",
                    b, args.bandwidth > 0 ? "given" : "triad, all ranks at once", args.network,
                    2e3 * plan.seconds_per_moment, 2e3 * plan.seconds_per_moment_overlap);
        std::printf("%-16s %11s %10s %10s %10s %11s %12s %11s\n", "mode/halo", "sweep [ms]", "pack [ms]", "local [ms]",
                    "wait [ms]", "remote [ms]", "halo [rows]", "reduce [us]");
    }
    const global_index nl = bounds[me + 1] - bounds[me];
    BlockVector x(nl, args.width), y(nl, args.width);
    for (size_t i = 0; i < x.size(); ++i) {  // values do not matter for the timing
        x.data()[i] = complex_type(std::cos(0.1 * double(i)), std::sin(0.1 * double(i)));
        y.data()[i] = complex_type(std::sin(0.2 * double(i)), std::cos(0.3 * double(i)));
    }
    numerics::OperatorSpec spec;  // the rank's SELL-32-256 part
    spec.sell = {32, 256};
    const RowRuns& mine = runs[size_t(me)];
    spec.rows = {mine.front().first, mine.back().second};
    if (mine.size() > 1) spec.rows.runs = mine;
    const std::shared_ptr<const Operator> local =
        numerics::make_operator(spec, hamiltonians::operator_source(*model)).op;
    for (const std::string& halo_name : args.halos)
    for (const std::string& mode_name : args.modes) {
        numerics::DistributedOptions opts;
        opts.mode = numerics::parse_comm_mode(mode_name);
        opts.shared_memory_halo = halo_name == "shared";
        if (mine.size() > 1) opts.canonical_runs = mine;
        const numerics::PermutedRows permuted(*model, order);
        const RowSource& source = grid.x_cuts.empty() || grid.py == 1 ? static_cast<const RowSource&>(*model) : permuted;
        const numerics::DistributedOperator op(source, bounds, opts, local);
        const AugmentedOps ops{0.1, 0.0, -1.0, true};
        DotSums dots;
        op.apply(x, y, ops, &dots);  // warm-up
        const numerics::DistributedTimes before = op.times();
        std::vector<double> t;
        for (int rep = 0; rep < args.reps; ++rep) {
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            op.apply(x, y, ops, &dots);
            t.push_back(mpi::allreduce_max(MPI_Wtime() - t0));
        }
        const numerics::DistributedTimes& after = op.times();
        auto per = [&](double a, double b0) { return mpi::allreduce_max((a - b0) / args.reps) * 1e3; };
        const double pack = per(after.pack, before.pack), local = per(after.local, before.local),
                     wait = per(after.wait, before.wait), remote = per(after.remote, before.remote);
        std::vector<double> sums(static_cast<size_t>(2) * 2048, 1.0);  // M = 2048 moments of R = 2 columns
        MPI_Barrier(MPI_COMM_WORLD);
        const double r0 = MPI_Wtime();
        op.sum_over_ranks(sums.data(), sums.size());
        const double reduce = mpi::allreduce_max(MPI_Wtime() - r0) * 1e6;
        const auto halo = mpi::allreduce_max(static_cast<std::int64_t>(op.halo_rows()));
        if (me == 0)
            std::printf("%-16s %11.3f %10.3f %10.3f %10.3f %11.3f %12lld %11.1f\n", (mode_name + "/" + halo_name).c_str(),
                        median(t) * 1e3, pack, local, wait, remote, static_cast<long long>(halo), reduce);
    }
}

}  // namespace

int main(int argc, char** argv)
{
    mpi::Environment env(&argc, &argv, mpi::ThreadLevel::multiple);
    return mpi::run_guarded([&] { run(argc, argv); });
}
