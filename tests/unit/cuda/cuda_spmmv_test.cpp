// The CUDA augmented SpMMV (stored SELL-C-σ and matrix-free stencil) against the CPU
// operators of the same model, for many block widths (specialised and strip-mined), sizes
// that are not multiples of a warp (down to N = 8), both models, open and periodic
// boundaries, dots and disorder, beta in {0, -1} and dots on/off.
//
// Tolerance, derived from the arithmetic (u = 2^-53): every element of y is
//     y_i = scale (sum_k a_ik x_k - shift x_i) + beta y_i
// evaluated by each implementation in its own order (and with or without FMA). A complex
// product costs at most 2 roundings per part and a sum of L terms at most L - 1, so each
// result is within (L_i + 4) * 2u * B_i of the exact value, with
//     B_i = |scale| (sum_k |a_ik| |x_k| + |shift| |x_i|) + |beta| |y_i|
// (the factor 2 also covers sqrt(2) from mixing real and imaginary parts). Two
// implementations therefore differ by at most 4 (L_i + 4) u B_i. For the dots, recursive
// summation of N terms in different orders differs by at most 2 N u sum |terms|, plus the
// propagated y differences for <y|x>. The single-precision operators: CudaSpmmvSingle below.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/cuda_operator.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "tests/support/backends.hpp"
#include "tests/support/single_precision.hpp"
#include "tests/support/model_params.hpp"

using namespace topokpm;

