#pragma once
/// @file trace_moments.hpp
/// The DOS moments of a whole trace for tests, through the trace the runs use
/// (numerics::BlockTrace over a StartVectorPlan, numerics/kpm/block_trace.hpp, stepped to
/// the end as app/run/moments_job.cpp does between its checkpoints): the slot moments of any
/// plan, the stochastic trace's per-vector moments and their mean, or the exact trace.

#include <cstdint>
#include <vector>

#include "numerics/kpm/block_trace.hpp"

namespace topokpm::testing {

/// `plan` run to the end in blocks of `block_width`: BlockTrace::slot_moments().
inline std::vector<double> run_block_trace(const Operator& op, const numerics::StartVectorPlan& plan, int num_moments,
                                           int block_width, const numerics::KpmScaling& scaling)
{
    numerics::BlockTrace trace(op, plan, num_moments, block_width, scaling);
    while (!trace.done()) trace.step();
    return trace.slot_moments();
}

struct TraceMoments {
    std::vector<double> moments;     ///< mu_n, n = 0..M-1
    std::vector<double> per_vector;  ///< [R, M] row-major; empty for the exact trace
};

/// R random-phase vectors in one block of R (models.md §4): per-vector moments and their mean.
inline TraceMoments stochastic_trace(const Operator& op, int num_moments, int num_vectors, std::uint64_t seed,
                                     const numerics::KpmScaling& scaling)
{
    const auto plan = numerics::random_phase_plan(op.global_rows(), num_vectors, seed);
    TraceMoments out;
    out.per_vector = run_block_trace(op, *plan, num_moments, num_vectors, scaling);
    out.moments.assign(num_moments, 0.0);
    for (int c = 0; c < num_vectors; ++c)
        for (int k = 0; k < num_moments; ++k) out.moments[k] += out.per_vector[static_cast<size_t>(c) * num_moments + k];
    for (double& v : out.moments) v /= num_vectors;
    return out;
}

/// (1/N) Tr T_n over all N unit vectors, in blocks of `block_width`.
inline TraceMoments exact_trace(const Operator& op, int num_moments, int block_width,
                                const numerics::KpmScaling& scaling)
{
    const auto plan = numerics::exact_trace_plan(op.global_rows());
    return {run_block_trace(op, *plan, num_moments, block_width, scaling), {}};
}

}  // namespace topokpm::testing
