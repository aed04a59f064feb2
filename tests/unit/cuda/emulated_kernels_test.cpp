// The CUDA stencil kernels' source (numerics/cuda/stencil_device.cuh) run on the host through
// tests/support/cuda_emulation, in every build and without a GPU: the thread mapping, the
// masks, open and periodic boundaries, strips of a wider block, the paired columns of the
// single-precision site kernel and the two-stage dot sums are checked here, where the GPU
// tests (cuda_spmmv_test) run only on a lent GPU. The emulation's rounding is the host
// compiler's, so each kernel is compared with a long-double loop within a bound derived
// below, and kernels that must do the same arithmetic are compared bit for bit.
#include <gtest/gtest.h>

#include <cuda_runtime.h>  // tests/support/cuda_emulation: first on this test's include path

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/cuda/halo_kernels.cuh"
#include "numerics/cuda/sell_device.cuh"
#include "numerics/cuda/start_vectors.cuh"
#include "numerics/cuda/stencil_device.cuh"
#include "numerics/distributed/halo_device.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/sparse/sell_matrix.hpp"
#include "numerics/spmmv/width_registry.hpp"
#include "tests/support/random_stencil.hpp"
#include "tests/support/model_params.hpp"

namespace {

using topokpm::numerics::kernels::cuda::BasicStencilView;
using topokpm::numerics::kernels::cuda::detail::block_threads;
using topokpm::numerics::kernels::cuda::detail::SweepScalars;
using topokpm::testing::cuda_emulation::emulate_launch;
namespace stencil = topokpm::numerics::kernels::cuda::stencil;

static_assert(TOPOKPM_CUDA_EMULATION, "the emulation's cuda_runtime.h must come first on the include path");

constexpr int kTerms = 7;  // on-site, +-x, +-y, +-z
constexpr int kOffset[kTerms][3] = {{0, 0, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};

struct Shape {
    int nx, ny, nz;
    int periodic[3];
    int orbitals;
    bool potential_per_row;
};

/// A random stencil in the view's layouts: dense blocks with about a third of the entries
/// zero (the masks), the row kernel's entry lists of the non-zero ones, a random potential.
template <class V2>
struct Stencil {
    Shape shape;
    std::vector<V2> blocks;  // T B B, block t row-major
    std::vector<int> terms;  // 4 T: dx, dy, dz, mask
    std::vector<int> entry_begin, entry_column;
    std::vector<V2> entry_value;
    std::vector<double> potential;
    BasicStencilView<V2> view;

    Stencil(const Shape& s, std::mt19937& rng) : shape(s)
    {
        const int b = s.orbitals;
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        std::uniform_int_distribution<int> third(0, 2);
        blocks.resize(kTerms * b * b);
        for (int t = 0; t < kTerms; ++t) {
            int mask = 0;
            for (int e = 0; e < b * b; ++e) {
                const bool nonzero = third(rng) != 0;
                blocks[t * b * b + e] = nonzero ? V2{decltype(V2::x)(u(rng)), decltype(V2::x)(u(rng))} : V2{0, 0};
                if (nonzero && b * b <= 32) mask |= 1 << e;
            }
            terms.insert(terms.end(), {kOffset[t][0], kOffset[t][1], kOffset[t][2], mask});
        }
        // entries of (orbital o, term t) at [entry_begin[o T + t], entry_begin[o T + t + 1])
        entry_begin.push_back(0);
        for (int o = 0; o < b; ++o)
            for (int t = 0; t < kTerms; ++t) {
                for (int c = 0; c < b; ++c) {
                    const V2 v = blocks[(t * b + o) * b + c];
                    if (v.x != 0 || v.y != 0) {
                        entry_column.push_back(c);
                        entry_value.push_back(v);
                    }
                }
                entry_begin.push_back(static_cast<int>(entry_column.size()));
            }
        const int sites = s.nx * s.ny * s.nz;
        potential.resize(s.potential_per_row ? sites * b : sites);
        for (double& v : potential) v = u(rng);
        view.nx = s.nx;
        view.ny = s.ny;
        view.nz = s.nz;
        view.orbitals = b;
        for (int d = 0; d < 3; ++d) view.periodic[d] = s.periodic[d];
        view.num_terms = kTerms;
        view.num_entries = static_cast<int>(entry_column.size());
        view.terms = terms.data();
        view.entry_begin = entry_begin.data();
        view.entry_column = entry_column.data();
        view.entry_value = entry_value.data();
        view.dense_blocks = blocks.data();
        view.potential = potential.data();
        view.potential_per_row = s.potential_per_row ? 1 : 0;
        view.num_rows = sites * b;
    }
    int rows() const { return shape.nx * shape.ny * shape.nz * shape.orbitals; }
};

/// One sweep's result: y and the column sums of the three dot quantities (the partials summed
/// over the blocks in order, as reduce_partials does).
template <class V2>
struct Sweep {
    std::vector<V2> y;
    std::vector<double> dots;  // [3][W]
};

enum class Kernel { site, row };

template <int W, int B, int P, class V2>
Sweep<V2> run(Kernel which, const Stencil<V2>& st, const std::vector<V2>& x, const std::vector<V2>& y0,
              const SweepScalars& s, int grid)
{
    Sweep<V2> out{y0, std::vector<double>(3 * W, 0.0)};
    std::vector<double> partials(3 * static_cast<std::size_t>(grid) * W, 0.0);
    if (which == Kernel::site)
        emulate_launch(stencil::stencil_site_kernel<W, B, P, true, V2>, grid, block_threads, stencil::site_table_bytes(st.view),
                       st.view, x.data(), out.y.data(), s, partials.data());
    else
        emulate_launch(stencil::stencil_augmented_kernel<W, true, V2>, grid, block_threads, stencil::table_bytes(st.view),
                       st.view, x.data(), out.y.data(), s, partials.data());
    for (int q = 0; q < 3; ++q)
        for (int g = 0; g < grid; ++g)
            for (int c = 0; c < W; ++c) out.dots[q * W + c] += partials[(q * grid + g) * W + c];
    return out;
}

/// Checks one strip [c0, c0 + W) of a sweep against the long-double loop of the definition:
///   y_i = scale (sum_t sum_b T_t[o, b] x_(s + d_t, b) + (V - shift) x_i) + beta y_i.
/// Bound per element, u the unit roundoff of the row's sum (float in single, double in
/// double): the k <= 7 B complex products enter each part as 2k fused operations, then the
/// potential, shift, scale and beta terms (4 more, in double), so |err| <= (2k + 6) u (scale S
/// + |beta y_old|) with S = sum |T| |x| + (|V| + |shift|) |x|, plus one rounding of y to the
/// stored type (u_store |y|). Dots: sums of n double products, grouped by the kernel:
/// |err| <= (n + 2) u_d sum |terms| per column. Columns outside the strip must be untouched.
template <int W, class V2>
void expect_matches_definition(const Stencil<V2>& st, const std::vector<V2>& x, const std::vector<V2>& y0,
                               const SweepScalars& s, const Sweep<V2>& got, const std::string& what)
{
    using real = decltype(V2::x);
    const double u = std::numeric_limits<real>::epsilon() / 2, ud = std::numeric_limits<double>::epsilon() / 2;
    const Shape& sh = st.shape;
    const int b = sh.orbitals, r = s.ld, n = st.rows();
    const int ext[3] = {sh.nx, sh.ny, sh.nz};
    std::vector<long double> xx(W, 0), yx_re(W, 0), yx_im(W, 0), mag_xx(W, 0), mag_yx(W, 0);
    int failures = 0;
    for (int site = 0; site < sh.nx * sh.ny * sh.nz; ++site) {
        const int p[3] = {site / sh.nz / sh.ny, site / sh.nz % sh.ny, site % sh.nz};
        for (int o = 0; o < b; ++o) {
            const int row = site * b + o;
            const double v = st.potential[sh.potential_per_row ? row : site];
            for (int k = s.c0; k < s.c0 + W; ++k) {
                long double re = 0, im = 0, mag = 0;
                int products = 0;
                for (int t = 0; t < kTerms; ++t) {
                    int q[3];
                    bool outside = false;
                    for (int d = 0; d < 3; ++d) {
                        q[d] = p[d] + kOffset[t][d];
                        if (q[d] < 0 || q[d] >= ext[d]) {
                            if (!sh.periodic[d]) outside = true;
                            q[d] = (q[d] % ext[d] + ext[d]) % ext[d];
                        }
                    }
                    if (outside) continue;
                    const int qs = q[2] + sh.nz * (q[1] + sh.ny * q[0]);
                    for (int c = 0; c < b; ++c) {
                        const V2 a = st.blocks[(t * b + o) * b + c], xv = x[(qs * b + c) * r + k];
                        re += (long double)a.x * xv.x - (long double)a.y * xv.y;
                        im += (long double)a.x * xv.y + (long double)a.y * xv.x;
                        mag += std::abs((long double)a.x) * (std::abs(xv.x) + std::abs(xv.y)) +
                               std::abs((long double)a.y) * (std::abs(xv.x) + std::abs(xv.y));
                        ++products;
                    }
                }
                const V2 xi = x[row * r + k], old = y0[row * r + k];
                mag += (std::abs(v) + std::abs(s.shift)) * (std::abs(xi.x) + std::abs(xi.y));
                long double yr = s.scale * (re + (v - s.shift) * (long double)xi.x);
                long double yi = s.scale * (im + (v - s.shift) * (long double)xi.y);
                long double old_mag = 0;
                if (s.beta != 0) {
                    yr += s.beta * (long double)old.x;
                    yi += s.beta * (long double)old.y;
                    old_mag = std::abs(s.beta) * (std::abs(old.x) + std::abs(old.y));
                }
                const long double bound = (2 * products + 6) * u * (s.scale * mag + old_mag) +
                                          (sizeof(real) == 4 ? u : 0.0) * (std::abs(yr) + std::abs(yi)) + 1e-300;
                const V2 g = got.y[row * r + k];
                if (!(std::abs(g.x - yr) <= bound && std::abs(g.y - yi) <= bound) && failures++ < 5)
                    ADD_FAILURE() << what << ": y(" << row << ", " << k << ") = " << g.x << " + " << g.y << "i, expected "
                                  << (double)yr << " + " << (double)yi << "i within " << (double)bound;
                const int c = k - s.c0;
                xx[c] += (long double)xi.x * xi.x + (long double)xi.y * xi.y;
                yx_re[c] += (long double)g.x * xi.x + (long double)g.y * xi.y;
                yx_im[c] += (long double)g.x * xi.y - (long double)g.y * xi.x;
                mag_xx[c] += (long double)xi.x * xi.x + (long double)xi.y * xi.y;
                mag_yx[c] += (std::abs(g.x) + std::abs(g.y)) * (std::abs(xi.x) + std::abs(xi.y));
            }
        }
    }
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < r; ++k)
            if ((k < s.c0 || k >= s.c0 + W) && std::memcmp(&got.y[i * r + k], &y0[i * r + k], sizeof(V2)) != 0 &&
                failures++ < 5)
                ADD_FAILURE() << what << ": column " << k << " outside the strip [" << s.c0 << ", " << s.c0 + W
                              << ") was written at row " << i;
    for (int c = 0; c < W; ++c) {
        EXPECT_NEAR(got.dots[c], (double)xx[c], (n + 2) * ud * (double)mag_xx[c]) << what << ": <x|x> of column " << c;
        EXPECT_NEAR(got.dots[W + c], (double)yx_re[c], (n + 2) * ud * (double)mag_yx[c]) << what << ": Re<y|x> " << c;
        EXPECT_NEAR(got.dots[2 * W + c], (double)yx_im[c], (n + 2) * ud * (double)mag_yx[c]) << what << ": Im<y|x> " << c;
    }
}

template <class V2>
bool bitwise_equal(const std::vector<V2>& a, const std::vector<V2>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(V2)) == 0;
}