namespace {

constexpr double u = std::numeric_limits<double>::epsilon() / 2;

struct Case {
    const char* label;
    hamiltonians::ModelParams params;
};

hamiltonians::ModelParams make(const char* name, int nx, int ny, int nz, const char* boundary)
{
    return topokpm::testing::lattice_params(name, nx, ny, nz, boundary);
}

std::vector<Case> cases()
{
    std::vector<Case> out;
    hamiltonians::ModelParams p = make("ti", 6, 6, 5, "ppo");  // 720 rows = 22.5 warps
    p.dot_potential = 0.4;
    p.dot_radius = 1.0;
    p.dot_period = 3;
    p.dot_depth = 2;
    p.disorder = 0.8;
    p.disorder_seed = 3;
    out.push_back({"ti 6x6x5 ppo dots+disorder", p});
    p = make("ti", 3, 3, 3, "ppp");
    p.disorder = 1.5;
    out.push_back({"ti 3x3x3 ppp disorder", p});
    out.push_back({"ti 1x1x2 ooo (N = 8)", make("ti", 1, 1, 2, "ooo")});
    p = make("graphene", 6, 9, 1, "pp");
    p.dot_potential = -0.3;
    p.dot_radius = 1.5;
    p.dot_period = 3;
    p.disorder = 0.5;
    p.disorder_seed = 9;
    out.push_back({"graphene 6x9 pp dots+disorder", p});
    p = make("graphene", 5, 3, 1, "oo");
    p.disorder = 0.7;
    out.push_back({"graphene 5x3 oo disorder", p});
    out.push_back({"graphene 2x2 pp (coinciding neighbours)", make("graphene", 2, 2, 1, "pp")});
    return out;
}

/// Per-element bound B_i (header comment) and row length L_i, from the model's rows.
struct ElementBounds {
    std::vector<double> b;  ///< N x R
    std::vector<int> length;
};

ElementBounds element_bounds(const hamiltonians::Model& model, const BlockVector& x, const BlockVector& y0,
                             const AugmentedOps& ops)
{
    const global_index n = model.num_rows();
    const int r = x.num_cols();
    ElementBounds e;
    e.b.assign(static_cast<std::size_t>(n) * r, 0.0);
    e.length.resize(static_cast<std::size_t>(n));
    std::vector<global_index> cols(model.max_row_length());
    std::vector<complex_type> vals(model.max_row_length());
    for (global_index i = 0; i < n; ++i) {
        const int len = model.row(i, cols.data(), vals.data());
        e.length[i] = len;
        for (int c = 0; c < r; ++c) {
            double s = std::abs(ops.shift) * std::abs(x(i, c));
            for (int k = 0; k < len; ++k) s += std::abs(vals[k]) * std::abs(x(cols[k], c));
            e.b[i * r + c] = std::abs(ops.scale) * s + std::abs(ops.beta) * std::abs(y0(i, c));
        }
    }
    return e;
}

/// Applies `gpu` and `cpu` to the same operands and checks y and the dots within the
/// derived bounds; also that x survives and the states are as documented.
void expect_same_apply(const Operator& gpu, const Operator& cpu, const hamiltonians::Model& model, int r,
                       double beta, bool want_dots, const std::string& label)
{
    const global_index n = model.num_rows();
    BlockVector x(n, r), y0(n, r);
    numerics::fill_random_phase_vectors(x, 17, 0, n);
    numerics::fill_random_phase_vectors(y0, 18, 0, n);
    for (std::size_t k = 0; k < y0.size(); ++k) y0.data()[k] *= 0.5 + 0.001 * static_cast<double>(k % 7);
    const AugmentedOps ops{0.37, -0.2, beta, want_dots};

    BlockVector y_cpu = y0;
    DotSums dots_cpu;
    cpu.apply(x, y_cpu, ops, &dots_cpu);

    BlockVector y_gpu = y0;
    if (beta == 0.0) {
        // beta == 0 must never read y: poison the device copy with NaN first.
        for (std::size_t k = 0; k < y_gpu.size(); ++k)
            y_gpu.data()[k] = complex_type(std::numeric_limits<double>::quiet_NaN(), 0.0);
        y_gpu.device_data_read(0);
    }
    DotSums dots_gpu;
    gpu.apply(x, y_gpu, ops, &dots_gpu);
    EXPECT_EQ(x.memory_state(), MemoryState::both) << label;
    EXPECT_EQ(y_gpu.memory_state(), MemoryState::device) << label;

    const ElementBounds e = element_bounds(model, x, y0, ops);
    const BlockVector& yg = y_gpu;  // const access: downloads once
    double worst = 0.0;
    std::vector<double> dy(static_cast<std::size_t>(n) * r);
    for (global_index i = 0; i < n; ++i)
        for (int c = 0; c < r; ++c) {
            const double tol = 4.0 * (e.length[i] + 4) * u * e.b[i * r + c];
            const double diff = std::abs(yg(i, c) - y_cpu(i, c));
            dy[i * r + c] = tol;
            ASSERT_TRUE(std::isfinite(diff)) << label << " row " << i << " column " << c;
            ASSERT_LE(diff, tol) << label << " row " << i << " column " << c;
            worst = std::max(worst, diff / (tol > 0 ? tol : 1.0));
        }
    if (!want_dots) return;
    ASSERT_EQ(dots_gpu.xx.size(), static_cast<std::size_t>(r)) << label;
    for (int c = 0; c < r; ++c) {
        double sum_xx = 0.0, sum_yx = 0.0, propagated = 0.0;
        for (global_index i = 0; i < n; ++i) {
            sum_xx += std::norm(x(i, c));
            sum_yx += std::abs(y_cpu(i, c)) * std::abs(x(i, c));
            propagated += dy[i * r + c] * std::abs(x(i, c));
        }
        EXPECT_NEAR(dots_gpu.xx[c], dots_cpu.xx[c], 2.0 * n * u * sum_xx) << label << " column " << c;
        EXPECT_LE(std::abs(dots_gpu.yx[c] - dots_cpu.yx[c]), 2.0 * n * u * sum_yx + 2.0 * propagated)
            << label << " column " << c;
    }
}

const int kWidths[] = {1, 2, 3, 4, 5, 8, 12, 16, 32, 37};

}  // namespace

