// The two-index moments of the Kubo-Bastin conductivity (numerics/kpm/two_index.hpp) with
// their vectors on a device (the store of numerics/kpm/two_index_store.hpp): on the host
// stand-in in every build, and on a CUDA GPU (H and both velocities CUDA SELL operators, the
// kept vectors in device memory, the products by cuBLAS) against the CPU trace of the same
// matrices. Without a GPU the CUDA test is skipped with the reason.
//
// Tolerance of the GPU against the CPU (as tests/mpi/kpm_dos_mpi_conductivity_test.sh derives
// it for ranks): the GPU sums each row of a sweep in another order, a relative c eps per sweep
// (c = 2: the row's sum and the recurrence's combination); a perturbation made at sweep k
// reaches T_n as U_{n-k}(Ht) times it, |U_j| <= j + 1, so after n < M sweeps both L_n and R_m
// are off by at most M^2 c eps of their norm, |L_n| |R_m| <= ||v_a|| ||v_b|| |r|^2, and the
// moment <L_n|R_m> / N by 2 M^2 c eps ||v_a|| ||v_b||. cuBLAS sums each column's N rows in
// its own order: at most N eps ||v_a|| ||v_b|| more. So
//     |Gamma_gpu - Gamma_cpu| <= (4 M^2 + N) eps ||v_a|| ||v_b||,
// ||v_x|| ||v_y|| <= sqrt(3) * 2 for graphene (t = 1, bond 1; the largest row sums of
// |H_ij (r_i - r_j)_a|), the same bound per random vector (each slot's moments).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "hamiltonians/velocity.hpp"
#include "numerics/distributed/halo_device.hpp"
#include "numerics/kpm/block_trace.hpp"
#include "numerics/kpm/two_index.hpp"
#include "numerics/kpm/two_index_store.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/device/device.hpp"
#include "tests/support/backends.hpp"

using namespace topokpm;

namespace {

constexpr double kVelocityNorms = 3.4641016151377544;  // ||v_x|| ||v_y|| <= sqrt(3) * 2 (graphene)

/// A 12x12 graphene sheet in the field PHI = 1/16 (9 flux quanta through the torus), with
/// disorder: H and v_x, v_y as operators of `spec` (CPU or CUDA SELL).
struct Sheet {
    std::unique_ptr<hamiltonians::Model> model;
    std::array<std::unique_ptr<hamiltonians::VelocityRows>, 2> velocity_rows;
    std::shared_ptr<const Operator> h;
    std::array<std::shared_ptr<const Operator>, 2> v;
    numerics::KpmScaling scaling;

    explicit Sheet(const numerics::OperatorSpec& spec)
    {
        hamiltonians::ModelParams params;
        params.name = "graphene";
        params.nx = params.ny = 12;
        params.flux = hamiltonians::MagneticFlux{1, 16};
        params.disorder = 0.5;
        params.disorder_seed = 7;
        model = hamiltonians::make_model(params);
        h = numerics::make_operator(spec, hamiltonians::operator_source(*model)).op;
        for (int a = 0; a < 2; ++a) {
            velocity_rows[a] = std::make_unique<hamiltonians::VelocityRows>(*model, a);
            numerics::OperatorSource source;
            source.rows = velocity_rows[a].get();
            source.estimated_nonzeros = static_cast<double>(model->estimated_nonzeros());
            v[a] = numerics::make_operator(spec, source).op;
        }
        // Fixed bounds, the same for every backend (|E| <= 3 t + disorder / 2).
        scaling = numerics::kpm_scaling({-3.3, 3.3}, 0.01);
    }

