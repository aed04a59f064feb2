#pragma once
/// @file kpm.hpp
/// The Kernel Polynomial Method recurrence, written once against the Operator seam
/// (models.md §4, seed 004 Fig. 5). Every backend (SELL-C-σ, matrix-free, naive, CUDA and
/// MPI-distributed operators) runs through the same loop. The one trace driver over it,
/// for every quantity, is BlockTrace (block_trace.hpp).

#include <cstdint>
#include <utility>
#include <variant>
#include <vector>

#include "numerics/base/block_vector.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/base/row_source.hpp"

namespace topokpm::numerics {

/// Ht = (H - b) / a maps the spectrum into [-1 + eps/2, 1 - eps/2] (models.md §4).
struct KpmScaling {
    double a = 1.0;  ///< half-width of the scaled interval, energy units
    double b = 0.0;  ///< centre, energy units
};

/// a = (Emax - Emin) / (2 - epsilon), b = (Emax + Emin) / 2. Throws InputError if
/// Emax <= Emin or epsilon is not in [0, 1).
KpmScaling kpm_scaling(const SpectralBounds& bounds, double epsilon);

/// Number of augmented sweeps a recurrence makes for M moments: 1 + floor((M-1)/2).
int kpm_num_sweeps(int num_moments);

/// Everything a Chebyshev recurrence needs to continue after `sweeps_done` sweeps (for
/// checkpoints): after s >= 1 sweeps, current = v_s and previous = v_{s-1}; before the first
/// sweep current = start block and previous is unused. raw is [R, M] row-major with the
/// first min(2 s, M) moments of every column filled (the rest zero).
struct ChebyshevState {
    // Sized constructors: BlockVector's defaulted default constructor needs the complete
    // type of its private mutex holder, which block_vector.hpp keeps out of line.
    BlockVector current{0, 0};
    BlockVector previous{0, 0};
    std::vector<double> raw;
    int sweeps_done = 0;
};

/// The moments recurrence of models.md §4 one or two augmented sweeps at a time, so that a driver
/// can report progress, write checkpoints and stop between sweeps. Continuing from a saved
/// ChebyshevState performs exactly the same floating-point operations as an uninterrupted
/// run, so the moments agree bit for bit (on the same operator and thread count).
class ChebyshevRecurrence {
public:
    /// Starts from `start` (N x R, moved in; R >= 1): double, or already in complex float for
    /// a single-precision operator (InputError for a float start on a double one). No sweep is
    /// made yet. M >= 2 (InputError naming --moments). The second block is made where the
    /// operator's blocks live (Operator::blocks_device, BasicBlockVector::zeros_on).
    ChebyshevRecurrence(const Operator& op, BlockVector start, int num_moments, const KpmScaling& scaling);
    ChebyshevRecurrence(const Operator& op, BasicBlockVector<complex_single> start, int num_moments,
                        const KpmScaling& scaling);
    /// Continues from a saved state; throws DimensionMismatch when its shapes do not fit
    /// the operator and M (e.g. a checkpoint of another run).
    ChebyshevRecurrence(const Operator& op, ChebyshevState state, int num_moments, const KpmScaling& scaling);

    /// One augmented sweep: two more moments per column (the first sweep gives mu_0, mu_1);
    /// two sweeps in one pass over memory (Operator::apply_two_steps) when the operator's
    /// fused_steps(R) is 2 and two sweeps remain after the first (sweeps_done() tells). A
    /// resumed recurrence pairs the same sweeps as an uninterrupted one when it was saved
    /// between steps of a run on the same operator.
    void step();
    bool done() const { return state_.sweeps_done >= kpm_num_sweeps(num_moments_); }
    int sweeps_done() const { return state_.sweeps_done; }
    /// Moments known so far per column: min(2 sweeps, M).
    int moments_done() const;
    /// The state to save (valid until the next step()). The recurrence keeps its vectors in
    /// the operator's precision: a double recurrence lends its blocks to the returned state,
    /// a single one widens them (exactly) into it; step() takes them back or drops the copies.
    const ChebyshevState& state() const;
    /// The swept vector v_n = T_n(Ht) v_0 (as state() holds it, in double), for n = sweeps_done()
    /// or sweeps_done() - 1: after a step() that made sweeps s0 -> s1 every v_n, s0 < n <= s1,
    /// is one of the two (s1 - s0 <= 2), so a reader that takes them after each step sees every
    /// vector. Valid until the next step(). DimensionMismatch for any other n.
    const BlockVector& vector(int n) const;
    /// Raw moments [R, M], raw[r M + n] = <r|T_n(Ht)|r>; complete once done().
    const std::vector<double>& raw() const { return state_.raw; }
    std::vector<double> take_raw() { return std::move(state_.raw); }

private:
    /// The two vectors of the recurrence in the operator's precision T.
    template <class T>
    struct Blocks {
        BasicBlockVector<T> current, previous;
    };
    void take_blocks(ChebyshevState& from);
    template <class S>
    void start_from(BasicBlockVector<S> start);

    const Operator* op_;
    int num_moments_;
    KpmScaling scaling_;
    // raw moments and sweeps; the blocks only between state() and the next step()
    mutable ChebyshevState state_;
    mutable std::variant<Blocks<complex_double>, Blocks<complex_single>> blocks_;
    mutable bool lent_ = false;  ///< state_ holds the blocks (state() was called)
    DotSums dots_;
    DotSums dots_second_;  ///< the second sweep of apply_two_steps
};

/// Throws NumericalError if some |mu_n| exceeds 1 + tolerance: the spectrum then lies
/// outside the scaled interval (bounds too tight) and the moments grow without limit.
void check_moments_bounded(const std::vector<double>& moments, double tolerance = 1e-8);

/// The tolerance check_moments_bounded allows moments swept in `precision`: 1e-8 in double.
/// In single each dot carries up to dot_rounding_bound(Single) = (kSingleDotRun + 1) eps_f of
/// its magnitude from the float runs of the single kernels (numerics/base/operator.hpp), and
/// mu_2k = 2 <v_k|v_k> - mu_0 with <v_k|v_k> <= mu_0 takes three of them: 3 (kSingleDotRun + 1)
/// eps_f (~3.2e-6).
double moments_bound_tolerance(Precision precision);

}  // namespace topokpm::numerics