TEST(CudaSpmmv, SellMatchesTheCpuSellOperator)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    for (const Case& k : cases()) {
        const auto model = hamiltonians::make_model(k.params);
        const global_index n = model->num_rows();
        auto sell = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, {32, 64}));
        const auto gpu = numerics::make_cuda_sell_operator(sell, 0);
        const auto cpu = numerics::make_sell_operator(sell);
        for (const int r : kWidths)
            for (const double beta : {0.0, -1.0})
                for (const bool dots : {true, false})
                    expect_same_apply(*gpu, *cpu, *model, r, beta, dots,
                                      std::string(k.label) + " " + gpu->name() + " R=" + std::to_string(r) +
                                          " beta=" + std::to_string(beta) + (dots ? " dots" : ""));
    }
}

TEST(CudaSpmmv, OtherChunkHeightsAndNoSortingRunTheSameKernels)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    const Case k = cases()[0];
    const auto model = hamiltonians::make_model(k.params);
    const global_index n = model->num_rows();
    for (const numerics::SellParams sp : {numerics::SellParams{1, 1}, numerics::SellParams{8, 1},
                                          numerics::SellParams{32, 1}, numerics::SellParams{64, 512}}) {
        auto sell = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, sp));
        const auto gpu = numerics::make_cuda_sell_operator(sell, 0);
        const auto cpu = numerics::make_sell_operator(sell);
        for (const int r : {1, 4, 32})
            expect_same_apply(*gpu, *cpu, *model, r, -1.0, true, gpu->name() + " R=" + std::to_string(r));
    }
}

TEST(CudaSpmmv, StencilMatchesTheCpuMatrixFreeOperator)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    for (const Case& k : cases()) {
        const auto model = hamiltonians::make_model(k.params);
        const auto gpu = numerics::make_cuda_stencil_operator(model->block_stencil(), 0);
        const auto cpu = numerics::make_cpu_stencil_operator(model->block_stencil());
        EXPECT_EQ(gpu->cost().nonzeros, numerics::make_cpu_stencil_operator(model->block_stencil())->cost().nonzeros)
            << k.label;
        for (const int r : kWidths)
            for (const double beta : {0.0, -1.0})
                for (const bool dots : {true, false})
                    expect_same_apply(*gpu, *cpu, *model, r, beta, dots,
                                      std::string(k.label) + " " + gpu->name() + " R=" + std::to_string(r) +
                                          " beta=" + std::to_string(beta) + (dots ? " dots" : ""));
    }
}

// Enough rows that every block loops over several tiles (grid-stride), at R = 1, 8, 32.
TEST(CudaSpmmv, LargerThanOneGridPass)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    hamiltonians::ModelParams p = make("ti", 24, 20, 20, "ppo");  // 38400 rows
    p.disorder = 1.0;
    const auto model = hamiltonians::make_model(p);
    const global_index n = model->num_rows();
    auto sell = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, {32, 256}));
    const auto gpu_sell = numerics::make_cuda_sell_operator(sell, 0);
    const auto gpu_free = numerics::make_cuda_stencil_operator(model->block_stencil(), 0);
    const auto cpu = numerics::make_cpu_stencil_operator(model->block_stencil());
    for (const int r : {1, 8, 32}) {
        expect_same_apply(*gpu_sell, *cpu, *model, r, -1.0, true, "large sell R=" + std::to_string(r));
        expect_same_apply(*gpu_free, *cpu, *model, r, -1.0, true, "large free R=" + std::to_string(r));
    }
}

// The sums are reduced without atomics in a fixed order: the same bits every time.
TEST(CudaSpmmv, DotsAreBitwiseReproducible)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    const auto model = hamiltonians::make_model(cases()[0].params);
    const global_index n = model->num_rows();
    const auto gpu = numerics::make_cuda_stencil_operator(model->block_stencil(), 0);
    BlockVector x(n, 8), y(n, 8);
    numerics::fill_random_phase_vectors(x, 5, 0, n);
    DotSums first, again;
    gpu->apply(x, y, {1.0, 0.1, 0.0, true}, &first);
    for (int rep = 0; rep < 5; ++rep) {
        gpu->apply(x, y, {1.0, 0.1, 0.0, true}, &again);
        for (int c = 0; c < 8; ++c) {
            EXPECT_EQ(again.xx[c], first.xx[c]);
            EXPECT_EQ(again.yx[c], first.yx[c]);
        }
    }
}