/// x random; y random (beta = -1) or NaN (beta = 0: the kernels must never read it).
template <class V2>
void blocks_for(int n, int r, double beta, std::mt19937& rng, std::vector<V2>& x, std::vector<V2>& y)
{
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    using real = decltype(V2::x);
    x.resize(static_cast<std::size_t>(n) * r);
    y.resize(x.size());
    for (V2& v : x) v = {real(u(rng)), real(u(rng))};
    for (V2& v : y) v = beta == 0 ? V2{std::numeric_limits<real>::quiet_NaN(), 0} : V2{real(u(rng)), real(u(rng))};
}

struct Case {
    Shape shape;
    int r, c0;  // the block's width and the strip's first column
    double beta;
    int grid;   // fewer blocks than tiles: the grid-stride loop
};

std::string describe(const Case& c, int w)
{
    return "W " + std::to_string(w) + " of R " + std::to_string(c.r) + " from column " + std::to_string(c.c0) + ", " +
           std::to_string(c.shape.nx) + "x" + std::to_string(c.shape.ny) + "x" + std::to_string(c.shape.nz) +
           " periodic " + std::to_string(c.shape.periodic[0]) + std::to_string(c.shape.periodic[1]) +
           std::to_string(c.shape.periodic[2]) + ", B " + std::to_string(c.shape.orbitals) + ", beta " +
           std::to_string(c.beta) + ", grid " + std::to_string(c.grid);
}

