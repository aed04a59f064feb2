#pragma once
/// @file spec_reference.hpp
/// Independent test-side implementations of models.md §2/§3: the full dense matrices of
/// `ti` and `graphene` built by plain loops straight from the spec text (Kronecker products
/// of Pauli matrices, bond lists, the V formulas), with no code shared with hamiltonians/.
/// Compiled with -ffp-contract=off like the library, so V comes out bit-identical.

#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"

namespace topokpm::testing::spec {

using cplx = std::complex<double>;
using Mat2 = std::array<std::array<cplx, 2>, 2>;
using Mat4 = std::array<std::array<cplx, 4>, 4>;

inline Mat4 kron(const Mat2& a, const Mat2& b)
{
    Mat4 r{};
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) r[i][j] = a[i / 2][j / 2] * b[i % 2][j % 2];
    return r;
}

/// G[0] = G0 (identity), G[1] .. G[4] = G1 .. G4 of models.md §2.
inline std::array<Mat4, 5> dirac()
{
    const cplx i(0.0, 1.0);
    const Mat2 s0{{{1.0, 0.0}, {0.0, 1.0}}}, sx{{{0.0, 1.0}, {1.0, 0.0}}};
    const Mat2 sy{{{0.0, -i}, {i, 0.0}}}, sz{{{1.0, 0.0}, {0.0, -1.0}}};
    return {kron(s0, s0), kron(sz, s0), kron(sx, sx), kron(sx, sy), kron(sx, sz)};
}

/// T_j = -t (G1 - i G_{j+1}) / 2, j = 1, 2, 3 (x, y, z).
inline Mat4 hopping_block(int j, double t)
{
    const auto g = dirac();
    const cplx i(0.0, 1.0);
    Mat4 r{};
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) r[a][b] = -t * (g[1][a][b] - i * g[j + 1][a][b]) / 2.0;
    return r;
}

