#pragma once
/// @file operator_choice.hpp
/// The one place where kpm-dos options become the operator to build: --matrix, --device,
/// --precision, --sell-C (default_sell_chunk_height) and --sell-sigma mapped onto
/// numerics::OperatorSpec. The serial run, the ranks of a distributed run, the `auto` weights
/// probe, the memory check and --plan all take the spec from here, so they build and price
/// the same operator.

#include <optional>
#include <string>

#include "app/cli/run_config.hpp"
#include "hamiltonians/model.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/hetero/plan.hpp"

namespace topokpm::app {

numerics::OperatorSpec operator_spec(const RunConfig& cfg);

/// The cost model (numerics::operator_cost_model) of the operator `spec` builds from `model`,
/// with its potential entries per row and whether it stores real values
/// (Model::real_valued()): the one pricing of the memory checks of kpm-dos and kpm-eigs and of
/// --plan.
numerics::OperatorCostModel operator_cost(const numerics::OperatorSpec& spec, const hamiltonians::Model& model);

/// What the plan learns from the kernel itself (hetero::PlanInput): its sweeps per pass over
/// memory (Operator::fused_steps at the width: 2 where the CPU stencil fuses two steps:
/// graphene at R = 1 and at the strip widths, ti at R = 1, 2, 4, 8 (single: 1 and 8);
/// numerics/cpu/stencil_operator.hpp; else 1) and its measured rate, rows per second: the
/// operator swept in pairs (apply_two_steps, as the run does) with the calling thread's
/// OpenMP team on a copy of the model cut to whole x-planes whose sweep moves 768 MiB
/// (past the caches; the whole lattice when smaller), without dots or field (whose extents
/// constrain the cut) but with a potential read per row where the model has one. The ti
/// two-step pass moves 2/3 of the bytes of two sweeps but runs only about 1.1x faster,
/// which the traffic model alone cannot see. Rate 0 (not measured) for an operator
/// that is not a CPU one or a model without a lattice. (The rate is this machine's: the plan
/// uses it only when it plans for this machine, its bandwidth measured here.)
struct KernelProbe {
    int sweeps_per_pass = 1;
    double rows_per_second = 0.0;
};
KernelProbe probe_kernel(const numerics::OperatorSpec& spec, const hamiltonians::Model& model, int width);

/// The kind `--matrix auto` (the default) builds and why.
struct MatrixChoice {
    MatrixKind kind = MatrixKind::Sell;
    std::string why;  ///< for the summary, e.g. "fastest measured for ti at R = 1, 8 and 32"
};

/// The fastest operator measured with spmmv-bench (interleaved, same run; docs/performance.md,
/// "Default operator") for `model` at block width `width` >= 1, by its properties:
///   in a magnetic field:  sell (the stencil sweeps the Peierls phases on its slower checked path);
///   read from a file:     sell (any structure; the stencil kernels were measured on ti and
///                         graphene only);
///   complex entries (ti): free (the stencil reads 2 bytes per row of potential instead of 13
///                         entries of 20 bytes): faster at R = 1, 8 and 32, double and single;
///   real entries (graphene): free at R = 1 (sweeps as fast as real-valued sell's, and no
///                         matrix to build: the whole 2048x2048 run is faster) and where the
///                         stencil makes two sweeps per pass (numerics::cpu_stencil_two_steps_at:
///                         R = 2, 4, 8, 16 and 32 in both precisions, measured faster than sell
///                         there), else sell (4 real stored entries of 12 bytes per row; faster
///                         than the one-sweep stencil at R > 1);
///   cuda:                 sell (SELL-32: the GPU kernels have not been compared).
/// `sell_asked`: --sell-C or --sell-sigma given explicitly, which only sell reads: sell.
MatrixChoice fastest_matrix(const hamiltonians::Model& model, int width, Precision precision, DeviceKind device,
                            bool sell_asked);

/// The SELL chunk height C of a run without --sell-C (`auto`), for block width `width` >= 1:
/// on the CPU 16 at R = 1 in both precisions (the chunk's loop, first row and epilogue checks
/// spread over twice the rows: measured faster than C = 8 for graphene, equal for ti; docs/performance.md, "SELL R = 1: the group sums in registers, C = 16" and
/// "SELL R = 1 in single precision"), 8 at R >= 2 (the fastest measured); on cuda 32 (a chunk
/// is a warp; numerics::sell_params takes 32 whatever C says).
int default_sell_chunk_height(int width, DeviceKind device);

/// The halo model of a 2-D decomposition of `model` (runtime/hetero/plan.hpp): its lattice,
/// x and y boundaries and in-plane couplings (each term of the model's BlockStencil with
/// dx or dy != 0, with the column orbitals it reaches; a term with dz != 0 as well, which
/// the tiles' whole z columns count in every layer: exact for a periodic z, an upper bound
/// on an open one). The terms come from the stencil of a 3x3 copy of the model without dots,
/// disorder or field (they do not depend on the size or the potential), so nothing
/// proportional to the lattice is allocated (a _hr.dat model reads its file once more).
/// std::nullopt for a model without one: no lattice (matrix-market), or no block stencil
/// even without the field (a _hr.dat of more than 8 orbitals per cell); its rows split in 1-D.
std::optional<hetero::LatticeHalo> lattice_halo(const hamiltonians::Model& model);

}  // namespace topokpm::app
