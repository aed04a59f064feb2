#include "numerics/base/block_stencil.hpp"

#include <cstdlib>

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
    TOPOKPM_REQUIRE(0 <= x_begin && x_begin < x_end && x_end <= stencil.nx, "x-slab [", x_begin, ", ", x_end,
                    ") of a stencil with nx = ", stencil.nx);
    BlockStencil slab = stencil;
    slab.nx = x_end - x_begin;
    // Couplings across the slab's x faces (and the periodic wrap) belong to the remote part.
    slab.periodic[0] = false;
    const global_index plane_sites = global_index(stencil.ny) * stencil.nz;
    const global_index per = stencil.potential_per_row() ? plane_sites * stencil.orbitals : plane_sites;
    slab.potential.assign(stencil.potential.begin() + x_begin * per, stencil.potential.begin() + x_end * per);
    return slab;
}

}  // namespace topokpm