/// Site kernel (P = 1) and row kernel against the definition and against each other (the same
/// products in the same order: bit for bit); in single, the paired site kernel (P = 2) against
/// P = 1 (each element's arithmetic unchanged: bit for bit; the dots grouped otherwise).
template <int W, int B, class V2>
void check_case(const Case& c, std::mt19937& rng)
{
    const Stencil<V2> st(c.shape, rng);
    std::vector<V2> x, y0;
    blocks_for(st.rows(), c.r, c.beta, rng, x, y0);
    const SweepScalars s{0.7, 0.3, c.beta, c.r, c.c0, 1};
    const std::string what = describe(c, W) + (sizeof(V2) == 8 ? ", single" : ", double");
    const Sweep<V2> site = run<W, B, 1>(Kernel::site, st, x, y0, s, c.grid);
    expect_matches_definition<W>(st, x, y0, s, site, what + ", site kernel");
    const Sweep<V2> row = run<W, B, 1>(Kernel::row, st, x, y0, s, c.grid);
    expect_matches_definition<W>(st, x, y0, s, row, what + ", row kernel");
    EXPECT_TRUE(bitwise_equal(site.y, row.y)) << what << ": the site and row kernels add the same products in the same order";
    if constexpr (sizeof(V2) == 8 && W >= 2) {
        ASSERT_TRUE(topokpm::numerics::kernels::cuda::detail::paired_columns(s, x.data(), y0.data())) << what;
        const Sweep<V2> paired = run<W, B, 2>(Kernel::site, st, x, y0, s, c.grid);
        EXPECT_TRUE(bitwise_equal(site.y, paired.y)) << what << ": two columns per thread change no element's arithmetic";
        expect_matches_definition<W>(st, x, y0, s, paired, what + ", paired columns");
    }
}

template <class V2>
void check_all(std::mt19937& rng)
{
    // ti-like (B = 4) and graphene-like (B = 2) sites; open and periodic directions; full
    // blocks (W = R) and strips of wider blocks (R = 12 as 8 + 4); a grid smaller than the
    // tiles; beta 0 with NaN in y and beta -1; the potential per site and per row.
    check_case<32, 4, V2>({{5, 4, 3, {1, 1, 0}, 4, false}, 32, 0, -1.0, 3}, rng);
    check_case<32, 2, V2>({{3, 4, 5, {1, 0, 1}, 2, true}, 32, 0, 0.0, 2}, rng);
    check_case<8, 4, V2>({{4, 3, 5, {0, 1, 1}, 4, false}, 12, 0, -1.0, 2}, rng);
    check_case<4, 4, V2>({{4, 3, 5, {0, 1, 1}, 4, true}, 12, 8, 0.0, 1}, rng);
    check_case<2, 2, V2>({{7, 3, 2, {1, 1, 1}, 2, false}, 2, 0, -1.0, 3}, rng);
    check_case<1, 4, V2>({{3, 2, 4, {0, 0, 0}, 4, false}, 3, 2, -1.0, 2}, rng);
    check_case<16, 4, V2>({{3, 3, 3, {1, 1, 1}, 4, false}, 16, 0, -1.0, 5}, rng);
}

