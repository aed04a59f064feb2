#pragma once
/// @file random_stencil.hpp
/// Hand-made BlockStencils for the stencil kernel tests (cpu_stencil_test,
/// cpu_stencil_single_test): a stencil moved to another lattice, and a random dense one
/// with merged, diagonal and long-range terms, and its 2-D form for the strip kernel.

#include <array>
#include <random>
#include <string>
#include <vector>

#include "numerics/base/block_stencil.hpp"

namespace topokpm::testing {

/// The stencil `s` on another lattice (extents and boundaries changed by hand, as the
/// models refuse periodic extents below 3 / 2), with a fresh random potential per site
/// (or per row when `per_row`).
inline BlockStencil relattice(BlockStencil s, int nx, int ny, int nz, std::array<bool, 3> periodic, bool per_row,
                              unsigned seed)
{
    s.nx = nx;
    s.ny = ny;
    s.nz = nz;
    s.periodic = periodic;
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> u(-1.5, 1.5);
    s.potential.resize(static_cast<size_t>(per_row ? s.num_rows() : s.num_sites()));
    for (double& v : s.potential) v = u(gen);
    return s;
}

/// A random stencil with B orbitals: dense random blocks for +-x, +-y, +-z, a diagonal
/// term (1, -1, 0), a long-range term (0, 0, 2), a term with offset 0 (merges into the
/// on-site block) and a duplicate of +x (merges with it); one block with a zero column.
inline BlockStencil random_stencil(int nb, unsigned seed)
{
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    auto block = [&] {
        std::vector<complex_type> b(static_cast<size_t>(nb) * nb);
        for (complex_type& v : b) v = complex_type(u(gen), u(gen));
        return b;
    };
    BlockStencil s;
    s.name = "random" + std::to_string(nb);
    s.orbitals = nb;
    s.onsite = block();
    const int offs[][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1},
                           {1, -1, 0}, {0, 0, 2}, {0, 0, 0}, {1, 0, 0}};
    for (const auto& d : offs) s.terms.push_back({d[0], d[1], d[2], block()});
    for (int o = 0; o < nb; ++o) s.terms[2].block[static_cast<size_t>(o) * nb] = 0.0;  // a zero column
    return s;
}

/// A 2-D stencil with dense complex 2 x 2 blocks (the complex, non-real path of the strip
/// form of two steps per pass): +-x, +-y, the diagonal (1, -1) and a range-2 term (0, 2)
/// along the sites (site reach 2), a random potential per site.
inline BlockStencil complex_plane_stencil(int nx, int ny, std::array<bool, 3> periodic, unsigned seed)
{
    BlockStencil s = random_stencil(2, seed);
    std::vector<StencilTerm> terms;
    for (const StencilTerm& t : s.terms)
        if (t.dz == 0) terms.push_back(t);
    terms.push_back({0, 2, 0, terms.front().block});
    s.terms = terms;
    s.name = "plane2";
    return relattice(s, nx, ny, 1, periodic, false, seed + 1);
}

}  // namespace topokpm::testing
