// Multi-rank checks of runtime/mpi/{environment,communicator}.hpp, run by
// run_mpi_check.sh under mpiexec with 1, 2 and 3 ranks.
//   collectives: allreduce (double vector, complex, max), allgather, gatherv with
//                uneven lengths (rank r sends r+1 values, rank 1 of 3 none), node rank,
//                all_ok agreement; prints "collectives check on P ranks: ok".
//   validate:    rank 1 alone fails validation inside agree_or_throw; every rank must
//                leave with exit code 2, the message printed once, no abort needed.
//   abort:       rank 1 alone throws inside run_guarded while the others wait in a
//                barrier; MPI_Abort must end the whole job (non-zero exit, one message).
//   multiple:    requests MPI_THREAD_MULTIPLE and prints what was provided; require()
//                must agree with the provided level.
#include <mpi.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/base/error.hpp"
#include "runtime/mpi/communicator.hpp"
#include "runtime/mpi/environment.hpp"
#include "tests/mpi/check.hpp"

namespace mpi = topokpm::mpi;

namespace {

using topokpm::testing::mpi_check::expect;
using topokpm::testing::mpi_check::verdict;

int check_collectives()
{
    const int r = mpi::rank();
    const int p = mpi::size();

    std::vector<double> v = {1.0 * r, 0.5, -2.0 * (r + 1)};
    mpi::allreduce_sum(v);
    const double ranks_sum = p * (p - 1) / 2.0;
    expect(v[0] == ranks_sum && v[1] == 0.5 * p && v[2] == -2.0 * (ranks_sum + p), "allreduce_sum(vector<double>)");

    const std::complex<double> z = mpi::allreduce_sum(std::complex<double>(r, 1.0));
    expect(z == std::complex<double>(ranks_sum, p), "allreduce_sum(complex)");
    expect(mpi::allreduce_max(0.25 * r) == 0.25 * (p - 1), "allreduce_max(double)");

    const std::vector<double> rates = mpi::allgather(10.0 + r);
    expect(static_cast<int>(rates.size()) == p, "allgather size");
    for (int i = 0; i < static_cast<int>(rates.size()); ++i) expect(rates[i] == 10.0 + i, "allgather value");

    // gatherv: rank i sends i+1 copies of 100*i (rank 1 sends none when p == 3).
    const int mine = (p == 3 && r == 1) ? 0 : r + 1;
    std::vector<std::int64_t> local(static_cast<std::size_t>(mine), 100 * r);
    std::vector<int> counts;
    const std::vector<std::int64_t> all = mpi::gatherv(local, 0, &counts);
    if (r == 0) {
        std::vector<std::int64_t> expected;
        for (int i = 0; i < p; ++i)
            for (int k = 0; k < ((p == 3 && i == 1) ? 0 : i + 1); ++k) expected.push_back(100 * i);
        expect(all == expected, "gatherv values on root");
        expect(static_cast<int>(counts.size()) == p, "gatherv counts on root");
    } else {
        expect(all.empty(), "gatherv result empty off root");
    }

    expect(mpi::node_size() == p && mpi::node_rank() == r, "node rank/size on one node");
    expect(mpi::all_ok(true), "all_ok(true)");
    expect(!mpi::all_ok(r != p - 1), "all_ok with the last rank failing");

    return verdict("collectives check");
}

}  // namespace

int main(int argc, char** argv)
{
    const char* mode = argc > 1 ? argv[1] : "collectives";
    const bool want_multiple = std::strcmp(mode, "multiple") == 0;
    mpi::Environment env(&argc, &argv, want_multiple ? mpi::ThreadLevel::multiple : mpi::ThreadLevel::funneled);
    if (mpi::rank() == 0)
        std::printf("requested %s, provided %s\n", mpi::level_name(env.requested_level()).c_str(),
                    mpi::level_name(env.provided_level()).c_str());

    if (std::strcmp(mode, "collectives") == 0) {
        int rc = 1;
        mpi::run_guarded([&] { rc = check_collectives(); });
        return rc;
    }
    if (std::strcmp(mode, "validate") == 0) {
        const int rc = mpi::run_guarded([] {
            mpi::agree_or_throw([] {
                if (mpi::rank() == 1)
                    throw topokpm::InputError("--weights 'x:1': 'x' is not a number (allowed form \"w0:w1:...\")");
            });
            std::printf("rank %d: passed validation although rank 1 failed\n", mpi::rank());
        });
        std::printf("rank %d leaves with exit code %d\n", mpi::rank(), rc);
        return rc;
    }
    if (std::strcmp(mode, "abort") == 0) {
        mpi::run_guarded([] {
            if (mpi::rank() == 1)
                throw topokpm::InputError("--weights 'x:1': 'x' is not a number (allowed form \"w0:w1:...\")");
            MPI_Barrier(MPI_COMM_WORLD);  // would wait forever without the abort
        });
        std::printf("rank %d passed the barrier: the abort did not happen\n", mpi::rank());
        return 1;
    }
    if (want_multiple) {
        bool refused = false;
        try {
            env.require(mpi::ThreadLevel::multiple, "the task communication mode");
        } catch (const topokpm::Error& e) {
            refused = true;
            if (mpi::rank() == 0) std::printf("refused: %s\n", e.what());
        }
        const bool ok = refused == (env.provided_level() != mpi::ThreadLevel::multiple);
        if (mpi::rank() == 0) std::printf("thread level check: %s\n", ok ? "ok" : "FAILED");
        return ok ? 0 : 1;
    }
    std::fprintf(stderr, "unknown mode '%s' (collectives | validate | abort | multiple)\n", mode);
    return 1;
}
