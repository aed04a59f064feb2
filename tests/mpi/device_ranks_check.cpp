// GPU ranks in an MPI job, on the host stand-in (numerics/distributed/halo_device.hpp), run
// by run_mpi_check.sh under mpiexec (mode "device"): every machine runs the device path of
// the distributed operator (x and y on the "device" between sweeps, the halo packed there,
// staged through host buffers, exchanged, unpacked there) with the stand-in in place of a
// GPU; the same code drives a CUDA rank.
//
// Layouts: "mixed" (rank 0 a stand-in device rank, the others CPU ranks) and "all" (every
// rank a stand-in device rank), for a SELL local part (C = 32 as on the GPU) and a
// matrix-free one (the rank's x-slab of the CPU stencil), ti (x periodic: the first and last
// slab exchange across the wrap, disorder and dots) and graphene, every --comm-mode (task:
// the communication thread packs), dots reduced at the end or every sweep:
//   - on a device rank the distributed operator says "host-standin", and after a sweep y's
//     valid copy is the device one and x's host copy was never made stale (state both):
//     nothing went through the host arrays;
//   - y of one sweep equals the serial y on the rank's rows (1e-13 absolute), the dots
//     summed over the ranks equal the serial dots;
//   - stochastic-trace KPM moments (M = 48, R = 3) equal the serial CPU moments to 1e-12
//     relative to max |mu_n| (= mu_0 = 1).
// Tolerances as distributed_kpm_check.cpp: y entries are sums of <= 13 products of O(1)
// numbers summed in another order (local part, then the remote correction): a few ulp of
// max|H| max|x| ~ 10; moments propagate such differences through 48 stable Chebyshev steps.
// Prints "device check on P ranks: ok" when all pass.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/distributed/distributed_operator.hpp"
#include "numerics/distributed/halo_device.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "runtime/device/device.hpp"
#include "runtime/hetero/work_split.hpp"
#include "runtime/mpi/communicator.hpp"
#include "runtime/mpi/environment.hpp"
#include "tests/mpi/mpi_check_support.hpp"
#include "tests/support/trace_moments.hpp"

using namespace topokpm;

namespace {

namespace mpi_check = topokpm::testing::mpi_check;
using mpi_check::expect;
using mpi_check::graphene_params;
using mpi_check::my_rank;
using mpi_check::ti_params;
using mpi_check::verdict;


void check_sweep(const hamiltonians::Model& model, const Operator& serial, const numerics::DistributedOperator& dist,
                 bool on_device, const std::string& tag)
{
    mpi_check::check_sweep(model, serial, dist, tag, [&](const BlockVector& xl, const BlockVector& yl) {
        if (on_device) {
            expect(yl.memory_state() == MemoryState::device, tag + ": y left the device during the sweep");
            expect(xl.memory_state() == MemoryState::both, tag + ": x's host copy went stale or was never uploaded");
        } else {
            expect(!xl.has_device_mirror() && !yl.has_device_mirror(), tag + ": a CPU rank's blocks got a device copy");
        }
    });
}

void check_moments(const Operator& serial, const Operator& dist, const std::string& tag)
{
    const numerics::KpmScaling scaling{8.0, 0.1};
    const auto ref = topokpm::testing::stochastic_trace(serial, 48, 3, 99, scaling);
    const auto got = topokpm::testing::stochastic_trace(dist, 48, 3, 99, scaling);
    double diff = 0.0, scale = 0.0;
    for (size_t k = 0; k < ref.moments.size(); ++k) {
        diff = std::max(diff, std::abs(got.moments[k] - ref.moments[k]));
        scale = std::max(scale, std::abs(ref.moments[k]));
    }
    expect(got.moments.size() == ref.moments.size() && diff <= 1e-12 * scale,
           tag + ": moments differ from the CPU run by " + std::to_string(diff) + " (max |mu| " +
               std::to_string(scale) + ")");
}

int run()
{
    my_rank = mpi::rank();
    const int p = mpi::size();
    for (const auto& params : {ti_params(), graphene_params()}) {
        const auto model = hamiltonians::make_model(params);
        const auto serial = numerics::make_sell_operator(
            std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, model->num_rows(), {4, 8})));
        const auto bounds = mpi_check::bounds_for(*model, std::vector<double>(p, 1.0), true);
        for (const bool all : {false, true}) {
            const bool on_device = all || my_rank == 0;
            for (const bool free : {false, true}) {
                numerics::OperatorSpec spec;
                spec.kind = free ? numerics::OperatorKind::Free : numerics::OperatorKind::Sell;
                spec.sell = {32, 8};
                spec.rows = {bounds[my_rank], bounds[my_rank + 1]};
                std::shared_ptr<const Operator> local =
                    numerics::make_operator(spec, hamiltonians::operator_source(*model)).op;
                if (on_device) local = numerics::make_host_standin_operator(local);
                for (const auto mode :
                     {numerics::CommMode::Vector, numerics::CommMode::Overlap, numerics::CommMode::Task})
                    for (const bool every : {false, true}) {
                        numerics::DistributedOptions opts;
                        opts.mode = mode;
                        opts.reduce_every_sweep = every;
                        opts.device = on_device ? device::host_standin : device::no_device;
                        const numerics::DistributedOperator dist(*model, bounds, opts, local);
                        const std::string tag = params.name + (free ? " free" : " sell") +
                                                (all ? " all-device " : " mixed ") + numerics::comm_mode_name(mode) +
                                                (every ? " reduce-every-sweep" : "");
                        expect(dist.halo_device() == (on_device ? "host-standin" : "host"),
                               tag + ": halo on " + dist.halo_device());
                        // overlap on a device rank sweeps with the communication thread
                        const auto sweeps = mode == numerics::CommMode::Overlap && on_device ? numerics::CommMode::Task
                                                                                             : mode;
                        expect(dist.sweep_mode() == sweeps,
                               tag + ": sweeps as " + numerics::comm_mode_name(dist.sweep_mode()));
                        check_sweep(*model, *serial, dist, on_device, tag);
                        check_moments(*serial, dist, tag);
                    }
            }
        }
    }
    return verdict("device check");
}

}  // namespace

int main(int argc, char** argv)
{
    return topokpm::testing::mpi_check::run_check(argc, argv, topokpm::mpi::ThreadLevel::multiple, run);
}
