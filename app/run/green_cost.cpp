#include "app/run/green_cost.hpp"

#include <algorithm>

#include "app/run/run_output.hpp"
#include "numerics/sparse_direct/green.hpp"
#include "numerics/sparse_direct/sparse_lu.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/system.hpp"

namespace topokpm::app {

double green_solve_bytes(const hamiltonians::Model& model)
{
    return sparse_direct::green_workspace_bytes(model.num_rows(), 16) + 32.0 * static_cast<double>(model.estimated_nonzeros());
}

GreenCost price_green_phase(const RunConfig& cfg, const hamiltonians::Model& model, const std::vector<global_index>& rows)
{
    require_memory(sparse_lu_analysis_bytes(model), memory_limit(cfg.runtime.memory_limit_gib, 1),
                   detail::concat("--plan with --green: the sparse LU analysis of N = ", model.num_rows(), " rows"));
    const std::unique_ptr<sparse_direct::SparseLU> lu = analyse_sparse_lu(model);
    sparse_direct::GreenLdosOptions o;
    o.eta = *cfg.kpm.green_eta;
    auto timed = [&](const std::vector<double>& energies) {
        const double t0 = wall_seconds();
        sparse_direct::green_ldos(*lu, rows, energies, o);
        return wall_seconds() - t0;
    };
    const double one = timed({0.0});
    const double four = timed({0.0, 0.01, -0.01, 0.02});
    GreenCost c;
    c.seconds_per_energy = std::max(four - one, 0.0) / 3;
    c.seconds_fixed = std::max(one - c.seconds_per_energy, 0.0);
    // The grid does not depend on the scaling (only its energies do).
    c.energies = static_cast<int>(Reconstructor(cfg, numerics::KpmScaling{1.0, 0.0}).energies().size());
    c.memory_bytes = lu->factor_memory_bytes() + green_solve_bytes(model);
    return c;
}

}  // namespace topokpm::app
