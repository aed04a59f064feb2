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

}  // namespace topokpm
