#include "numerics/kpm/bloch.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/base/error.hpp"

namespace topokpm::numerics {

std::vector<complex_type> bloch_hamiltonian(const Operator& op, const PlaneWaveLattice& lattice, const Momentum& k)
{
    const int s_count = lattice.states_per_cell;
    const global_index n = op.num_rows();
    TOPOKPM_REQUIRE(n == static_cast<global_index>(lattice.nx) * lattice.ny * s_count, "operator of ", n,
                    " rows for a ", lattice.nx, "x", lattice.ny, "x", s_count, " plane-wave lattice");
    const int width = std::min(s_count, 8);  // a specialised kernel width
    std::vector<complex_type> h(static_cast<size_t>(s_count) * s_count, complex_type(0.0, 0.0));
    BlockVector all(n, s_count);  // the S plane waves |k, s>, for the projections
    fill_plane_waves(all, lattice, k, 0);
    BlockVector x(n, width), y(n, width);
    for (int first = 0; first < s_count; first += width) {
        fill_plane_waves(x, lattice, k, first);
        op.apply(x, y, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
        const int cols = std::min(width, s_count - first);
        // <k,s'|H|k,s> = sum_j conj(<j|k,s'>) (H|k,s>)_j; |k,s'> lives on the rows s' + S cell.
        const global_index cells = static_cast<global_index>(lattice.nx) * lattice.ny;
        for (int c = 0; c < cols; ++c)
            for (int sp = 0; sp < s_count; ++sp) {
                complex_type acc(0.0, 0.0);
                for (global_index cell = 0; cell < cells; ++cell) {
                    const global_index row = sp + static_cast<global_index>(s_count) * cell;
                    acc += std::conj(all(row, sp)) * y(row, c);
                }
                h[static_cast<size_t>(sp) + static_cast<size_t>(s_count) * (first + c)] = acc;
            }
    }
    return h;
}

}  // namespace topokpm::numerics
