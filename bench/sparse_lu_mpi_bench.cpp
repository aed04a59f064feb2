// sparse-lu-mpi-bench: the sparse LU across MPI ranks (numerics/sparse_direct/distributed_lu)
// against one rank in the same run, on a ti slab shifted by sigma (H - sigma, Metis, sites of
// 4 orbitals). docs/sparse_direct.md "Across MPI ranks".
//
//   mpirun -np P sparse-lu-mpi-bench [--lattice 12x12x12] [--boundary ppp] [--disorder 1]
//                                    [--shift 0.1] [--reps 3]
//
// Per repetition: rank 0 alone factors with SparseLU (the others wait at a barrier: the
// 1-rank baseline on the same machine, same matrix, same BLAS threads), then all ranks
// factor with DistributedLU; the same for one solve of one right-hand side (with refinement).
// Prints medians, the ratio, the process grid and the panel entries per rank. Threads: BLAS
// follows OMP_NUM_THREADS on every rank. Not a test: numbers depend on the machine and load.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/sparse_direct/distributed_lu.hpp"
#include "runtime/mpi/communicator.hpp"

using namespace topokpm;
using namespace topokpm::sparse_direct;

namespace {

double now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    std::string lattice = "12x12x12", boundary = "ppp";
    double disorder = 1.0, shift = 0.1;
    int reps = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i], value = argv[i + 1];
        if (arg == "--lattice") lattice = value;
        else if (arg == "--boundary") boundary = value;
        else if (arg == "--disorder") disorder = std::stod(value);
        else if (arg == "--shift") shift = std::stod(value);
        else if (arg == "--reps") reps = std::max(1, std::stoi(value));
        else {
            if (rank == 0) std::fprintf(stderr, "unknown option %s\n", arg.c_str());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    {  // the solvers' communicators are freed before MPI_Finalize
    hamiltonians::ModelParams p;
    p.name = "ti";
    std::sscanf(lattice.c_str(), "%dx%dx%d", &p.nx, &p.ny, &p.nz);
    p.boundary = boundary;
    p.disorder = disorder;
    const auto model = hamiltonians::make_model(p);
    const CsrMatrix a = csr_from_rows(*model);
    AnalyseOptions ao;
    ao.site_size = model->orbitals_per_site();
    double t = now();
    SparseLU lu(a, ao);
    const double analyse_s = now() - t;
    DistributedLU dist(lu, MPI_COMM_WORLD);
    SparseLU serial(a, ao);  // rank 0's baseline (its own panels)

    const global_index n = a.n;
    std::vector<complex_double> b(static_cast<std::size_t>(n)), x(b.size());
    for (global_index i = 0; i < n; ++i) b[i] = complex_double(1.0 / (1 + i % 7), 0.5 - (i % 3));
    std::vector<double> f1, fp, s1, sp;
    double berr1 = 0, berrp = 0;
    global_index tiny = 0;
    for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            t = now();
            serial.factorize(shift);
            f1.push_back(now() - t);
            t = now();
            berr1 = serial.solve(b.data(), x.data(), 1).backward_error;
            s1.push_back(now() - t);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t = now();
        tiny = dist.factorize(shift).tiny_pivots;
        fp.push_back(mpi::allreduce_max(now() - t));
        MPI_Barrier(MPI_COMM_WORLD);
        t = now();
        berrp = dist.solve(b.data(), x.data(), 1).backward_error;
        sp.push_back(mpi::allreduce_max(now() - t));
    }
    // The latency that bounds the steps: a one-entry MPI_Bcast over all ranks, same run.
    std::vector<double> lat;
    complex_double one(1.0, 0.0);
    for (int r = 0; r < 5; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        t = now();
        for (int i = 0; i < 200; ++i) MPI_Bcast(&one, 1, MPI_C_DOUBLE_COMPLEX, i % ranks, MPI_COMM_WORLD);
        lat.push_back(mpi::allreduce_max(now() - t) / 200);
    }
    const std::vector<std::int64_t> local = mpi::allgather(static_cast<std::int64_t>(dist.local_factor_entries()));
    if (rank == 0) {
        std::printf("ti %s %s disorder %g, H - %g: n %lld, nnz(L+U) %lld, %.2f Gflop per factor, analyse %.3f s\n",
                    lattice.c_str(), boundary.c_str(), disorder, shift, static_cast<long long>(n),
                    static_cast<long long>(lu.factor_nonzeros()), lu.factor_flops() * 1e-9, analyse_s);
        std::printf("ranks %d (grid %d x %d), reps %d: factor 1 rank %.3f s, %d ranks %.3f s (x%.2f); "
                    "solve 1 rank %.3f s, %d ranks %.3f s (x%.2f); tiny pivots %lld; backward error %.1e / %.1e\n",
                    ranks, dist.grid_rows(), dist.grid_cols(), reps, median(f1), ranks, median(fp),
                    median(f1) / median(fp), median(s1), ranks, median(sp), median(s1) / median(sp),
                    static_cast<long long>(tiny), berr1, berrp);
        std::printf("%zu supernodes (steps); MPI_Bcast of one entry: %.1f us (median of 5 x 200)\n",
                    lu.supernode_begin().size() - 1, median(lat) * 1e6);
        std::printf("panel entries per rank after the factorization:");
        for (const auto e : local) std::printf(" %lld", static_cast<long long>(e));
        std::printf(" (one rank: %zu)\n", serial.factor_values().size());
    }
    }
    MPI_Finalize();
    return 0;
}
