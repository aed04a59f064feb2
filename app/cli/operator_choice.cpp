#include "app/cli/operator_choice.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "numerics/spmmv/stencil_kernels.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::app {

numerics::OperatorSpec operator_spec(const RunConfig& cfg)
{
    numerics::OperatorSpec spec;
    switch (cfg.storage.matrix) {
    case MatrixKind::Sell: spec.kind = numerics::OperatorKind::Sell; break;
    case MatrixKind::Crs: spec.kind = numerics::OperatorKind::Crs; break;
    case MatrixKind::Free: spec.kind = numerics::OperatorKind::Free; break;
    case MatrixKind::Naive: spec.kind = numerics::OperatorKind::Naive; break;
    }
    spec.device = cfg.storage.device == DeviceKind::Cuda ? numerics::Backend::Cuda : numerics::Backend::Cpu;
    spec.precision = cfg.storage.precision;
    spec.sell = {cfg.storage.sell_chunk_height, cfg.storage.sell_sigma};
    spec.stencil_tuning.tblock_lines = cfg.storage.tblock_lines;
    return spec;
}

numerics::OperatorCostModel operator_cost(const numerics::OperatorSpec& spec, const hamiltonians::Model& model)
{
    return numerics::operator_cost_model(spec, model.potential_entries_per_row(), model.real_valued());
}

namespace {
// One sweep of the probe's sample moves this much (matrix + x read + y read and written):
// graphene 2048x2048 R = 8 planned 0.57x its measured moments time with 64 MiB per vector
// block (192 MiB a sweep), 0.73-0.80x from 384 MiB a sweep up (2026-11-29). Costs --plan
// 0.4-0.7 s more on large lattices.
constexpr double kProbeSweepBytes = 768.0 * 1024 * 1024;
}  // namespace

KernelProbe probe_kernel(const numerics::OperatorSpec& spec, const hamiltonians::Model& model, int width)
{
    KernelProbe probe;
    if (spec.device != numerics::Backend::Cpu || model.kind().max_extents == 0) return probe;
    // A sample of whole x-planes whose sweep moves kProbeSweepBytes (past the caches: this
    // guest reports a 504 MiB L3), or the whole lattice: the kernel's rate as the run meets
    // it. Dots and field off (their extents' constraints), a non-uniform potential kept as
    // disorder (the kernel reads it per row).
    hamiltonians::ModelParams small = model.params();
    const double plane_rows = static_cast<double>(model.num_rows()) / std::max(small.nx, 1);
    const numerics::OperatorCostModel cost = operator_cost(spec, model);
    const double value_bytes = cost.value_bytes;
    const double nonzeros_per_row = static_cast<double>(model.estimated_nonzeros()) / std::max<double>(model.num_rows(), 1);
    const double sweep_bytes_per_row = cost.sweep_bytes(1.0, nonzeros_per_row, width);
    const double sample_rows = kProbeSweepBytes / sweep_bytes_per_row;
    // At least 3 planes (a 3-D wavefront needs them) while they hold at most 256 MiB per block.
    const int floor_planes = plane_rows * 3 * value_bytes * width <= 256.0 * 1024 * 1024 ? 3 : 1;
    small.nx = std::clamp(static_cast<int>(std::ceil(sample_rows / plane_rows)), std::min(floor_planes, small.nx),
                          std::max(small.nx, 1));
    const bool varying = small.disorder != 0.0 || (small.dot_potential != 0.0 && small.dot_period > 0);
    small.dot_potential = small.dot_radius = 0.0;
    small.dot_period = 0;
    small.dot_depth = 1;
    small.disorder = varying ? 1.0 : 0.0;
    small.flux = {};
    std::unique_ptr<hamiltonians::Model> copy;
    try {
        copy = hamiltonians::make_model(small);
    } catch (const InputError&) {  // a model the cut does not fit (its own extents' rules): no rate, the traffic model
        return probe;
    }
    numerics::OperatorSpec whole = spec;
    whole.rows = {};
    const numerics::BuiltOperator built = numerics::make_operator(whole, hamiltonians::operator_source(*copy));
    const Operator& op = *built.op;
    if (spec.kind == numerics::OperatorKind::Free && model.offers_block_stencil())
        probe.sweeps_per_pass = op.fused_steps(width) >= 2 ? 2 : 1;
    // Pairs of sweeps as the run makes them (apply_two_steps fuses them where the kernel does).
    probe.rows_per_second = numerics::sweep_rate(op, width, true);
    return probe;
}

