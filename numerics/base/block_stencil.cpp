#include "numerics/base/block_stencil.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "numerics/base/dense_eigen.hpp"
#include "runtime/base/error.hpp"

namespace topokpm {

void BlockStencil::validate() const
{
    TOPOKPM_USER_REQUIRE(nx >= 1 && ny >= 1 && nz >= 1, "block stencil '", name, "': extents ", nx, "x", ny, "x",
                         nz, " must be >= 1");
    TOPOKPM_USER_REQUIRE(orbitals >= 1 && orbitals <= 8, "block stencil '", name, "': ", orbitals,
                         " orbitals per site; allowed range is 1 .. 8");
    const std::size_t bb = static_cast<std::size_t>(orbitals) * orbitals;
    TOPOKPM_USER_REQUIRE(onsite.size() == bb, "block stencil '", name, "': on-site block has ", onsite.size(),
                         " entries, expected B x B = ", bb);
    for (const StencilTerm& t : terms)
        TOPOKPM_USER_REQUIRE(t.block.size() == bb, "block stencil '", name, "': term (", t.dx, ", ", t.dy, ", ",
                             t.dz, ") has ", t.block.size(), " entries, expected B x B = ", bb);
    TOPOKPM_USER_REQUIRE(global_index(potential.size()) == num_sites() ||
                             global_index(potential.size()) == num_rows(),
                         "block stencil '", name, "': potential has ", potential.size(), " values, expected ",
                         num_sites(), " (per site) or ", num_rows(), " (per row)");
    if (field.active()) {
        const std::size_t slots = (1 + terms.size()) * bb;
        TOPOKPM_USER_REQUIRE(field.along.size() == slots * static_cast<std::size_t>(ny) &&
                                 field.across.size() == slots * static_cast<std::size_t>(nx),
                             "block stencil '", name, "': field tables of ", field.along.size(), " and ",
                             field.across.size(), " phases, expected ", slots * ny, " and ", slots * nx);
    }
}

SpectralBounds gershgorin_bounds(const BlockStencil& s)
{
    s.validate();
    const int nb = s.orbitals;
    std::vector<double> lo(static_cast<size_t>(nb)), hi(static_cast<size_t>(nb));
    for (int o = 0; o < nb; ++o) {
        std::vector<complex_type> own(s.onsite.begin() + o * nb, s.onsite.begin() + (o + 1) * nb);
        double radius = 0.0;
        for (const StencilTerm& t : s.terms) {
            if (t.dx == 0 && t.dy == 0 && t.dz == 0) {
                for (int b = 0; b < nb; ++b) own[b] += t.block[o * nb + b];
            } else {
                for (int b = 0; b < nb; ++b) radius += std::abs(t.block[o * nb + b]);
            }
        }
        for (int b = 0; b < nb; ++b)
            if (b != o) radius += std::abs(own[b]);
        lo[o] = own[o].real() - radius;
        hi[o] = own[o].real() + radius;
    }
    const double lo_all = *std::min_element(lo.begin(), lo.end()), hi_all = *std::max_element(hi.begin(), hi.end());
    const bool per_row = s.potential_per_row();
    const global_index n = static_cast<global_index>(s.potential.size());
    const double* v = s.potential.data();
    double lower = std::numeric_limits<double>::infinity(), upper = -lower;
#pragma omp parallel for reduction(min : lower) reduction(max : upper) schedule(static)
    for (global_index i = 0; i < n; ++i) {
        const int o = per_row ? static_cast<int>(i % nb) : 0;
        lower = std::min(lower, v[i] + (per_row ? lo[o] : lo_all));
        upper = std::max(upper, v[i] + (per_row ? hi[o] : hi_all));
    }
    return {lower, upper};
}

namespace {

/// The neighbour coordinate of q + d along an extent (wrapped when periodic), or -1 outside.
int wrapped_coord(int q, int extent, bool periodic)
{
    if (q >= 0 && q < extent) return q;
    if (!periodic) return -1;
    return ((q % extent) + extent) % extent;
}

/// f(d) = (1 / n) sum over q in [0, n) with q + d inside (or wrapped) of exp(i k (q' - q)),
/// k = 0 or pi: the plane wave's amplitude ratio summed over one direction (real).
double plane_wave_factor(int d, int n, bool periodic, bool k_pi)
{
    double f = 0.0;
    for (int q = 0; q < n; ++q) {
        const int qn = wrapped_coord(q + d, n, periodic);
        if (qn < 0) continue;
        f += k_pi && ((qn - q) % 2 != 0) ? -1.0 : 1.0;
    }
    return f / n;
}

}  // namespace

std::optional<SpectralBounds> plane_wave_rayleigh_bounds(const BlockStencil& s)
{
    s.validate();
    const int nb = s.orbitals, nz = s.nz;
    const int dim = nb * nz;
    if (dim > 512 || s.field.active()) return std::nullopt;
    // The potential adds sum |psi|^2 V to a quotient: within [min V, max V] times |psi|^2.
    const global_index n = static_cast<global_index>(s.potential.size());
    const double* v = s.potential.data();
    double vmin = std::numeric_limits<double>::infinity(), vmax = -vmin;
#pragma omp parallel for reduction(min : vmin) reduction(max : vmax) schedule(static)
    for (global_index i = 0; i < n; ++i) {
        vmin = std::min(vmin, v[i]);
        vmax = std::max(vmax, v[i]);
    }
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const bool kx_pi : {false, true})
        for (const bool ky_pi : {false, true}) {
            std::vector<complex_type> m(static_cast<size_t>(dim) * dim, complex_type(0.0, 0.0));  // column-major
            auto add = [&](int row, int col, complex_type a) { m[static_cast<size_t>(col) * dim + row] += a; };
            for (int z = 0; z < nz; ++z)
                for (int o = 0; o < nb; ++o)
                    for (int b = 0; b < nb; ++b) add(o + nb * z, b + nb * z, s.onsite[static_cast<size_t>(o * nb + b)]);
            for (const StencilTerm& t : s.terms) {
                const double f = plane_wave_factor(t.dx, s.nx, s.periodic[0], kx_pi) *
                                 plane_wave_factor(t.dy, s.ny, s.periodic[1], ky_pi);
                if (f == 0.0) continue;
                for (int z = 0; z < nz; ++z) {
                    const int qz = wrapped_coord(z + t.dz, nz, s.periodic[2]);
                    if (qz < 0) continue;
                    for (int o = 0; o < nb; ++o)
                        for (int b = 0; b < nb; ++b)
                            add(o + nb * z, b + nb * qz, f * t.block[static_cast<size_t>(o * nb + b)]);
                }
            }
            // The quadratic form of a Hermitian H is real: m is Hermitian up to rounding.
            for (int c = 0; c < dim; ++c)
                for (int r = c; r < dim; ++r) {
                    const complex_type a = 0.5 * (m[static_cast<size_t>(c) * dim + r] + std::conj(m[static_cast<size_t>(r) * dim + c]));
                    m[static_cast<size_t>(c) * dim + r] = a;
                }
            const std::vector<double> e = numerics::hermitian_eigenvalues(m, dim, 'L');
            lo = std::min(lo, e.front());
            hi = std::max(hi, e.back());
        }
    lo += vmax;
    hi += vmin;
    if (!(lo < hi)) return std::nullopt;
    return SpectralBounds{lo, hi};
}