inline std::uint64_t splitmix(std::uint64_t seed, std::uint64_t c)
{
    std::uint64_t z = seed + (c + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
inline double unif(std::uint64_t seed, std::uint64_t c) { return std::ldexp(double(splitmix(seed, c) >> 11), -53); }

inline bool ti_inside_dot(const hamiltonians::ModelParams& p, int x, int y)
{
    if (p.dot_period == 0) return false;
    const double dx = (x % p.dot_period) - (p.dot_period - 1) / 2.0;
    const double dy = (y % p.dot_period) - (p.dot_period - 1) / 2.0;
    return dx * dx + dy * dy < p.dot_radius * p.dot_radius + 1e-9;
}

inline double ti_potential(const hamiltonians::ModelParams& p, int x, int y, int z)
{
    const std::uint64_t site = std::uint64_t(z + p.nz * (y + p.ny * x));
    const double dot = p.dot_potential * (ti_inside_dot(p, x, y) ? 1 : 0) * (z < p.dot_depth ? 1 : 0);
    return dot + p.disorder * (unif(splitmix(p.disorder_seed, 1), site) - 0.5);
}

/// Dense column-major ti matrix; `boundary` must be given explicitly ("ppo" etc.).
inline std::vector<cplx> ti_dense(const hamiltonians::ModelParams& p)
{
    const int n[3] = {p.nx, p.ny, p.nz};
    const long dim = 4L * p.nx * p.ny * p.nz;
    std::vector<cplx> a(size_t(dim * dim));
    const auto row = [&](int x, int y, int z, int o) { return long(o) + 4L * (z + p.nz * (y + long(p.ny) * x)); };
    const auto g = dirac();
    for (int x = 0; x < p.nx; ++x)
        for (int y = 0; y < p.ny; ++y)
            for (int z = 0; z < p.nz; ++z) {
                const double v = ti_potential(p, x, y, z);
                // The exchange mass (docs/physics.md, not in models.md): M_ex s0 (x) sz on the
                // layers z = 0 and Nz - 1 of a slab open in z, added to V before the mass term.
                const bool face = p.exchange_mass != 0.0 && (z == 0 || z == p.nz - 1);
                for (int o = 0; o < 4; ++o) {
                    const double ex = face ? (o % 2 == 0 ? p.exchange_mass : -p.exchange_mass) : 0.0;  // s = o % 2
                    a[size_t(row(x, y, z, o) * (dim + 1))] += (face ? v + ex : v) + p.m * g[1][o][o].real();
                }
                for (int j = 1; j <= 3; ++j) {
                    int c[3] = {x, y, z};
                    c[j - 1] += 1;
                    if (c[j - 1] == n[j - 1]) {
                        if (p.boundary[j - 1] == 'o') continue;
                        c[j - 1] = 0;
                    }
                    const Mat4 tj = hopping_block(j, p.t);
                    for (int s = 0; s < 4; ++s)
                        for (int u = 0; u < 4; ++u) {
                            // column site n, row site n + e_j: T_j; the other way: T_j^dag.
                            a[size_t(row(c[0], c[1], c[2], s) + dim * row(x, y, z, u))] += tj[s][u];
                            a[size_t(row(x, y, z, s) + dim * row(c[0], c[1], c[2], u))] += std::conj(tj[u][s]);
                        }
                }
            }
    return a;
}

/// Cartesian position of atom (m, n, s): m a1 + n a2 (+ (0, 1) for B).
inline std::array<double, 2> graphene_position(double m, double n, int s)
{
    const double r3 = std::sqrt(3.0);
    return {m * r3 + n * r3 / 2, n * 1.5 + (s == 1 ? 1.0 : 0.0)};
}

/// Brute force: every dot centre, every periodic image of the sample (-1..1 x -1..1).
inline bool graphene_inside_dot(const hamiltonians::ModelParams& p, int m, int n, int s)
{
    if (p.dot_period == 0) return false;
    const int pp = p.dot_period, h = pp / 2;
    const auto r = graphene_position(m, n, s);
    double best = 1e300;
    for (int i = 0; i < p.nx / pp; ++i)
        for (int j = 0; j < p.ny / pp; ++j)
            for (int k = -1; k <= 1; ++k)
                for (int l = -1; l <= 1; ++l) {
                    const double cm = i * pp + h + 1.0 / 3 + k * p.nx, cn = j * pp + h + 1.0 / 3 + l * p.ny;
                    const auto c = graphene_position(cm, cn, 0);
                    const double dx = r[0] - c[0], dy = r[1] - c[1];
                    best = std::min(best, dx * dx + dy * dy);
                }
    return best < p.dot_radius * p.dot_radius + 1e-9;
}

inline double graphene_potential(const hamiltonians::ModelParams& p, int m, int n, int s)
{
    const std::uint64_t row = std::uint64_t(s + 2 * (n + p.ny * m));
    const double dot = p.dot_potential * (graphene_inside_dot(p, m, n, s) ? 1 : 0);
    return dot + p.disorder * (unif(splitmix(p.disorder_seed, 1), row) - 0.5);
}

/// Dense column-major graphene matrix; `boundary` must be given explicitly.
inline std::vector<cplx> graphene_dense(const hamiltonians::ModelParams& p)
{
    const long dim = 2L * p.nx * p.ny;
    std::vector<cplx> a(size_t(dim * dim));
    const auto row = [&](int m, int n, int s) { return long(s) + 2L * (n + long(p.ny) * m); };
    const int bonds[3][2] = {{0, 0}, {1, -1}, {0, -1}};  // A(m,n) -> B(m + dm, n + dn)
    for (int m = 0; m < p.nx; ++m)
        for (int n = 0; n < p.ny; ++n) {
            for (int s = 0; s < 2; ++s) a[size_t(row(m, n, s) * (dim + 1))] += graphene_potential(p, m, n, s);
            for (const auto& b : bonds) {
                int mm = m + b[0], nn = n + b[1];
                if ((mm < 0 || mm >= p.nx) && p.boundary[0] == 'o') continue;
                if ((nn < 0 || nn >= p.ny) && p.boundary[1] == 'o') continue;
                mm = (mm + p.nx) % p.nx;
                nn = (nn + p.ny) % p.ny;
                a[size_t(row(m, n, 0) + dim * row(mm, nn, 1))] += -p.t;
                a[size_t(row(mm, nn, 1) + dim * row(m, n, 0))] += -p.t;
            }
        }
    return a;
}

}  // namespace topokpm::testing::spec
