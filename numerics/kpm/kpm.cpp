#include "numerics/kpm/kpm.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "runtime/base/error.hpp"

namespace topokpm::numerics {

KpmScaling kpm_scaling(const SpectralBounds& bounds, double epsilon)
{
    TOPOKPM_USER_REQUIRE(std::isfinite(bounds.lower) && std::isfinite(bounds.upper) &&
                             bounds.upper > bounds.lower,
                         "{energy_range} ", bounds.lower, ":", bounds.upper,
                         ": need finite Emin < Emax (energy units of t)");
    TOPOKPM_USER_REQUIRE(epsilon >= 0.0 && epsilon < 1.0, "{epsilon} ", epsilon,
                         ": allowed range is [0, 1)");
    return {(bounds.upper - bounds.lower) / (2.0 - epsilon), (bounds.upper + bounds.lower) / 2.0};
}

int kpm_num_sweeps(int num_moments) { return 1 + (num_moments - 1) / 2; }

namespace {

/// `from` converted (moved when the types agree) into a block of value type To.
template <class To, class From>
BasicBlockVector<To> take_as(BasicBlockVector<From>&& from)
{
    if constexpr (std::is_same_v<To, From>) return std::move(from);
    else return convert_block<To>(from);
}

}  // namespace

void ChebyshevRecurrence::take_blocks(ChebyshevState& from)
{
    // A single run's saved blocks hold floats, so rounding them back is exact.
    std::visit(
        [&](auto& b) {
            using T = typename std::decay_t<decltype(b.current)>::value_type;
            b.current = take_as<T>(std::move(from.current));
            b.previous = take_as<T>(std::move(from.previous));
        },
        blocks_);
    from.current = BlockVector(0, 0);
    from.previous = BlockVector(0, 0);
}

ChebyshevRecurrence::ChebyshevRecurrence(const Operator& op, BlockVector start, int num_moments,
                                         const KpmScaling& scaling)
    : op_(&op), num_moments_(num_moments), scaling_(scaling)
{
    start_from(std::move(start));
}

ChebyshevRecurrence::ChebyshevRecurrence(const Operator& op, BasicBlockVector<complex_single> start, int num_moments,
                                         const KpmScaling& scaling)
    : op_(&op), num_moments_(num_moments), scaling_(scaling)
{
    TOPOKPM_USER_REQUIRE(op.precision() == Precision::Single, "complex-float start vectors on the double-precision ",
                         op.name(), " operator");
    start_from(std::move(start));
}

template <class S>
void ChebyshevRecurrence::start_from(BasicBlockVector<S> start)
{
    TOPOKPM_USER_REQUIRE(num_moments_ >= 2, "{moments} ", num_moments_, ": must be >= 2");
    TOPOKPM_REQUIRE(start.num_rows() == op_->num_rows() && start.num_cols() >= 1, "start vectors have ",
                    start.num_rows(), " rows and ", start.num_cols(), " columns, operator ", op_->num_rows(), " rows");
    state_.raw.assign(static_cast<size_t>(start.num_cols()) * num_moments_, 0.0);
    if (op_->precision() == Precision::Single) blocks_.emplace<Blocks<complex_single>>();
    std::visit(
        [&](auto& b) {
            using T = typename std::decay_t<decltype(b.current)>::value_type;
            // The first sweep overwrites it (beta = 0): on a device its host array stays untouched.
            b.previous = BasicBlockVector<T>::zeros_on(start.num_rows(), start.num_cols(), op_->blocks_device());
            b.current = take_as<T>(std::move(start));  // double start, single operator: rounded to complex float
        },
        blocks_);
}

ChebyshevRecurrence::ChebyshevRecurrence(const Operator& op, ChebyshevState state, int num_moments,
                                         const KpmScaling& scaling)
    : op_(&op), num_moments_(num_moments), scaling_(scaling), state_(std::move(state))
{
    TOPOKPM_USER_REQUIRE(num_moments >= 2, "{moments} ", num_moments, ": must be >= 2");
    const int r = state_.current.num_cols();
    TOPOKPM_REQUIRE(r >= 1 && state_.current.num_rows() == op.num_rows() &&
                        state_.previous.num_rows() == op.num_rows() && state_.previous.num_cols() == r &&
                        state_.raw.size() == static_cast<size_t>(r) * num_moments && state_.sweeps_done >= 0 &&
                        state_.sweeps_done <= kpm_num_sweeps(num_moments),
                    "saved recurrence state (", state_.current.num_rows(), " x ", r, " block, ",
                    state_.raw.size(), " moments, ", state_.sweeps_done, " sweeps) does not fit N = ",
                    op.num_rows(), ", M = ", num_moments);
    if (op.precision() == Precision::Single) blocks_.emplace<Blocks<complex_single>>();
    take_blocks(state_);
}

const ChebyshevState& ChebyshevRecurrence::state() const
{
    if (!lent_) {
        std::visit(
            [&](auto& b) {
                state_.current = take_as<complex_double>(std::move(b.current));
                state_.previous = take_as<complex_double>(std::move(b.previous));
            },
            blocks_);
        lent_ = true;
    }
    return state_;
}

const BlockVector& ChebyshevRecurrence::vector(int n) const
{
    const ChebyshevState& st = state();
    TOPOKPM_REQUIRE(n == st.sweeps_done || (n == st.sweeps_done - 1 && n >= 0), "vector v_", n, " asked after ",
                    st.sweeps_done, " sweeps");
    return n == st.sweeps_done ? st.current : st.previous;
}

int ChebyshevRecurrence::moments_done() const { return std::min(2 * state_.sweeps_done, num_moments_); }

void ChebyshevRecurrence::step()
{
    TOPOKPM_REQUIRE(!done(), "step() after the last sweep");
    if (lent_) {  // the blocks state() handed out come back (double) or are dropped (single)
        take_blocks(state_);
        lent_ = false;
    }
    const int m = num_moments_;
    auto at = [&](int col, int n) -> double& { return state_.raw[static_cast<size_t>(col) * m + n]; };
    // Sweep k yields mu_2k = 2 <v_k|v_k> - mu_0 and mu_2k+1 = 2 Re<v_k+1|v_k> - mu_1.
    auto record = [&](int k, const DotSums& d, int r) {
        for (int c = 0; c < r; ++c) {
            at(c, 2 * k) = 2.0 * d.xx[c] - at(c, 0);
            if (2 * k + 1 < m) at(c, 2 * k + 1) = 2.0 * d.yx[c].real() - at(c, 1);
        }
    };
    int sweeps = 1;
    std::visit(
        [&](auto& b) {
            const int r = b.current.num_cols();
            const int k = state_.sweeps_done;
            if (k == 0) {
                // v_1 = Ht v_0; this first sweep yields mu_0 = <v0|v0> and mu_1 = Re<v1|v0>.
                op_->apply(b.current, b.previous, AugmentedOps{1.0 / scaling_.a, scaling_.b, 0.0, true}, &dots_);
                for (int c = 0; c < r; ++c) {
                    at(c, 0) = dots_.xx[c];
                    at(c, 1) = dots_.yx[c].real();
                }
                b.current.swap(b.previous);  // current = v_1, previous = v_0
                return;
            }
            // Sweep k: previous <- 2 Ht current - previous turns (v_k, v_{k-1}) into v_{k+1}, with
            // <v_k|v_k> and <v_{k+1}|v_k> on the fly: two moments per pass over H (seed 004, Fig. 5).
            const AugmentedOps ops{2.0 / scaling_.a, scaling_.b, -1.0, true};
            if (op_->fused_steps(r) >= 2 && k + 2 <= kpm_num_sweeps(m)) {
                // Sweeps k and k + 1 in one pass over memory (temporal blocking): previous becomes
                // v_{k+1}, then current becomes v_{k+2}; no swap is needed afterwards.
                op_->apply_two_steps(b.current, b.previous, ops, &dots_, &dots_second_);
                record(k, dots_, r);
                record(k + 1, dots_second_, r);
                sweeps = 2;
                return;
            }
            op_->apply(b.current, b.previous, ops, &dots_);
            record(k, dots_, r);
            b.current.swap(b.previous);  // current = v_{k+1}, previous = v_k
        },
        blocks_);
    state_.sweeps_done += sweeps;
}

void check_moments_bounded(const std::vector<double>& moments, double tolerance)
{
    for (size_t k = 0; k < moments.size(); ++k)
        if (!(std::abs(moments[k]) <= 1.0 + tolerance))
            throw NumericalError(topokpm::detail::concat(
                "Chebyshev moment mu_", k, " = ", moments[k],
                " exceeds 1 in magnitude: the spectrum extends beyond the scaling interval "
                "(bounds too tight). Use {bounds} gershgorin, widen {energy_range}, or raise "
                "{epsilon}"));
}

double moments_bound_tolerance(Precision precision)
{
    return precision == Precision::Single ? 3.0 * dot_rounding_bound(Precision::Single) : 1e-8;
}

}  // namespace topokpm::numerics