TEST(CudaSpmmv, MismatchedOperandsAreRejected)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    const auto model = hamiltonians::make_model(cases()[2].params);
    const auto gpu = numerics::make_cuda_stencil_operator(model->block_stencil(), 0);
    BlockVector x(model->num_rows(), 2), y_bad(model->num_rows(), 3);
    EXPECT_THROW(gpu->apply(x, y_bad, {}, nullptr), DimensionMismatch);
    EXPECT_THROW(gpu->apply(x, x, {}, nullptr), DimensionMismatch);
    BlockVector y(model->num_rows(), 2);
    EXPECT_THROW(gpu->apply(x, y, {1.0, 0.0, 0.0, true}, nullptr), DimensionMismatch);
}

// ---- single precision (issue 36: --precision single on the GPU) ----
//
// The single operators against a long-double loop over the same float-rounded matrix and
// float vectors (the "host float reference"). What the kernels compute (sell_kernels.hpp,
// stencil_kernels.hpp): a row's sum ŝ of its m_i stored entries in float, then in double
// y = scale (ŝ - shift' x) + beta y0 with shift' = shift (SELL) or shift - V_i (stencil: the
// potential is not rounded and not in the float sum), rounded once to float.
// Tolerance, derived (u_f = eps_f / 2): the float sum of m_i complex products (two fused
// multiply-adds per part) is within (m_i + 2) eps_f S_i of the exact sum, S_i = sum_k |a_ik|
// |x_k| (γ_m with room for the √2 of mixing parts); the double epilogue adds at most 8 eps_d
// of its magnitudes; the final rounding eps_f |y_i| (u_f per part, √2 u_f for the modulus).
// The dots are summed in double from the stored floats (products of two floats are exact in
// double), so against long double they are within 2 (N + 2) eps_d sum |y||x|
// (SingleDotReference without float runs); a float accumulation would miss by ~1e8.
namespace {

using topokpm::testing::SingleBlock;
using cld = std::complex<long double>;
constexpr double kEpsF = std::numeric_limits<float>::epsilon();
constexpr double kEpsD = std::numeric_limits<double>::epsilon();

cld widen(complex_single v) { return cld(v.real(), v.imag()); }
complex_single round_f(complex_type v) { return complex_single(static_cast<float>(v.real()), static_cast<float>(v.imag())); }

/// The matrix the single kernels multiply with, by rows: every stored entry rounded to float
/// (SELL), or (stencil) the same with the potential V_i taken out of the diagonal first and
/// kept in double.
struct FloatRows {
    std::vector<std::vector<global_index>> cols;
    std::vector<std::vector<cld>> vals;
    std::vector<double> potential;  ///< 0 for SELL
};

FloatRows float_rows(const hamiltonians::Model& model, bool potential_apart)
{
    const global_index n = model.num_rows();
    FloatRows out;
    out.cols.resize(n);
    out.vals.resize(n);
    out.potential.assign(n, 0.0);
    std::vector<global_index> c(model.max_row_length());
    std::vector<complex_type> v(model.max_row_length());
    for (global_index i = 0; i < n; ++i) {
        const int len = model.row(i, c.data(), v.data());
        if (potential_apart) out.potential[i] = model.potential(i);
        for (int k = 0; k < len; ++k) {
            out.cols[i].push_back(c[k]);
            out.vals[i].push_back(widen(round_f(c[k] == i ? v[k] - out.potential[i] : v[k])));
        }
    }
    return out;
}

/// One single-block apply of `gpu` against the rows, y entry by entry and the dots.
void expect_single_apply(const Operator& gpu, const FloatRows& rows, int r, double beta, const std::string& label)
{
    const global_index n = gpu.num_rows();
    BlockVector xd(n, r), yd(n, r);
    numerics::fill_random_phase_vectors(xd, 17, 0, n);
    numerics::fill_random_phase_vectors(yd, 18, 0, n);
    const SingleBlock x = convert_block<complex_single>(xd), y0 = convert_block<complex_single>(yd);
    const AugmentedOps ops{0.37, -0.2, beta, true};
    SingleBlock y = y0;
    if (beta == 0.0) {  // beta == 0 must never read y: poison the device copy with NaN first
        for (std::size_t k = 0; k < y.size(); ++k) y.data()[k] = complex_single(NAN, 0.0f);
        y.device_data_read(0);
    }
    DotSums dots;
    gpu.apply(x, y, ops, &dots);
    EXPECT_EQ(x.memory_state(), MemoryState::both) << label;
    EXPECT_EQ(y.memory_state(), MemoryState::device) << label;
    const SingleBlock& yg = y;  // const access: downloads once
    for (int c = 0; c < r; ++c) {
        topokpm::testing::SingleDotReference dot_ref;
        for (global_index i = 0; i < n; ++i) {
            cld s = 0;
            long double abs_s = 0;
            for (std::size_t k = 0; k < rows.cols[i].size(); ++k) {
                s += rows.vals[i][k] * widen(x(rows.cols[i][k], c));
                abs_s += std::abs(rows.vals[i][k]) * std::abs(widen(x(rows.cols[i][k], c)));
            }
            const double shift = ops.shift - rows.potential[i];
            cld v = cld(ops.scale) * (s - static_cast<long double>(shift) * widen(x(i, c)));
            if (beta != 0.0) v += cld(beta) * widen(y0(i, c));
            const double m = static_cast<double>(rows.cols[i].size());
            const double bound = (m + 2) * kEpsF * std::abs(ops.scale) * static_cast<double>(abs_s) +
                                 kEpsF * static_cast<double>(std::abs(v)) +
                                 8 * kEpsD * (std::abs(ops.scale) * (static_cast<double>(abs_s) + std::abs(shift) * std::abs(x(i, c))) +
                                              std::abs(beta) * (beta != 0.0 ? std::abs(y0(i, c)) : 0.0));
            const double diff = static_cast<double>(std::abs(widen(yg(i, c)) - v));
            ASSERT_TRUE(std::isfinite(diff)) << label << " row " << i << " column " << c;
            ASSERT_LE(diff, bound) << label << " row " << i << " column " << c;
            dot_ref.add(x(i, c), yg(i, c));
        }
        dot_ref.expect_matches(dots, c, label);
    }
}

std::shared_ptr<const numerics::BasicSellMatrix<complex_single>> single_sell(const hamiltonians::Model& model,
                                                                             numerics::SellParams params)
{
    const numerics::SellMatrix m = numerics::SellMatrix::build(model, 0, model.num_rows(), params);
    return std::make_shared<const numerics::BasicSellMatrix<complex_single>>(numerics::convert_values<complex_single>(m));
}

}  // namespace