TEST(EmulatedStencilKernels, DoubleSiteAndRowKernelsEqualTheDefinition)
{
    std::mt19937 rng(11);
    check_all<double2>(rng);
}

TEST(EmulatedStencilKernels, SingleSiteKernelPairsColumnsWithoutChangingAnElement)
{
    std::mt19937 rng(12);
    check_all<float2>(rng);
}

// A strip whose first column is odd or whose rows are an odd number of values apart cannot be
// paired (16-byte words): the launch keeps one column per thread there.
TEST(EmulatedStencilKernels, PairingNeedsEvenStridesAndAlignedBlocks)
{
    using topokpm::numerics::kernels::cuda::detail::paired_columns;
    alignas(16) float2 block[8];
    EXPECT_TRUE(paired_columns(SweepScalars{1, 0, 0, 4, 2, 1}, block, block + 4));
    EXPECT_FALSE(paired_columns(SweepScalars{1, 0, 0, 37, 0, 1}, block, block + 4));  // R = 37
    EXPECT_FALSE(paired_columns(SweepScalars{1, 0, 0, 4, 1, 1}, block, block + 4));   // c0 odd
    EXPECT_FALSE(paired_columns(SweepScalars{1, 0, 0, 4, 0, 1}, block + 1, block + 4));  // x at 8 bytes
}

// ---- whole sweeps of model stencils: tables, kernel choice, strips, dots ----
//
// The CUDA stencil operator's path, on the host: make_stencil_tables and host_stencil_view
// (what the operator uploads), device_typed, with_stencil_kernel (the launch's choice of
// kernel and columns per thread), strip_widths, the kernels, the partials summed per column.
// Against the CPU stencil operator of the same stencil in double (its checked path in a
// field): two implementations of y_i differ by at most 4 (L_i + 4) u B_i with
// B_i = |scale| (sum_k |a_ik| |x_k| + |shift| |x_i|) + |beta| |y_i| and L_i the row's entries
// (cuda_spmmv_test derives it; a Peierls factor has modulus 1, so |a_ik| is the block
// entry's). Single: u_f for u, plus u_f |y_i| for the one rounding of y; x and y_old are
// floats, widened for the double runs, so every run starts from the same numbers. Dots: 2 n u
// sum |terms| between two summation orders, plus the propagated y bound for <y|x>.

using topokpm::BlockStencil;
using topokpm::complex_double;
using topokpm::complex_single;

template <class T>
struct SweepResult {
    std::vector<T> y;
    std::vector<double> xx;
    std::vector<complex_double> yx;
};

/// One sweep of `view` the CUDA operators' way on the host emulation: strip_widths, the
/// kernel `with_kernel<W>(view, s, x, y, pairing, launch)` chooses (with_stencil_kernel,
/// with_sell_kernel), a grid of at most 3 blocks (grid-stride beyond), the partials summed per
/// column in block order as reduce_partials sums them.
template <class T, class View, class WithKernel>
SweepResult<T> emulated_strips(const View& view, const std::vector<T>& x, const std::vector<T>& y0, int r,
                               const topokpm::AugmentedOps& ops, bool pairing, WithKernel&& with_kernel)
{
    namespace kc = topokpm::numerics::kernels::cuda;
    using V2 = typename kc::detail::DeviceComplex<T>::type;
    SweepResult<T> out{y0, std::vector<double>(r, 0.0), std::vector<complex_double>(r)};
    const V2* xd = reinterpret_cast<const V2*>(x.data());
    V2* yd = reinterpret_cast<V2*>(out.y.data());
    int c0 = 0;
    for (const int w : topokpm::numerics::strip_widths(r)) {
        const SweepScalars s{ops.scale, ops.shift, ops.beta, r, c0, 1};
        topokpm::numerics::with_width(w, [&](auto width) {
            constexpr int W = decltype(width)::value;
            if constexpr (W > 0)
                with_kernel(width, view, s, xd, yd, pairing,
                            [&](auto kernel, std::int64_t units, int per_unit, std::size_t shared) {
                                const int grid = kc::detail::grid_for(units, per_unit, 3);
                                std::vector<double> partials(3 * static_cast<std::size_t>(grid) * W, 0.0);
                                emulate_launch(kernel, grid, block_threads, shared, view, xd, yd, s, partials.data());
                                for (int g = 0; g < grid; ++g)
                                    for (int c = 0; c < W; ++c) {
                                        out.xx[c0 + c] += partials[(0 * grid + g) * W + c];
                                        out.yx[c0 + c] += complex_double(partials[(1 * grid + g) * W + c],
                                                                          partials[(2 * grid + g) * W + c]);
                                    }
                                return grid;
                            });
            return 0;
        });
        c0 += w;
    }
    return out;
}

/// The stencil operator's sweep: its tables (make_stencil_tables, what it uploads) as a view.
template <class T>
SweepResult<T> emulated_sweep(const BlockStencil& st, const std::vector<T>& x, const std::vector<T>& y0, int r,
                              const topokpm::AugmentedOps& ops)
{
    namespace kc = topokpm::numerics::kernels::cuda;
    const kc::StencilTables<T> tables = kc::make_stencil_tables<T>(st);
    return emulated_strips(stencil::device_typed(kc::host_stencil_view(st, tables)), x, y0, r, ops, true,
                           [](auto width, const auto& view, const SweepScalars& s, auto xd, auto yd, bool pairing,
                              auto&& launch) {
                               return stencil::with_stencil_kernel<decltype(width)::value, true>(view, s, xd, yd,
                                                                                                 pairing, launch);
                           });
}

