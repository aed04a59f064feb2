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
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "numerics/cuda/stencil_device.cuh"

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

}  // namespace