// Every case but the tiny periodic graphene 2x2 (coinciding neighbours: the stencil rounds
// each term, the model's rows their sum), the specialised widths and strip-mined ones
// (3 = 2 + 1, 12 = 8 + 4, 37 = 32 + 4 + 1), beta 0 and -1.
TEST(CudaSpmmv, SingleSellAndStencilEqualTheHostFloatReference)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    const std::vector<Case> all = cases();
    for (std::size_t k = 0; k + 1 < all.size(); ++k) {
        const auto model = hamiltonians::make_model(all[k].params);
        const auto gpu_sell = numerics::make_cuda_sell_operator(single_sell(*model, {32, 64}), 0);
        const auto gpu_free = numerics::make_cuda_stencil_operator(model->block_stencil(), 0, Precision::Single);
        ASSERT_EQ(gpu_sell->precision(), Precision::Single);
        ASSERT_EQ(gpu_free->precision(), Precision::Single);
        const FloatRows sell_rows = float_rows(*model, false), free_rows = float_rows(*model, true);
        for (const int r : {1, 2, 3, 4, 8, 12, 16, 32, 37})
            for (const double beta : {0.0, -1.0}) {
                const std::string tail = " R=" + std::to_string(r) + " beta=" + std::to_string(beta);
                expect_single_apply(*gpu_sell, sell_rows, r, beta, std::string(all[k].label) + " " + gpu_sell->name() + tail);
                expect_single_apply(*gpu_free, free_rows, r, beta, std::string(all[k].label) + " " + gpu_free->name() + tail);
            }
    }
}