/// B_i and L_i of the header comment, from the stencil's blocks (the definition's loop).
void row_bounds(const BlockStencil& st, const std::vector<complex_double>& x, const std::vector<complex_double>& y0,
                int r, const topokpm::AugmentedOps& ops, std::vector<double>& b, std::vector<int>& length)
{
    const int nb = st.orbitals;
    const int ext[3] = {st.nx, st.ny, st.nz};
    const auto sites = st.num_sites();
    b.assign(static_cast<std::size_t>(st.num_rows()) * r, 0.0);
    length.assign(static_cast<std::size_t>(st.num_rows()), 1);  // the potential
    for (std::int64_t site = 0; site < sites; ++site) {
        const int p[3] = {static_cast<int>(site / st.nz / st.ny), static_cast<int>(site / st.nz % st.ny),
                          static_cast<int>(site % st.nz)};
        for (int o = 0; o < nb; ++o) {
            const std::int64_t row = site * nb + o;
            const double v = st.potential[st.potential_per_row() ? row : site];
            for (int c = 0; c < r; ++c) b[row * r + c] = (std::abs(v) + std::abs(ops.shift)) * std::abs(x[row * r + c]);
            for (int t = 0; t <= static_cast<int>(st.terms.size()); ++t) {
                const int d[3] = {t ? st.terms[t - 1].dx : 0, t ? st.terms[t - 1].dy : 0, t ? st.terms[t - 1].dz : 0};
                const std::vector<complex_double>& block = t ? st.terms[t - 1].block : st.onsite;
                int q[3];
                bool dropped = false;
                for (int k = 0; k < 3; ++k) {
                    q[k] = p[k] + d[k];
                    if (q[k] < 0 || q[k] >= ext[k]) {
                        if (!st.periodic[k]) dropped = true;
                        q[k] = (q[k] % ext[k] + ext[k]) % ext[k];
                    }
                }
                if (dropped) continue;
                const std::int64_t qs = q[2] + static_cast<std::int64_t>(st.nz) * (q[1] + static_cast<std::int64_t>(st.ny) * q[0]);
                for (int col = 0; col < nb; ++col) {
                    const double a = std::abs(block[o * nb + col]);
                    if (a == 0) continue;
                    ++length[row];
                    for (int c = 0; c < r; ++c) b[row * r + c] += a * std::abs(x[(qs * nb + col) * r + c]);
                }
            }
            for (int c = 0; c < r; ++c)
                b[row * r + c] = std::abs(ops.scale) * b[row * r + c] + std::abs(ops.beta) * std::abs(y0[row * r + c]);
        }
    }
}

template <class T>
std::vector<complex_double> widened(const std::vector<T>& v)
{
    return std::vector<complex_double>(v.begin(), v.end());
}

/// `sweep(x, y0, r, ops)` (an emulated CUDA sweep of the stencil's matrix) against the CPU
/// stencil operator of `st`.
template <class T, class Sweep>
void expect_sweep_matches_cpu(const BlockStencil& st, int r, double beta, const std::string& label, Sweep&& sweep)
{
    const std::int64_t n = st.num_rows();
    std::mt19937 rng(static_cast<unsigned>(n * 31 + r));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<T> x(static_cast<std::size_t>(n) * r), y0(x.size());
    for (T& v : x) v = T(u(rng), u(rng));
    for (T& v : y0) v = beta == 0 ? T(std::numeric_limits<float>::quiet_NaN(), 0) : T(u(rng), u(rng));
    const topokpm::AugmentedOps ops{0.37, -0.2, beta, true};
    const SweepResult<T> got = sweep(x, y0, r, ops);

    const std::vector<complex_double> xd = widened(x), y0d = widened(y0);
    topokpm::BlockVector xb(n, r), yb(n, r);
    std::copy(xd.begin(), xd.end(), xb.data());
    std::copy(y0d.begin(), y0d.end(), yb.data());
    topokpm::DotSums cpu_dots;
    topokpm::numerics::make_cpu_stencil_operator(st)->apply(xb, yb, ops, &cpu_dots);

    std::vector<double> b;
    std::vector<int> length;
    row_bounds(st, xd, beta == 0 ? std::vector<complex_double>(xd.size()) : y0d, r, ops, b, length);
    const bool single = sizeof(T) == sizeof(complex_single);
    const double u_sum = (single ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon()) / 2;
    const double u_d = std::numeric_limits<double>::epsilon() / 2;
    std::vector<double> tol(b.size());
    int failures = 0;
    for (std::int64_t i = 0; i < n; ++i)
        for (int c = 0; c < r; ++c) {
            const std::size_t k = static_cast<std::size_t>(i) * r + c;
            const complex_double want = yb.data()[k];
            tol[k] = 4.0 * (length[i] + 4) * u_sum * b[k] + (single ? u_sum * std::abs(want) : 0.0);
            const double diff = std::abs(complex_double(got.y[k]) - want);
            if (!(diff <= tol[k]) && failures++ < 5)
                ADD_FAILURE() << label << ": y(" << i << ", " << c << ") differs from the CPU stencil's by " << diff
                              << " > " << tol[k];
        }
    for (int c = 0; c < r; ++c) {
        double sum_xx = 0, sum_yx = 0, propagated = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const std::size_t k = static_cast<std::size_t>(i) * r + c;
            sum_xx += std::norm(xd[k]);
            sum_yx += std::abs(yb.data()[k]) * std::abs(xd[k]);
            propagated += tol[k] * std::abs(xd[k]);
        }
        EXPECT_NEAR(got.xx[c], cpu_dots.xx[c], 2.0 * n * u_d * sum_xx) << label << ": <x|x> of column " << c;
        EXPECT_LE(std::abs(got.yx[c] - cpu_dots.yx[c]), 2.0 * n * u_d * sum_yx + 2.0 * propagated)
            << label << ": <y|x> of column " << c;
    }
}

