#include "numerics/sparse_direct/green.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/base/error.hpp"

namespace topokpm::sparse_direct {

double green_workspace_bytes(global_index n, int block)
{
    return 2.0 * 16.0 * static_cast<double>(n) * static_cast<double>(std::max(block, 1));
}

GreenLdos green_ldos(SparseLU& lu, const std::vector<global_index>& rows, const std::vector<double>& energies,
                     const GreenLdosOptions& options)
{
    TOPOKPM_USER_REQUIRE(options.eta > 0.0 && std::isfinite(options.eta), "{green_eta} ", options.eta,
                         ": must be > 0 and finite (units of t)");
    TOPOKPM_USER_REQUIRE(options.block >= 1, "{green_block} ", options.block, ": must be >= 1");
    const global_index n = lu.size();
    for (const global_index r : rows)
        TOPOKPM_USER_REQUIRE(r >= 0 && r < n, "{ldos} row ", r, ": must be in 0..", n - 1);
    for (const double e : energies) TOPOKPM_USER_REQUIRE(std::isfinite(e), "energy ", e, ": must be finite");

    const std::size_t nr = rows.size(), ne = energies.size();
    GreenLdos out;
    out.rho.assign(nr * ne, 0.0);
    if (nr == 0) return out;
    const int block = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(options.block), nr));
    std::vector<complex_double> b(static_cast<std::size_t>(n) * block), x(b.size());
    for (std::size_t k = 0; k < ne; ++k) {
        const FactorReport f = lu.factorize({energies[k], options.eta}, options.factor);
        out.tiny_pivots += f.tiny_pivots;
        out.factor_seconds += f.seconds;
        for (std::size_t r0 = 0; r0 < nr; r0 += static_cast<std::size_t>(block)) {
            const int w = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(block), nr - r0));
            std::fill(b.begin(), b.end(), complex_double(0.0, 0.0));
            for (int c = 0; c < w; ++c) b[static_cast<std::size_t>(rows[r0 + c] + c * n)] = 1.0;
            const SolveReport s = lu.solve(b.data(), x.data(), w, options.solve);
            out.solve_seconds += s.seconds;
            out.worst_backward_error = std::max(out.worst_backward_error, s.backward_error);
            out.max_refinement_steps = std::max(out.max_refinement_steps, s.refinement_steps);
            // G = -(H - z)^-1: -Im G_jj / pi = Im x_jj / pi.
            for (int c = 0; c < w; ++c)
                out.rho[(r0 + c) * ne + k] = x[static_cast<std::size_t>(rows[r0 + c] + c * n)].imag() / M_PI;
        }
        if (options.progress) options.progress(static_cast<int>(k + 1), static_cast<int>(ne), f);
    }
    return out;
}

}  // namespace topokpm::sparse_direct