    numerics::TwoIndexMoments trace(const numerics::StartVectorPlan& plan, int m, int width, int device,
                                    const Operator* h_op = nullptr, const Operator* vx = nullptr,
                                    const Operator* vy = nullptr) const
    {
        numerics::TwoIndexTrace t;
        t.h = h_op ? h_op : h.get();
        t.va = vx ? vx : v[0].get();
        t.vb = vy ? vy : v[1].get();
        t.plan = &plan;
        t.num_moments = m;
        t.block_width = width;
        t.scaling = scaling;
        t.device = device;
        return numerics::two_index_moments(t);
    }
};

numerics::OperatorSpec sell_spec(numerics::Backend backend)
{
    numerics::OperatorSpec spec;
    spec.kind = numerics::OperatorKind::Sell;
    spec.device = backend;
    spec.sell = {backend == numerics::Backend::Cuda ? 32 : 8, 1};
    return spec;
}

/// max |a - b| over the entries.
double max_difference(const std::vector<complex_type>& a, const std::vector<complex_type>& b)
{
    EXPECT_EQ(a.size(), b.size());
    double d = 0.0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
    return d;
}

}  // namespace

// The host stand-in runs the device path of the trace on the CPU: H and both velocities are
// stand-in operators (their blocks stay in the stand-in's "device" memory between sweeps)
// and the store reads the blocks there. Same operators, same transposes, same ZGEMM, same
// order of the sums: the same bits as the host trace, per random vector too (3 vectors in
// blocks of 2: the last block's padding column is left out on both).
TEST(TwoIndexDevice, HostStandinGivesTheHostMomentsBitForBit)
{
    const Sheet sheet(sell_spec(numerics::Backend::Cpu));
    const auto h = numerics::make_host_standin_operator(sheet.h);
    const auto vx = numerics::make_host_standin_operator(sheet.v[0]);
    const auto vy = numerics::make_host_standin_operator(sheet.v[1]);
    const int m = 40;  // two batches, the second partly filled
    const auto plan = numerics::random_phase_plan(sheet.model->num_rows(), 3, 11);
    const numerics::TwoIndexMoments host = sheet.trace(*plan, m, 2, -1);
    const numerics::TwoIndexMoments standin = sheet.trace(*plan, m, 2, device::host_standin, h.get(), vx.get(), vy.get());
    ASSERT_EQ(standin.num_slots, 3);
    EXPECT_EQ(standin.gamma, host.gamma);
    EXPECT_EQ(standin.per_slot, host.per_slot);
    double largest = 0.0;
    for (const complex_type& g : host.gamma) largest = std::max(largest, std::abs(g));
    EXPECT_GT(largest, 0.1) << "the moments are not all zero";
}

// The stand-in store reads a block where the stand-in operators leave it (its mirror) and
// never downloads it: a block whose valid copy is on the "device" stays there, and its
// stale host array is not what is kept. The host store reads the host array (downloading).
TEST(TwoIndexDevice, StandinStoreKeepsTheDeviceCopyWithoutDownloading)
{
    const global_index n = 5;
    const int w = 2, m = 2;
    BlockVector v(n, w);  // host array: zeros
    complex_type* mirror = v.device_data_overwrite(device::host_standin);
    for (global_index i = 0; i < n; ++i)
        for (int c = 0; c < w; ++c) mirror[i * w + c] = complex_type(double(i + 1), double(c));
    ASSERT_EQ(v.memory_state(), MemoryState::device);
    const auto store = numerics::make_two_index_store(device::host_standin, n, w, m, 1);
    EXPECT_EQ(store->name(), "host-standin");
    store->keep_right(0, v);
    store->keep_right(1, v);
    store->keep_left(0, v);
    EXPECT_EQ(v.memory_state(), MemoryState::device) << "the store downloaded the block";
    // out[c B M + j B + l] = sum_r conj(L_l(r, c)) R_j(r, c): column c of v with itself.
    std::vector<complex_type> out(static_cast<std::size_t>(w) * 1 * m);
    store->products(1, w, out.data());
    for (int c = 0; c < w; ++c) {
        double norm2 = 0.0;
        for (global_index i = 0; i < n; ++i) norm2 += double((i + 1) * (i + 1)) + double(c * c);
        for (int j = 0; j < m; ++j) EXPECT_EQ(out[static_cast<std::size_t>(c) * m + j], complex_type(norm2, 0.0));
    }
    EXPECT_EQ(numerics::make_two_index_store(-1, n, w, m, 1)->name(), "host");
    EXPECT_THROW(numerics::make_two_index_store(-3, n, w, m, 1), InputError);
}