struct NamedStencil {
    std::string label;
    BlockStencil stencil;
};

/// Both models with and without a field (the row kernel for every B in a field), and random
/// stencils with diagonal, long-range and merging terms: B = 3 (the row kernel), B = 4 (the
/// site kernel beyond nearest neighbours), the potential per row.
std::vector<NamedStencil> stencils()
{
    std::vector<NamedStencil> out;
    auto p = topokpm::testing::lattice_params("ti", 4, 6, 3, "ppo");
    p.flux = {1, 24};
    p.disorder = 0.8;
    p.disorder_seed = 5;
    out.push_back({"ti 4x6x3 ppo PHI=1/24 disorder", topokpm::hamiltonians::make_model(p)->block_stencil()});
    p = topokpm::testing::lattice_params("graphene", 6, 9, 1, "op");
    p.flux = {2, 9};
    p.dot_potential = -0.3;
    p.dot_radius = 1.5;
    p.dot_period = 3;
    out.push_back({"graphene 6x9 op PHI=2/9 dots", topokpm::hamiltonians::make_model(p)->block_stencil()});
    p = topokpm::testing::lattice_params("ti", 6, 4, 3, "ppo");
    p.dot_potential = 0.4;
    p.dot_radius = 1.0;
    p.dot_period = 2;
    p.disorder = 0.8;
    p.disorder_seed = 3;
    out.push_back({"ti 6x4x3 ppo dots+disorder", topokpm::hamiltonians::make_model(p)->block_stencil()});
    p = topokpm::testing::lattice_params("graphene", 6, 9, 1, "pp");
    p.disorder = 0.5;
    p.disorder_seed = 9;
    out.push_back({"graphene 6x9 pp disorder", topokpm::hamiltonians::make_model(p)->block_stencil()});
    out.push_back({"random B=3 4x3x5 per-row potential",
                   topokpm::testing::relattice(topokpm::testing::random_stencil(3, 21), 4, 3, 5, {true, false, true}, true, 22)});
    out.push_back({"random B=4 3x4x4", topokpm::testing::relattice(topokpm::testing::random_stencil(4, 23), 3, 4, 4,
                                                                   {true, true, false}, false, 24)});
    return out;
}

TEST(EmulatedStencilSweeps, EqualTheCpuStencilOperatorInBothPrecisions)
{
    for (const NamedStencil& k : stencils())
        for (const int r : {1, 12, 32, 37})  // strips 8 + 4, 32 + 4 + 1: W 1, 4, 8, 32, paired or not
            for (const double beta : {0.0, -1.0}) {
                const std::string tail = " R=" + std::to_string(r) + " beta=" + std::to_string(beta);
                const auto emulated = [&](const auto& x, const auto& y0, int w, const topokpm::AugmentedOps& ops) {
                    return emulated_sweep(k.stencil, x, y0, w, ops);
                };
                expect_sweep_matches_cpu<complex_double>(k.stencil, r, beta, k.label + tail + " double", emulated);
                expect_sweep_matches_cpu<complex_single>(k.stencil, r, beta, k.label + tail + " single", emulated);
                if (::testing::Test::HasFailure()) return;
            }
}

// ---- SELL-C-σ sweeps (sell_device.cuh) ----
//
// The SELL matrix of a model (in single: its values rounded to complex float, as the single
// CUDA operator stores them) swept the CUDA operator's way (with_sell_kernel, strips,
// partials) against the CPU stencil operator of the same model (the same rows) within the
// bound above; in single, two columns per thread bit for bit against one.

template <class T>
SweepResult<T> emulated_sell_sweep(const topokpm::numerics::BasicSellMatrix<T>& m, const std::vector<T>& x,
                                   const std::vector<T>& y0, int r, const topokpm::AugmentedOps& ops, bool pairing)
{
    namespace kc = topokpm::numerics::kernels::cuda;
    return emulated_strips(kc::sell::device_typed(kc::host_sell_view(m)), x, y0, r, ops, pairing,
                           [](auto width, const auto& view, const SweepScalars& s, auto xd, auto yd, bool pair,
                              auto&& launch) {
                               return kc::sell::with_sell_kernel<decltype(width)::value, true>(view, s, xd, yd, pair,
                                                                                              launch);
                           });
}

