#include "numerics/kpm/kpm.hpp"

#include <algorithm>
#include <cmath>

#include "numerics/kpm/block_trace.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {

KpmScaling kpm_scaling(const SpectralBounds& bounds, double epsilon)
{
    TOPOKPM_USER_REQUIRE(std::isfinite(bounds.lower) && std::isfinite(bounds.upper) &&
                             bounds.upper > bounds.lower,
                         "--energy-range ", bounds.lower, ":", bounds.upper,
                         ": need finite Emin < Emax (energy units of t)");
    TOPOKPM_USER_REQUIRE(epsilon >= 0.0 && epsilon < 1.0, "--epsilon ", epsilon,
                         ": allowed range is [0, 1)");
    return {(bounds.upper - bounds.lower) / (2.0 - epsilon), (bounds.upper + bounds.lower) / 2.0};
}

int kpm_num_sweeps(int num_moments) { return 1 + (num_moments - 1) / 2; }

ChebyshevRecurrence::ChebyshevRecurrence(const Operator& op, BlockVector start, int num_moments,
                                         const KpmScaling& scaling)
    : op_(&op), num_moments_(num_moments), scaling_(scaling)
{
    TOPOKPM_USER_REQUIRE(num_moments >= 2, "--moments ", num_moments, ": must be >= 2");
    TOPOKPM_REQUIRE(start.num_rows() == op.num_rows() && start.num_cols() >= 1, "start vectors have ",
                    start.num_rows(), " rows and ", start.num_cols(), " columns, operator ", op.num_rows(), " rows");
    state_.raw.assign(static_cast<size_t>(start.num_cols()) * num_moments, 0.0);
    single_ = op.precision() == Precision::Single;
    if (single_) {
        current_single_ = to_single(start);  // the start vectors rounded to complex float
        previous_single_ = BlockVectorSingle(start.num_rows(), start.num_cols());
        return;
    }
    state_.previous = BlockVector(start.num_rows(), start.num_cols());
    state_.current = std::move(start);
}

ChebyshevRecurrence::ChebyshevRecurrence(const Operator& op, ChebyshevState state, int num_moments,
                                         const KpmScaling& scaling)
    : op_(&op), num_moments_(num_moments), scaling_(scaling), state_(std::move(state))
{
    TOPOKPM_USER_REQUIRE(num_moments >= 2, "--moments ", num_moments, ": must be >= 2");
    const int r = state_.current.num_cols();
    TOPOKPM_REQUIRE(r >= 1 && state_.current.num_rows() == op.num_rows() &&
                        state_.previous.num_rows() == op.num_rows() && state_.previous.num_cols() == r &&
                        state_.raw.size() == static_cast<size_t>(r) * num_moments && state_.sweeps_done >= 0 &&
                        state_.sweeps_done <= kpm_num_sweeps(num_moments),
                    "saved recurrence state (", state_.current.num_rows(), " x ", r, " block, ",
                    state_.raw.size(), " moments, ", state_.sweeps_done, " sweeps) does not fit N = ",
                    op.num_rows(), ", M = ", num_moments);
    single_ = op.precision() == Precision::Single;
    if (single_) {  // a single run's saved blocks hold floats: the rounding is exact
        current_single_ = to_single(state_.current);
        previous_single_ = to_single(state_.previous);
        state_.current = BlockVector(0, 0);
        state_.previous = BlockVector(0, 0);
    }
}

const ChebyshevState& ChebyshevRecurrence::state() const
{
    if (single_) {
        state_.current = to_double(current_single_);
        state_.previous = to_double(previous_single_);
    }
    return state_;
}

int ChebyshevRecurrence::moments_done() const { return std::min(2 * state_.sweeps_done, num_moments_); }