// The two-index moments with H, v_x and v_y CUDA SELL-32 operators on device 0 and the kept
// vectors on it equal the CPU's (SELL-8) to the rounding bound of the file comment: the exact
// trace of all N = 288 unit vectors (blocks of 8), and 3 random vectors in blocks of 2 (each
// vector's moments, the padding column left out).
TEST(TwoIndexDeviceCuda, GrapheneInAFieldEqualsTheCpuMoments)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    const Sheet cpu(sell_spec(numerics::Backend::Cpu));
    const Sheet gpu(sell_spec(numerics::Backend::Cuda));
    ASSERT_EQ(gpu.h->name().rfind("cuda-sell-32", 0), 0u) << gpu.h->name();
    const global_index n = cpu.model->num_rows();
    const double eps = std::numeric_limits<double>::epsilon();
    {
        const int m = 64;
        const auto plan = numerics::exact_trace_plan(n);
        const numerics::TwoIndexMoments a = cpu.trace(*plan, m, 8, -1);
        const numerics::TwoIndexMoments b = gpu.trace(*plan, m, 8, 0);
        const double tol = (4.0 * m * m + double(n)) * eps * kVelocityNorms;
        const double d = max_difference(b.gamma, a.gamma);
        EXPECT_LE(d, tol) << "exact trace, M = " << m;
        std::printf("exact trace, M = %d: max |Gamma_gpu - Gamma_cpu| = %.2e (allowed %.1e)\n", m, d, tol);
    }
    {
        const int m = 40;
        const auto plan = numerics::random_phase_plan(n, 3, 11);
        const numerics::TwoIndexMoments a = cpu.trace(*plan, m, 2, -1);
        const numerics::TwoIndexMoments b = gpu.trace(*plan, m, 2, 0);
        ASSERT_EQ(b.num_slots, 3);
        const double tol = (4.0 * m * m + double(n)) * eps * kVelocityNorms;
        EXPECT_LE(max_difference(b.gamma, a.gamma), tol) << "3 random vectors, M = " << m;
        EXPECT_LE(max_difference(b.per_slot, a.per_slot), tol) << "each vector's moments, M = " << m;
    }
}

// The cuda store checks the device's free memory before allocating: M = 4096 kept blocks of
// 2^30 values (64 TiB) is a ResourceError naming the kept vectors, and nothing is allocated.
TEST(TwoIndexDeviceCuda, TooLargeForTheDeviceIsAResourceErrorBeforeAllocating)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    try {
        numerics::make_two_index_store(0, global_index(1) << 29, 2, 4096, 32);
        ADD_FAILURE() << "64 TiB of kept vectors were accepted";
    } catch (const ResourceError& e) {
        EXPECT_NE(std::string(e.what()).find("two-index moments' kept vectors"), std::string::npos) << e.what();
    }
    const auto store = numerics::make_two_index_store(0, 100, 2, 4, 4);  // the device still works
    EXPECT_EQ(store->name(), "cuda:0");
}

// Without a GPU the cuda store is refused by name: NotCompiled in a CPU-only build, an
// InputError (device 0 is not visible) in a CUDA build.
TEST(TwoIndexDeviceCuda, WithoutAGpuTheCudaStoreIsRefused)
{
    if (!topokpm::testing::cuda_unavailable_reason()) GTEST_SKIP() << "a GPU is visible (GrapheneInAField runs)";
    if (topokpm::testing::cuda_compiled)
        EXPECT_THROW(numerics::make_two_index_store(0, 10, 2, 4, 4), InputError) << "device 0 is not visible";
    else
        EXPECT_THROW(numerics::make_two_index_store(0, 10, 2, 4, 4), NotCompiled);
}
