#pragma once
/// @file two_index.hpp
/// The two-index Chebyshev moments of the Kubo-Bastin conductivity (models.md §9):
///
///     Gamma_nm = Tr[ v_a T_n(Ht) v_b T_m(Ht) ] / N,      n, m = 0 .. M-1,
///
/// by the same traces as the DOS (block_trace.hpp: random_phase_plan for the stochastic
/// trace with its counter-based vectors |r>, exact_trace_plan for all N unit vectors), in
/// blocks of W start vectors. Per block, with v_a, v_b Hermitian and T_n(Ht) real
/// polynomials of Hermitian Ht:
///
///     <r| v_a T_n v_b T_m |r> = <L_n | R_m>,   R_m = v_b T_m(Ht) |r>,   L_n = T_n(Ht) v_a |r>,
///
/// one Chebyshev recurrence (ChebyshevRecurrence, the DOS's own) from |r> whose vectors are
/// multiplied by v_b and kept (M blocks of N x W), a second one from v_a |r> whose vectors
/// are collected kLeftBatch at a time and multiplied against all kept ones by one ZGEMM per
/// start vector (so each vector's moments are kept apart: the error bars of sigma).
/// Memory: two_index_bytes(); sweeps of H: 2 (M - 1) per block, plus M + 1 applications of
/// a velocity.
///
/// Where the kept vectors live and how the products are formed is the store's
/// (two_index_store.hpp), chosen by TwoIndexTrace::device, the device H runs on: host arrays
/// and cblas_zgemm, or (one CUDA device, H and the velocities CUDA operators there) device
/// buffers and cublasZgemm, only each batch's products copied to the host. The sums are
/// formed on the host in the same order either way.
///
/// Under MPI (Operator::num_ranks() > 1) H, v_a and v_b are distributed alike (the same
/// row_runs() on every rank: app::Distribution::wrap of the same split): the vectors hold
/// this rank's rows, the start vectors are the plan's on those rows (fill_runs: the same
/// vectors whatever the ranks), each ZGEMM runs over the local rows, and the rank's partial
/// sums are summed over the ranks once at the end (Operator::sum_over_ranks, as the DOS
/// moments): the moments equal a one-rank trace's to rounding (the row sums in another order).
///
/// Checkpoints (TwoIndexCheckpoints): the trace can stop and later continue bit for bit from a
/// TwoIndexState at every sweep of a block's first (right) recurrence, where the state is the
/// block's start (the right vectors are recomputed: same operations, same values), and after
/// each batch of kLeftBatch left vectors of its second one, where the state also holds that
/// recurrence's two vectors. Identical results need the same operators and thread count.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "numerics/base/operator.hpp"
#include "numerics/kpm/block_trace.hpp"
#include "numerics/kpm/kpm.hpp"

namespace topokpm::numerics {

/// Left vectors L_n multiplied against the kept R_m per ZGEMM.
inline constexpr int kLeftBatch = 32;

/// Bytes a two-index trace holds at block width W on `rows` rows: its store (the M kept R_m,
/// a batch of B = min(M, kLeftBatch) L_n and a batch's products, W B M values:
/// two_index_store_bytes), the two blocks of the recurrence, its start and a scratch
/// block, and the M x M moments (of each of `slots` slots when there are two or more), 16
/// bytes per complex double value. On a CUDA device the store and the blocks' mirrors are
/// in device memory and the blocks' host arrays, the products and the moments in host
/// memory; the run checks this total against both (an upper bound of each).
double two_index_bytes(global_index rows, int num_moments, int block_width, std::int64_t slots = 1);

/// Everything of one two-index trace.
struct TwoIndexTrace {
    const Operator* h = nullptr;            ///< H (scaled by `scaling` in the recurrence)
    const Operator* va = nullptr;           ///< v_a (applied unscaled)
    const Operator* vb = nullptr;           ///< v_b
    const StartVectorPlan* plan = nullptr;  ///< random_phase_plan or exact_trace_plan (slots averaged)
    int num_moments = 0;                    ///< M >= 2 (InputError naming {moments})
    int block_width = 1;                    ///< W >= 1, capped at the plan's columns
    KpmScaling scaling;
    /// Where H, v_a and v_b leave their blocks, and so where the kept vectors live
    /// (make_two_index_store): -1 the host, device::host_standin, or a CUDA device index.
    int device = -1;
};

/// The moments of a two-index trace.
struct TwoIndexMoments {
    std::vector<complex_type> gamma;     ///< [M x M] row-major, gamma[n M + m]: the mean over the slots
    std::vector<complex_type> per_slot;  ///< [slots, M x M]: each slot's (a random vector's), when slots >= 2
    std::int64_t num_slots = 1;
};

/// Where a two-index trace stands at one of its resumable points (a checkpoint's content).
struct TwoIndexState {
    std::int64_t blocks_done = 0;          ///< blocks whose columns are summed in `sums`
    std::vector<complex_type> sums;        ///< [slots, M x M]: per slot the sum of its finished columns' terms
                                           ///< (under MPI this rank's rows' share: summed at the end)
    std::optional<ChebyshevState> left;    ///< block blocks_done's second recurrence, when under way
    int left_done = 0;                     ///< with `left`: L_0 .. L_{left_done-1} are in `sums` (a multiple of
                                           ///< kLeftBatch, below M; left->sweeps_done is left_done or left_done - 1)
};

/// Checkpoints of a two-index trace: at every resumable point due() is asked; when it says so,
/// save() gets the state there (a copy). save() may throw to stop the trace.
struct TwoIndexCheckpoints {
    std::function<bool()> due;
    std::function<void(const TwoIndexState&)> save;
};

/// gamma = (1 / slots) sum over the plan's columns of <c| v_a T_n v_b T_m |c> / divisor
/// (= Tr[...]/N for both plans), and per slot the sum of its columns / divisor. `progress(done, total)`
/// after every sweep of H, in sweeps (2 (M - 1) per block); it may throw to stop the trace.
/// DimensionMismatch when the operators differ in rows or in their distribution over the
/// ranks, or when `resume` (a state saved by a trace of the same operators, plan, M and W, on
/// this rank; moved from) does not fit this trace. Progress counts from the resumed point.
/// Collective under MPI: every rank calls it, and due() must answer alike on every rank
/// (the caller agrees), so that all ranks save and stop at the same point.
TwoIndexMoments two_index_moments(const TwoIndexTrace& trace,
                                  const std::function<void(std::int64_t, std::int64_t)>& progress = {},
                                  const TwoIndexCheckpoints& checkpoints = {}, TwoIndexState* resume = nullptr);

}  // namespace topokpm::numerics