// Names, the cost model's bytes (12 per stored entry + the row permutation; the stencil's
// double potential), and the double interface (Lanczos): the single sweep on the rounded
// blocks, widened exactly, with the same dots; the same bits on every repetition and
// without dots.
TEST(CudaSpmmv, SingleNamesCostsDoubleInterfaceAndReproducibility)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    const auto model = hamiltonians::make_model(cases()[0].params);
    const global_index n = model->num_rows();
    const auto matrix = single_sell(*model, {32, 64});
    const auto gpu_sell = numerics::make_cuda_sell_operator(matrix, 0);
    const auto gpu_free = numerics::make_cuda_stencil_operator(model->block_stencil(), 0, Precision::Single);
    const auto dbl_free = numerics::make_cuda_stencil_operator(model->block_stencil(), 0);
    EXPECT_EQ(gpu_sell->name(), "cuda-sell-32-64-single");
    EXPECT_EQ(gpu_free->name(), dbl_free->name() + "-single");
    EXPECT_EQ(gpu_sell->cost().matrix_bytes,
              12.0 * static_cast<double>(matrix->num_stored()) + 4.0 * static_cast<double>(matrix->row_of_slot().size()));
    EXPECT_EQ(gpu_free->cost().matrix_bytes, dbl_free->cost().matrix_bytes);
    for (const Operator* op : {gpu_sell.get(), gpu_free.get()})
        for (const int r : {1, 8, 32}) {
            BlockVector x(n, r), y(n, r);
            numerics::fill_random_phase_vectors(x, 1, 0, n);
            numerics::fill_random_phase_vectors(y, 2, 0, n);
            const SingleBlock xs = convert_block<complex_single>(x);
            const SingleBlock ys0 = convert_block<complex_single>(y);
            SingleBlock ys = ys0;
            DotSums ds, dd;
            const AugmentedOps ops{0.5, 0.25, -1.0, true};
            op->apply(xs, ys, ops, &ds);
            op->apply(x, y, ops, &dd);
            const BlockVector expected = convert_block<complex_double>(ys);
            for (std::size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y.data()[i], expected.data()[i]) << op->name() << " R=" << r;
            EXPECT_EQ(ds.xx, dd.xx) << op->name();
            EXPECT_EQ(ds.yx, dd.yx) << op->name();
            SingleBlock again = ys0;
            DotSums da;
            op->apply(xs, again, ops, &da);
            const SingleBlock& a = again;
            const SingleBlock& b = ys;
            for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], b.data()[i]) << op->name() << " R=" << r;
            EXPECT_EQ(da.xx, ds.xx) << op->name();
            EXPECT_EQ(da.yx, ds.yx) << op->name();
            // Without dots (the same kernel, its sums dropped): the same y.
            SingleBlock plain = ys0;
            op->apply(xs, plain, AugmentedOps{0.5, 0.25, -1.0, false}, nullptr);
            const SingleBlock& p = plain;
            for (std::size_t i = 0; i < p.size(); ++i) ASSERT_EQ(p.data()[i], b.data()[i]) << op->name() << " no dots R=" << r;
        }
}