global_index BlockStencil::num_nonzeros() const
{
    auto count_nonzero = [](const std::vector<complex_type>& block) {
        global_index k = 0;
        for (const complex_type& v : block) k += v != complex_type(0.0, 0.0);
        return k;
    };
    // Diagonal always stored (it carries the potential), plus the off-diagonal on-site entries.
    global_index onsite_offdiag = 0;
    for (int o = 0; o < orbitals; ++o)
        for (int b = 0; b < orbitals; ++b)
            onsite_offdiag += o != b && onsite[o * orbitals + b] != complex_type(0.0, 0.0);
    global_index total = num_sites() * (orbitals + onsite_offdiag);
    const std::array<int, 3> extent{nx, ny, nz};
    for (const StencilTerm& t : terms) {
        const std::array<int, 3> d{t.dx, t.dy, t.dz};
        global_index sites = 1;  // sites whose neighbour s + d exists
        for (int k = 0; k < 3; ++k)
            sites *= periodic[k] ? extent[k] : std::max(0, extent[k] - std::abs(d[k]));
        total += sites * count_nonzero(t.block);
    }
    return total;
}

BlockStencil x_slab(const BlockStencil& stencil, int x_begin, int x_end)
{
    BlockStencil slab = xy_tile(stencil, x_begin, x_end, 0, stencil.ny);
    // Couplings across the slab's x faces (and the periodic wrap) belong to the remote part.
    slab.periodic[0] = false;
    return slab;
}

BlockStencil xy_tile(const BlockStencil& stencil, int x_begin, int x_end, int y_begin, int y_end)
{
    TOPOKPM_REQUIRE(0 <= x_begin && x_begin < x_end && x_end <= stencil.nx && 0 <= y_begin && y_begin < y_end &&
                        y_end <= stencil.ny,
                    "tile x [", x_begin, ", ", x_end, ") y [", y_begin, ", ", y_end, ") of a stencil with nx = ",
                    stencil.nx, ", ny = ", stencil.ny);
    BlockStencil tile = stencil;
    tile.nx = x_end - x_begin;
    tile.ny = y_end - y_begin;
    if (tile.nx < stencil.nx) tile.periodic[0] = false;
    if (tile.ny < stencil.ny) tile.periodic[1] = false;
    // Potential entries per (x, y) column of sites: nz sites, times B when it is per row.
    const global_index column = global_index(stencil.nz) * (stencil.potential_per_row() ? stencil.orbitals : 1);
    tile.potential.clear();
    tile.potential.reserve(static_cast<size_t>(column * tile.nx * tile.ny));
    for (int x = x_begin; x < x_end; ++x) {
        const auto first = stencil.potential.begin() + (global_index(x) * stencil.ny + y_begin) * column;
        tile.potential.insert(tile.potential.end(), first, first + tile.ny * column);
    }
    if (stencil.field.active()) {  // each entry's phases over the tile's y and x
        const std::size_t slots = stencil.field.along.size() / static_cast<std::size_t>(stencil.ny);
        tile.field.along.clear();
        tile.field.across.clear();
        for (std::size_t k = 0; k < slots; ++k) {
            const auto along = stencil.field.along.begin() + static_cast<std::ptrdiff_t>(k * stencil.ny);
            tile.field.along.insert(tile.field.along.end(), along + y_begin, along + y_end);
            const auto across = stencil.field.across.begin() + static_cast<std::ptrdiff_t>(k * stencil.nx);
            tile.field.across.insert(tile.field.across.end(), across + x_begin, across + x_end);
        }
    }
    return tile;
}

}  // namespace topokpm