TEST(EmulatedSellSweeps, EqualTheCpuOperatorAndPairColumnsWithoutChangingAnElement)
{
    using topokpm::numerics::SellMatrix;
    for (const char* name : {"ti", "graphene"}) {
        auto p = topokpm::testing::lattice_params(name, 6, 4, name[0] == 't' ? 3 : 1, name[0] == 't' ? "ppo" : "pp");
        p.flux = {1, 24};
        p.disorder = 0.7;
        p.disorder_seed = 2;
        const auto model = topokpm::hamiltonians::make_model(p);
        const BlockStencil st = model->block_stencil();
        const auto n = model->num_rows();
        const SellMatrix md = SellMatrix::build(*model, 0, n, {32, 64});
        const auto ms = topokpm::numerics::convert_values<complex_single>(md);
        for (const int r : {1, 12, 32, 37})
            for (const double beta : {0.0, -1.0}) {
                const std::string label = std::string(name) + " SELL-32-64 in a field R=" + std::to_string(r) +
                                          " beta=" + std::to_string(beta);
                expect_sweep_matches_cpu<complex_double>(st, r, beta, label + " double",
                    [&](const auto& x, const auto& y0, int w, const topokpm::AugmentedOps& ops) {
                        return emulated_sell_sweep(md, x, y0, w, ops, true);
                    });
                expect_sweep_matches_cpu<complex_single>(st, r, beta, label + " single",
                    [&](const auto& x, const auto& y0, int w, const topokpm::AugmentedOps& ops) {
                        const SweepResult<complex_single> paired = emulated_sell_sweep(ms, x, y0, w, ops, true);
                        EXPECT_TRUE(bitwise_equal(paired.y, emulated_sell_sweep(ms, x, y0, w, ops, false).y))
                            << label << ": two columns per thread change no element's arithmetic";
                        return paired;
                    });
                if (::testing::Test::HasFailure()) return;
            }
    }
}

// ---- the halo of a GPU rank (halo_kernels.cuh): gather and remote correction ----
//
// Against the host loops the CPU ranks and the stand-in run (pack_rows_host,
// remote_correction_host). The gather copies: equal bit for bit. The correction sums L_i
// products in double in both precisions, each implementation in its own association, so the
// d of the two differ by at most 2 (L_i + 2) u_d |scale| sum |v| |h|; in double y gains one
// rounding of |y|; in single y + d is rounded once to float, so the two y may also differ by
// one float ulp where the exact sums fall on either side of a rounding boundary. The dot
// share <corr|x> (the change y took, against x) is compared with the host's within the
// propagated bound.

using topokpm::numerics::HaloPattern;

HaloPattern random_pattern(std::int64_t local_rows, std::int64_t halo_rows, std::mt19937& rng)
{
    HaloPattern p;
    p.halo_rows = halo_rows;
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::uniform_int_distribution<int> entries(1, 6);
    std::uniform_int_distribution<topokpm::local_index> halo_row(0, static_cast<topokpm::local_index>(halo_rows - 1));
    for (topokpm::local_index i = 0; i < local_rows; i += 1 + static_cast<topokpm::local_index>(rng() % 3)) {
        p.remote_row.push_back(i);  // distinct rows, as the operator's
        for (int e = entries(rng); e > 0; --e) {
            p.remote_col.push_back(halo_row(rng));
            p.remote_vals.emplace_back(u(rng), u(rng));
        }
        p.remote_ptr.push_back(static_cast<std::int64_t>(p.remote_col.size()));
    }
    for (topokpm::local_index i = 0; i < local_rows; i += 2) p.send_index.push_back(i);
    return p;
}

template <class T>
void check_halo(int r, std::mt19937& rng)
{
    namespace kc = topokpm::numerics::kernels::cuda;
    using V2 = typename kc::detail::DeviceComplex<T>::type;
    using Real = typename T::value_type;
    const std::int64_t local_rows = 300, halo_rows = 70;
    const HaloPattern p = random_pattern(local_rows, halo_rows, rng);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<T> x(local_rows * r), y(local_rows * r), halo(halo_rows * r);
    for (auto* v : {&x, &y, &halo})
        for (T& e : *v) e = T(u(rng), u(rng));
    const std::string label = std::string(sizeof(Real) == 4 ? "single" : "double") + " R=" + std::to_string(r);

    // gather: the rows other ranks need, in send_index order
    std::vector<T> packed_host(p.send_index.size() * r), packed(packed_host.size());
    topokpm::numerics::pack_rows_host(p, x.data(), r, packed_host.data());
    const auto count = static_cast<std::int64_t>(p.send_index.size());
    emulate_launch(kc::halo::gather_rows_kernel<V2>, 2, 256, 0, p.send_index.data(), count, r,
                   reinterpret_cast<const V2*>(x.data()), reinterpret_cast<V2*>(packed.data()));
    EXPECT_TRUE(bitwise_equal(packed, packed_host)) << label << ": gathered rows";

    // remote correction
    const double scale = 0.7;
    std::vector<T> y_host = y, y_dev = y;
    topokpm::DotSums host_dots;
    host_dots.reset(r);
    topokpm::numerics::remote_correction_host(p, halo.data(), x.data(), y_host.data(), r, scale, &host_dots);
    const auto rows = static_cast<std::int64_t>(p.remote_row.size());
    std::vector<complex_double> corr(rows * r), xg(rows * r);
    emulate_launch(kc::halo::remote_correction_kernel<V2>, 3, 256, 0, rows, r, p.remote_row.data(),
                   p.remote_ptr.data(), p.remote_col.data(), reinterpret_cast<const double2*>(p.remote_vals.data()),
                   reinterpret_cast<const V2*>(halo.data()), reinterpret_cast<const V2*>(x.data()),
                   reinterpret_cast<V2*>(y_dev.data()), scale, reinterpret_cast<double2*>(corr.data()),
                   reinterpret_cast<double2*>(xg.data()));
    const double ud = std::numeric_limits<double>::epsilon() / 2;
    std::vector<complex_double> share(r);
    std::vector<double> share_bound(r, 0.0);
    int failures = 0;
    std::vector<bool> remote(local_rows, false);
    for (std::int64_t i = 0; i < rows; ++i) {
        const std::int64_t row = p.remote_row[i];
        remote[row] = true;
        for (int c = 0; c < r; ++c) {
            double mag = 0;
            for (std::int64_t e = p.remote_ptr[i]; e < p.remote_ptr[i + 1]; ++e)
                mag += std::abs(p.remote_vals[e]) * std::abs(complex_double(halo[p.remote_col[e] * r + c]));
            const int len = static_cast<int>(p.remote_ptr[i + 1] - p.remote_ptr[i]);
            const complex_double got = y_dev[row * r + c], want = y_host[row * r + c];
            const double ulp = sizeof(Real) == 4 ? 2.0 * std::numeric_limits<float>::epsilon() * std::abs(want) : 0.0;
            const double bound = 2.0 * (len + 2) * ud * scale * mag + 2.0 * ud * std::abs(want) + ulp;
            if (!(std::abs(got - want) <= bound) && failures++ < 5)
                ADD_FAILURE() << label << ": y(" << row << ", " << c << ") = " << got << ", host " << want << ", bound "
                              << bound;
            EXPECT_EQ(xg[i * r + c], complex_double(x[row * r + c])) << label << ": x at the remote row";
            // corr is the change y took: exactly y_new - y_old in single, d in double
            const complex_double old = y[row * r + c];
            if (sizeof(Real) == 4) {
                EXPECT_EQ(corr[i * r + c], got - old) << label << ": corr is y_new - y_old";
            }
            share[c] += std::conj(corr[i * r + c]) * xg[i * r + c];
            share_bound[c] += (bound + 2.0 * ud * std::abs(corr[i * r + c])) * std::abs(xg[i * r + c]);
        }
    }
    for (std::int64_t row = 0; row < local_rows; ++row)
        if (!remote[row]) {
            for (int c = 0; c < r; ++c)
                EXPECT_TRUE(std::memcmp(&y_dev[row * r + c], &y[row * r + c], sizeof(T)) == 0)
                    << label << ": row " << row << " has no remote entries and must stay";
        }
    for (int c = 0; c < r; ++c)
        EXPECT_LE(std::abs(share[c] - host_dots.yx[c]), share_bound[c] + 1e-300) << label << ": remote dot share " << c;
}