void ChebyshevRecurrence::step()
{
    TOPOKPM_REQUIRE(!done(), "step() after the last sweep");
    const int m = num_moments_;
    const int r = single_ ? current_single_.num_cols() : state_.current.num_cols();
    auto at = [&](int col, int n) -> double& { return state_.raw[static_cast<size_t>(col) * m + n]; };
    if (single_ && state_.current.num_rows() > 0) {  // drop the widened copies of a state() call
        state_.current = BlockVector(0, 0);
        state_.previous = BlockVector(0, 0);
    }
    auto sweep = [&](const AugmentedOps& ops) {
        if (single_) op_->apply_single(current_single_, previous_single_, ops, &dots_);
        else op_->apply(state_.current, state_.previous, ops, &dots_);
    };
    if (state_.sweeps_done == 0) {
        // v_1 = Ht v_0; this first sweep yields mu_0 = <v0|v0> and mu_1 = Re<v1|v0>.
        sweep(AugmentedOps{1.0 / scaling_.a, scaling_.b, 0.0, true});
        for (int c = 0; c < r; ++c) {
            at(c, 0) = dots_.xx[c];
            at(c, 1) = dots_.yx[c].real();
        }
    } else {
        // Sweep k: previous <- 2 Ht current - previous turns (v_k, v_{k-1}) into v_{k+1}, with
        // <v_k|v_k> and <v_{k+1}|v_k> on the fly: two moments per pass over H (seed 004, Fig. 5).
        const int k = state_.sweeps_done;
        sweep(AugmentedOps{2.0 / scaling_.a, scaling_.b, -1.0, true});
        for (int c = 0; c < r; ++c) {
            at(c, 2 * k) = 2.0 * dots_.xx[c] - at(c, 0);
            if (2 * k + 1 < m) at(c, 2 * k + 1) = 2.0 * dots_.yx[c].real() - at(c, 1);
        }
    }
    if (single_) current_single_.swap(previous_single_);  // current = v_{k+1}, previous = v_k
    else state_.current.swap(state_.previous);
    ++state_.sweeps_done;
}

std::vector<double> chebyshev_moments(const Operator& op, BlockVector& start, int num_moments,
                                      const KpmScaling& scaling, const KpmProgress& progress)
{
    TOPOKPM_REQUIRE(start.num_rows() == op.num_rows(), "start vectors have ", start.num_rows(),
                    " rows, operator ", op.num_rows());
    ChebyshevRecurrence rec(op, std::move(start), num_moments, scaling);
    while (!rec.done()) {
        rec.step();
        if (progress) progress(rec.moments_done(), num_moments);
    }
    return rec.take_raw();
}

KpmMoments kpm_stochastic_trace(const Operator& op, int num_moments, int num_vectors,
                                std::uint64_t vector_seed, const KpmScaling& scaling,
                                const KpmProgress& progress)
{
    const auto plan = random_phase_plan(op.global_rows(), num_vectors, vector_seed);
    KpmMoments result;
    result.per_vector = run_block_trace(op, *plan, num_moments, num_vectors, scaling, progress);
    result.moments.assign(num_moments, 0.0);
    for (int c = 0; c < num_vectors; ++c)
        for (int k = 0; k < num_moments; ++k)
            result.moments[k] += result.per_vector[static_cast<size_t>(c) * num_moments + k];
    for (double& v : result.moments) v /= num_vectors;
    result.num_vectors = num_vectors;
    result.num_sweeps = kpm_num_sweeps(num_moments);
    result.block_width = num_vectors;
    return result;
}

KpmMoments kpm_exact_trace(const Operator& op, int num_moments, int block_width,
                           const KpmScaling& scaling, const KpmProgress& progress)
{
    TOPOKPM_USER_REQUIRE(block_width >= 1, "--vectors ", block_width,
                         ": the exact trace uses it as block width and needs >= 1");
    const global_index n = op.global_rows();
    const auto plan = exact_trace_plan(n);
    BlockTrace probe(op, *plan, num_moments, block_width, scaling);
    KpmMoments result;
    result.moments = run_block_trace(op, *plan, num_moments, block_width, scaling, progress);
    result.num_vectors = n;
    result.num_sweeps = probe.num_sweeps();
    result.block_width = probe.block_width();
    return result;
}

void check_moments_bounded(const std::vector<double>& moments, double tolerance)
{
    for (size_t k = 0; k < moments.size(); ++k)
        if (!(std::abs(moments[k]) <= 1.0 + tolerance))
            throw NumericalError(detail::concat(
                "Chebyshev moment mu_", k, " = ", moments[k],
                " exceeds 1 in magnitude: the spectrum extends beyond the scaling interval "
                "(bounds too tight). Use --bounds gershgorin, widen --energy-range, or raise "
                "--epsilon"));
}

}  // namespace topokpm::numerics
