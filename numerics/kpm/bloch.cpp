#include "numerics/kpm/bloch.hpp"

#include <cmath>

#include "runtime/base/error.hpp"

namespace topokpm::numerics {

std::vector<complex_type> bloch_hamiltonian(const BlockStencil& stencil, const Momentum& k)
{
    stencil.validate();
    TOPOKPM_USER_REQUIRE(stencil.periodic[0] && stencil.periodic[1], "{k_points}: the Bloch Hamiltonian needs periodic "
                         "x and y (momenta are not good quantum numbers otherwise)");
    const int b = stencil.orbitals, nz = stencil.nz, s_count = b * nz;
    std::vector<complex_type> h(static_cast<size_t>(s_count) * s_count, complex_type(0.0, 0.0));
    auto at = [&](int zr, int o, int zc, int oc) -> complex_type& {
        return h[static_cast<size_t>(o + b * zr) + static_cast<size_t>(s_count) * (oc + b * zc)];
    };
    // exp(i 2 pi m d / n) with the integer m d reduced first (accurate for large m, n).
    auto phase = [](long long m, int d, int n) {
        const long long r = ((m * d) % n + n) % n;
        return 2.0 * M_PI * static_cast<double>(r) / n;
    };
    for (int z = 0; z < nz; ++z)
        for (int o = 0; o < b; ++o) {
            for (int oc = 0; oc < b; ++oc) at(z, o, z, oc) += stencil.onsite[static_cast<size_t>(o * b + oc)];
            // The cell (0, 0): site z (per site) or row o + B z (per row).
            at(z, o, z, o) += stencil.potential_per_row() ? stencil.potential[static_cast<size_t>(o + b * z)]
                                                          : stencil.potential[static_cast<size_t>(z)];
        }
    for (const StencilTerm& t : stencil.terms) {
        const double ph = phase(k.mx, t.dx, stencil.nx) + phase(k.my, t.dy, stencil.ny);
        const complex_type e(std::cos(ph), std::sin(ph));
        for (int z = 0; z < nz; ++z) {
            int zc = z + t.dz;
            if (stencil.periodic[2]) zc = ((zc % nz) + nz) % nz;
            else if (zc < 0 || zc >= nz) continue;
            for (int o = 0; o < b; ++o)
                for (int oc = 0; oc < b; ++oc) at(z, o, zc, oc) += t.block[static_cast<size_t>(o * b + oc)] * e;
        }
    }
    return h;
}

}  // namespace topokpm::numerics