TEST(EmulatedHaloKernels, GatherAndRemoteCorrectionEqualTheHostLoops)
{
    std::mt19937 rng(31);
    for (const int r : {1, 3, 8}) {
        check_halo<complex_double>(r, rng);
        check_halo<complex_single>(r, rng);
    }
}

// ---- random-phase start vectors made on the device (start_vectors.cuh) ----
//
// The kernel's phases are the host's bit for bit (the same constexpr counter-based generator
// and 2 pi); its cos and sin are the device's (here the host libm's scalar sincos, on the
// host the SIMD libmvec's), each within an ulp or two of the exact value: entries differ by
// at most 4 ulp of 1 in double; in single both round the double to float, so they differ
// by at most one float ulp. Columns from valid_cols on are zero; a rank's rows (row_begin)
// and later blocks (first_vector) take the serial block's numbers.

template <class T>
void check_start_vectors(std::int64_t rows, int cols, int valid, std::int64_t first_vector, std::int64_t row_begin)
{
    namespace kc = topokpm::numerics::kernels::cuda;
    using V2 = typename kc::detail::DeviceComplex<T>::type;
    const std::uint64_t seed = 77;
    const std::int64_t global_rows = 5000;
    std::vector<T> host(rows * cols), dev(rows * cols, T(-9, -9));
    topokpm::numerics::random_phase_values(host.data(), rows, cols, valid, seed, first_vector, global_rows, row_begin);
    emulate_launch(kc::start::random_phase_kernel<V2>, 3, 256, 0, reinterpret_cast<V2*>(dev.data()), rows, cols, valid,
                   topokpm::vector_stream_seed(seed), static_cast<std::uint64_t>(first_vector),
                   static_cast<std::uint64_t>(global_rows), static_cast<std::uint64_t>(row_begin));
    const bool single = sizeof(T) == sizeof(complex_single);
    const double tol = single ? std::numeric_limits<float>::epsilon() : 4 * std::numeric_limits<double>::epsilon();
    int failures = 0;
    for (std::int64_t i = 0; i < rows; ++i)
        for (int c = 0; c < cols; ++c) {
            const T d = dev[i * cols + c], h = host[i * cols + c];
            const bool ok = c >= valid ? d == T(0, 0) && h == T(0, 0)
                                       : std::abs(complex_double(d) - complex_double(h)) <= tol &&
                                             std::abs(std::abs(complex_double(d)) - 1.0) <= tol;
            if (!ok && failures++ < 5)
                ADD_FAILURE() << (single ? "single" : "double") << " entry (" << i << ", " << c << "): device " << d
                              << ", host " << h;
        }
}

TEST(EmulatedStartVectors, EqualTheHostLoopToTheLastUlpsOfCosAndSin)
{
    check_start_vectors<complex_double>(700, 8, 8, 0, 0);
    check_start_vectors<complex_double>(333, 3, 2, 6, 1200);  // a later block's zero column, a rank's rows
    check_start_vectors<complex_single>(700, 8, 8, 0, 0);
    check_start_vectors<complex_single>(250, 32, 27, 32, 4000);
}

}  // namespace