MatrixChoice fastest_matrix(const hamiltonians::Model& mdl, int width, Precision precision, DeviceKind device,
                            bool sell_asked)
{
    const std::string at = detail::concat(" this run R = ", width);
    const std::string& model = mdl.params().name;
    if (sell_asked) return {MatrixKind::Sell, "--sell-C/--sell-sigma given"};
    if (!mdl.params().flux.zero())
        return {MatrixKind::Sell, "sell: in a field the stencil sweeps the Peierls phases of --magnetic-flux on its "
                                  "slower checked path only (--matrix free keeps no matrix in memory);" + at};
    if (device == DeviceKind::Cuda) return {MatrixKind::Sell, "SELL-32 on the GPU"};
    // A model from a file takes the built-ins' rules when it offers a block stencil (a
    // _hr.dat of at most 8 orbitals: the same kernels; graphene_hr.dat 1024x1024, R = 1,
    // M = 512 ran 2.6 s free against 7.4 s sell, 2026-11-28), else sell takes any matrix.
    if (!mdl.offers_block_stencil())
        return {MatrixKind::Sell, "sell, which takes any matrix (this model offers no stencil);" + at};
    if (!mdl.real_valued()) return {MatrixKind::Free, "free, the fastest measured for " + model + " at R = 1, 8 and 32;" + at};
    if (width == 1)  // real couplings: sweeps as fast as real-valued sell, no matrix to build
        return {MatrixKind::Free, "free, the fastest measured run for " + model + " at R = 1;" + at};
    if (numerics::cpu_stencil_two_steps_at(width, precision))
        return {MatrixKind::Free, "free, two sweeps per pass over memory in a serial run, the fastest measured for " +
                                      model + " at R = 2, 4, 8, 16 and 32 in both precisions;" + at};
    return {MatrixKind::Sell, "sell with real values, faster than the one-sweep stencil for " + model + " at R > 1;" + at};
}

int default_sell_chunk_height(int width, DeviceKind device)
{
    if (device == DeviceKind::Cuda) return 32;
    return width == 1 ? 16 : 8;
}

std::optional<hetero::LatticeHalo> lattice_halo(const hamiltonians::Model& model)
{
    if (model.kind().max_extents == 0) return std::nullopt;  // no lattice
    // Without a field a model that offers no stencil offers none on the 3x3 copy either (and
    // a _hr.dat of many orbitals, a large file, is not read again to learn it).
    if (model.params().flux.zero() && !model.offers_block_stencil()) return std::nullopt;
    const hamiltonians::ModelParams& p = model.params();
    hetero::LatticeHalo h;
    h.nx = static_cast<std::uint64_t>(p.nx);
    h.ny = static_cast<std::uint64_t>(p.ny);
    h.nz = static_cast<std::uint64_t>(p.nz);
    h.block = static_cast<std::uint64_t>(model.orbitals_per_site());
    h.periodic_x = p.boundary.size() > 0 && p.boundary[0] == 'p';
    h.periodic_y = p.boundary.size() > 1 && p.boundary[1] == 'p';
    hamiltonians::ModelParams probe = p;
    probe.nx = probe.ny = 3;
    probe.dot_potential = probe.dot_radius = 0.0;
    probe.dot_period = 0;
    probe.dot_depth = 1;
    probe.disorder = 0.0;
    probe.flux = {};  // the phases change no coupling's reach
    const std::unique_ptr<hamiltonians::Model> copy = hamiltonians::make_model(probe);
    if (!copy->offers_block_stencil()) return std::nullopt;
    const BlockStencil s = copy->block_stencil();
    for (const StencilTerm& t : s.terms) {
        if (t.dx == 0 && t.dy == 0) continue;  // stays in the rank's z column
        hetero::HaloCoupling c{t.dx, t.dy, 0};
        for (int o = 0; o < s.orbitals; ++o)
            for (int b = 0; b < s.orbitals; ++b)
                if (t.block[static_cast<size_t>(o * s.orbitals + b)] != complex_type(0.0, 0.0)) c.columns |= 1u << b;
        if (c.columns != 0) h.couplings.push_back(c);
    }
    return h;
}

}  // namespace topokpm::app