// ---- a magnetic field (issue 34): the stencil kernels carry the Peierls phases ----
//
// The CUDA stencil in a field (its row kernel, each entry times its factor through
// peierls_phase_entry, the CPU checked path's own function) against the CPU SELL operator of
// the same model, whose rows carry the phases (the model's row()). Double: within
// expect_same_apply's bound 4 (L_i + 4) u B_i (the entries equal the rows' bit for bit for ti
// and graphene, block_stencil.hpp, so only the order of the sums differs). Single: against the
// host float reference of the rows rounded to float, potential apart (the kernel rounds the
// same double entry once), within expect_single_apply's bound. ti and graphene, on tori (x
// and y periodic: the bonds across the y wrap take their factors from `across`, by x) and with
// open directions (any PHI), dots and disorder; the specialised widths and strip-mined ones
// (3, 5, 12, 37), beta 0 (NaN-poisoned y) and -1, dots on and off.
namespace {

std::vector<Case> field_cases()
{
    std::vector<Case> out;
    hamiltonians::ModelParams p = make("ti", 4, 6, 3, "ppo");
    p.flux = {1, 24};  // Nx Ny PHI = 1
    p.disorder = 0.8;
    p.disorder_seed = 5;
    out.push_back({"ti 4x6x3 ppo PHI=1/24 disorder", p});
    p = make("ti", 4, 4, 3, "ppp");
    p.flux = {-3, 8};  // Nx Ny PHI = -6
    p.dot_potential = 0.3;
    p.dot_radius = 1.0;
    p.dot_period = 2;
    out.push_back({"ti 4x4x3 ppp PHI=-3/8 dots", p});
    p = make("ti", 5, 3, 2, "opo");  // x open: any PHI
    p.flux = {3, 10};
    out.push_back({"ti 5x3x2 opo PHI=3/10", p});
    p = make("graphene", 6, 4, 1, "pp");
    p.flux = {1, 12};  // Nx Ny PHI = 2
    p.disorder = 0.5;
    p.disorder_seed = 11;
    out.push_back({"graphene 6x4 pp PHI=1/12 disorder", p});
    p = make("graphene", 5, 3, 1, "po");  // y open: any PHI
    p.flux = {1, 7};
    out.push_back({"graphene 5x3 po PHI=1/7", p});
    p = make("graphene", 6, 9, 1, "op");  // x open, y periodic: the wrap's factors
    p.flux = {2, 9};
    p.dot_potential = -0.3;
    p.dot_radius = 1.5;
    p.dot_period = 3;
    out.push_back({"graphene 6x9 op PHI=2/9 dots", p});
    return out;
}

}  // namespace

TEST(CudaSpmmvField, StencilMatchesTheCpuSellOperator)
{
    TOPOKPM_SKIP_UNLESS_CUDA_DEVICE();
    for (const Case& k : field_cases()) {
        const auto model = hamiltonians::make_model(k.params);
        ASSERT_TRUE(model->block_stencil().field.active()) << k.label;
        const global_index n = model->num_rows();
        auto sell = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, {32, 64}));
        const auto cpu = numerics::make_sell_operator(sell);
        const auto gpu = numerics::make_cuda_stencil_operator(model->block_stencil(), 0);
        const auto gpu_single = numerics::make_cuda_stencil_operator(model->block_stencil(), 0, Precision::Single);
        ASSERT_EQ(gpu_single->precision(), Precision::Single);
        EXPECT_EQ(gpu->cost().nonzeros, numerics::make_cpu_stencil_operator(model->block_stencil())->cost().nonzeros)
            << k.label;
        const FloatRows free_rows = float_rows(*model, true);
        for (const int r : kWidths)
            for (const double beta : {0.0, -1.0}) {
                const std::string tail = " R=" + std::to_string(r) + " beta=" + std::to_string(beta);
                for (const bool dots : {true, false})
                    expect_same_apply(*gpu, *cpu, *model, r, beta, dots,
                                      std::string(k.label) + " " + gpu->name() + tail + (dots ? " dots" : ""));
                expect_single_apply(*gpu_single, free_rows, r, beta, std::string(k.label) + " " + gpu_single->name() + tail);
                if (::testing::Test::HasFatalFailure()) return;
            }
    }
}
