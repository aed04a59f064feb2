#pragma once
/// @file block_trace.hpp
/// Every KPM quantity of models.md §4 is a sum of diagonal Chebyshev moments <c|T_n(Ht)|c>
/// over a set of start vectors |c>, c = 0..C-1, grouped into output "slots":
///
///   quantity              start vectors |c>                      slot(c)        divisor
///   stochastic DOS        random phases |r> (R of them)          c (per vector) N
///   exact DOS             unit vectors |j>, j = 0..N-1           0              N
///   local DOS             unit vectors |j> of the selected rows  c (per row)    1
///   spectral A(k, E)      plane waves |k, s>, s = 0..S-1 per k   c / S (per k)  S
///   probed local DOS      probing vectors |v_c> (probing_plan)   read at rows   draws
///
/// The probed LDOS is the one quantity not read from the dots: its slot moments are the
/// entries <i|T_n(Ht)|v_c> of the swept vectors at the selected rows (read_moments() > 0).
/// slot moments = (sum of the raw moments of its columns) / divisor. A StartVectorPlan says
/// which vectors and slots; BlockTrace runs them through the augmented SpMMV in blocks of W
/// columns, one sweep at a time, so the driver can report progress and checkpoint between
/// sweeps (TraceState) and resume bit for bit.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "numerics/base/block_stencil.hpp"
#include "numerics/base/block_vector.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/kpm/kpm.hpp"

namespace topokpm::numerics {

/// Which start vectors a trace uses and how their moments combine (table above).
class StartVectorPlan {
public:
    virtual ~StartVectorPlan() = default;
    /// Total number of start vectors C >= 1.
    virtual global_index num_columns() const = 0;
    /// Number of output slots (rows of the result).
    virtual std::int64_t num_slots() const = 0;
    /// Slot of column c (0 <= c < C); slots are non-decreasing in c. Unused by a plan
    /// that reads rows (read_moments() > 0): its slots come from reads().
    virtual std::int64_t slot(global_index column) const = 0;
    /// Every slot's moment sum is divided by this.
    virtual double divisor() const = 0;
    /// Column j of `block` = start vector first_column + j, or zero where that is >= C.
    /// `block` holds the global rows [row_begin, row_begin + block.num_rows()) of the
    /// vectors (a rank's share; 0 and all rows when serial).
    virtual void fill(BlockVector& block, global_index first_column, global_index row_begin = 0) const = 0;
    /// The same for a block holding the global rows `runs` (Operator::row_runs(), in that
    /// order; a rank's tile of a 2-D decomposition): every entry is the one the serial
    /// block has at that global row, so moments do not depend on the decomposition. One
    /// run calls fill() directly; several fill each run's rows through fill() and copy.
    void fill_runs(BlockVector& block, global_index first_column, const RowRuns& runs) const;
    /// True when fill_on_device() makes this plan's columns in device memory (random phases).
    /// The other plans' blocks are filled on the host and uploaded by the first sweep.
    virtual bool fills_on_device() const { return false; }
    /// fill_runs's columns written straight into `block`'s copy on `device` (a CUDA device or
    /// device::host_standin; the block's only valid copy afterwards), in the block's
    /// precision: the same values up to the device's cos and sin, rounded to complex float
    /// for a single block as convert_block rounds them. Only where fills_on_device().
    virtual void fill_on_device(BlockVector& block, global_index first_column, const RowRuns& runs, int device) const;
    virtual void fill_on_device(BasicBlockVector<complex_single>& block, global_index first_column,
                                const RowRuns& runs, int device) const;

    /// One entry read off a swept column: slot += Re(conj(phase) <row|T_n(Ht)|column>).
    struct Read {
        global_index row = 0;
        std::int64_t slot = 0;
        complex_type phase{1.0, 0.0};
    };
    /// 0 (every plan but probing_plan): the slot moments are the columns' dots. M' > 0: the
    /// moments n < M' of the slots are read off the swept vectors at reads(column); the
    /// trace then needs the vectors v_0 .. v_{M'-1} (probing_trace_moments(M') moments).
    virtual int read_moments() const { return 0; }
    /// The reads of column c (0 <= c < C), global rows; empty unless read_moments() > 0.
    virtual std::vector<Read> reads(global_index /*column*/) const { return {}; }

    /// A row-reading plan may also filter its columns at rows: F(i, c) = sum over n <
    /// read_moments() of h_n <rows[i]|T_n(Ht)|v_c>, for every listed row i and every column
    /// c, added to the flat slot sums [slots, M'] at offset + 2 (i C + c) (real part) and the
    /// next double (imaginary part), C = num_columns(). Like the moments it is summed over
    /// the ranks (each reads its own rows) and divided by divisor().
    struct Filter {
        std::vector<double> weights;     ///< h_0 .. h_{read_moments() - 1}
        std::vector<global_index> rows;  ///< i -> global row
        std::size_t offset = 0;          ///< first double of F in the flat slot sums
    };
    /// nullptr (every plan but a filtered probing_plan): no filter.
    virtual const Filter* filter() const { return nullptr; }

protected:
    /// The frame of a fill() that sets its columns entry by entry: zeroes `block`, then calls
    /// column(c, first_column + c) for each column c of the block whose start vector
    /// first_column + c < num_columns() (the others stay zero).
    template <class Column>
    void fill_columns(BlockVector& block, global_index first_column, Column&& column) const
    {
        std::fill(block.data(), block.data() + block.size(), complex_type(0.0, 0.0));
        for (int c = 0; c < block.num_cols(); ++c) {
            const global_index col = first_column + c;
            if (col >= num_columns()) break;
            column(c, col);
        }
    }
    /// Entry (row, c) := value of a block holding the global rows [row_begin, row_begin +
    /// block.num_rows()); nothing when `row` is another rank's.
    static void set_entry(BlockVector& block, global_index row_begin, global_index row, int c, complex_type value)
    {
        const global_index local = row - row_begin;
        if (local >= 0 && local < block.num_rows())
            block.data()[static_cast<std::size_t>(local) * block.num_cols() + c] = value;
    }
};

/// R random-phase vectors of models.md §4 (stream S_v = splitmix64(vector_seed, 2)),
/// one slot per vector, divisor N: slot r holds mu_n^(r) = <r|T_n|r> / N.
std::unique_ptr<StartVectorPlan> random_phase_plan(global_index num_rows, int num_vectors,
                                                   std::uint64_t vector_seed);

/// All N unit vectors summed into one slot, divisor N: the exact trace (1/N) Tr T_n.
std::unique_ptr<StartVectorPlan> exact_trace_plan(global_index num_rows);

/// Unit vectors |j> of the given rows (0 <= j < N, any order, repeats allowed), one slot
/// per row, divisor 1: slot i holds the local-DOS moments <rows[i]|T_n|rows[i]>.
/// Throws InputError naming --ldos for an empty list or a row outside [0, N).
std::unique_ptr<StartVectorPlan> unit_vector_plan(global_index num_rows, std::vector<global_index> rows);

/// The --ldos rows coloured for probing (Tang & Saad): rows of the same colour lie at least
/// `distance` hops of H apart (so <i|H^n|j> = 0 for n < distance and the cross terms of
/// the probing estimate vanish for those moments), rows of one site have distinct colours.
struct ProbingColours {
    std::vector<global_index> rows;    ///< the selection, slot order
    std::vector<std::int32_t> colour;  ///< colour of each slot, 0 .. num_colours - 1 (used colours only)
    int num_colours = 0;
    int distance = 0;
    /// True when no two distinct selected rows share a colour: the estimate is then the exact
    /// LDOS (to rounding) whatever M.
    bool one_row_per_colour = false;
    /// The most distinct rows of one colour, k: a probed moment is one entry of T_n(Ht) v_c
    /// with ||v_c|| = sqrt(k) and ||T_n(Ht)|| <= 1, so |mu_n(i)| <= sqrt(k) (1 for the exact LDOS).
    global_index max_rows_per_colour = 0;
};

/// Colours the rows of `lattice` (BlockStencil's canonical order, row = o + B (z + nz (y +
/// ny x))): in each direction the sites are dealt into classes whose members are >= distance
/// x reach sites apart, reach = the largest |offset| of a coupling in that direction (one
/// class where reach is 0: no hop changes that coordinate), periodic directions measured
/// around the ring; colour = (orbital, class x, class y, class z). Throws
/// InputError naming --probing-distance unless 1 <= distance <= kMaxProbingDistance, and
/// --ldos for an empty selection or a row outside [0, N).
ProbingColours colour_rows(const BlockStencil& lattice, std::vector<global_index> rows, int distance);
inline constexpr int kMaxProbingDistance = 1000;

/// The rank the map's filter f_E = sum_n c_n g_n T_n(x_E) T_n(x) (c_0 = 1, else 2; `damping`
/// g_0 .. g_{M-1} of a positive kernel) would have on `rows` selected rows if their local DOS
/// at E were the spectrum's average (1/2 per unit x on [-1, 1]): rows x the share of [-1, 1]
/// where f_E is above 1e-3 of its peak (probing_nystrom's gap threshold; Jackson's ripples
/// included), taken at the centre x_E = 0, where the window is widest (Jackson: about
/// 13 / M, rows x 53 / 4096 at M = 1024). The Nystrom map needs at least twice the filter's rank
/// in probing vectors; a layer whose LDOS at E is above the average (a bulk band of a slab,
/// a van Hove peak) has a larger rank, and the map's gap test then says so.
double probing_filter_rank_estimate(const std::vector<double>& damping, global_index rows);

/// A distance at which colour_rows(lattice, rows, d) uses at least `colours` colours: the
/// smallest one, by bisection over 1 .. the distance that gives every row its own colour
/// (the largest extent; returned when no smaller distance reaches `colours`), exact where the
/// colours of the selection never drop as the distance grows (whole layers and lines).
int smallest_probing_distance(const BlockStencil& lattice, const std::vector<global_index>& rows, global_index colours);

/// Probing vectors of the coloured rows: column c = draw C + colour (C colours, `draws`
/// independent draws), |v_c> = sum over rows i of that colour of s_i |i>, s_i = exp(2 pi i
/// uniform(S_p, draw N + i)), S_p = splitmix64(vector_seed, 7); slot i reads Re(conj(s_i)
/// <i|T_n|v_c>) for n < num_moments, divisor `draws`. Throws InputError naming
/// --probing-draws unless 1 <= draws <= 1000.
///
/// With `filter_weights` (h_0 .. h_{M-1}, non-empty) the plan also filters (Filter): F(i, c)
/// = <rows_i|f(Ht)|v_c>, f = sum_n h_n T_n, for every selected row and column, kept in
/// probing_filter_slots() slots after the rows' slots, at offset rows x M' (M' =
/// probing_trace_moments(M)). Throws InputError unless filter_weights is empty or of size M.
std::unique_ptr<StartVectorPlan> probing_plan(ProbingColours colours, global_index num_rows, int draws,
                                              int num_moments, std::uint64_t vector_seed,
                                              std::vector<double> filter_weights = {});

/// Slots after the rows' slots that hold the filtered block of a filtered probing plan:
/// ceil(2 rows C / M') (rows x C complex numbers in rows of M' doubles).
std::int64_t probing_filter_slots(std::int64_t rows, global_index columns, int num_moments);

/// The Nystrom estimate of the diagonal of the filter f(Ht) at the selected rows from a
/// filtered probing trace: with V the probing vectors at the rows (rows x C) and F the
/// filtered block, f restricted to the rows is approximated by F (V^H F)^+ F^H, and row i's
/// value is F_i (V^H F)^+ F_i^H. For a positive semidefinite f (a positive kernel, Jackson
/// or Lorentz) this never exceeds the true diagonal and equals it when the columns of F
/// span f's range on the rows: then V^H F has a gap, few eigenvalues above 1e-3 of the
/// largest (`rank` <= C / 2: `spans`). Eigenvalues below 1e-10 of the largest are dropped
/// (the pseudo-inverse). `slot_moments`: the trace's slot moments (divided by divisor()).
struct ProbingNystrom {
    std::vector<double> diagonal;  ///< per selected row, in slot order
    int columns = 0;               ///< C
    int rank = 0;                  ///< eigenvalues of V^H F above 1e-3 of the largest
    bool spans = false;            ///< rank <= C / 2
    /// The estimated truncation error: 1 - sum of `diagonal` / (Tr(V^H F) / divisor()), the
    /// share of f's trace on the rows that the Nystrom map misses. Tr(V^H F) / divisor() is
    /// the probing estimate of that trace (its cross terms of random phase average out over
    /// the rows), and the map never exceeds the true diagonal, so this is the mean map error
    /// relative to the mean map value (a lower bound on the rms error), up to the noise of
    /// that estimate (it can come out slightly negative).
    double trace_defect = 0.0;
};
ProbingNystrom probing_nystrom(const StartVectorPlan& plan, const std::vector<double>& slot_moments);

/// Moments a BlockTrace of a row-reading plan runs so that its sweeps reach v_{M-1}:
/// kpm_num_sweeps(2 M - 2) = M - 1 sweeps (twice an exact trace's per column). Its slot
/// moments then have this many columns, of which the first M are read.
int probing_trace_moments(int num_moments);

/// Lattices whose rows are row = s + S (y + Ny x) for an in-plane position (x, y) and an
/// internal state s = 0..S-1: ti (S = 4 Nz, s = o + 4 z) and graphene (S = 2, s = sublattice,
/// x = m, y = n) in the canonical orders of models.md §2-3.
struct PlaneWaveLattice {
    int nx = 0, ny = 0;
    int states_per_cell = 0;  ///< S
};

/// An in-plane momentum k = (2 pi mx / Nx, 2 pi my / Ny) by its integers (mx, my).
struct Momentum {
    int mx = 0, my = 0;
};

/// Plane waves |k, s> = (Nx Ny)^(-1/2) sum_{x,y} exp(i (kx x + ky y)) |x, y, s> (models.md §4),
/// columns c = ik S + s for ik = 0..nk-1, one slot per momentum, divisor S: slot ik holds
/// the moments of A(k, E) normalised per state. fill() writes any rank's rows [row_begin,
/// row_begin + rows) from their canonical cells (x, y), so the start vectors need no
/// communication. Throws InputError naming --k-points for an empty list or a lattice with
/// Nx, Ny or S < 1.
std::unique_ptr<StartVectorPlan> plane_wave_plan(const PlaneWaveLattice& lattice, std::vector<Momentum> momenta);

/// What BlockTrace needs to resume: finished blocks, the moment sums of their columns
/// ([slots, M] row-major) and, when a block is under way, its recurrence.
struct TraceState {
    std::int64_t blocks_done = 0;
    std::vector<double> sums;
    std::optional<ChebyshevState> block;
};

/// Runs a StartVectorPlan in blocks of `block_width` columns (the last block is padded
/// with zero columns so every sweep has the same width), one augmented sweep per step() (two
/// when the operator fuses two, ChebyshevRecurrence::step()).
class BlockTrace {
public:
    /// @param block_width  W >= 1 (InputError naming --vectors); capped at C.
    BlockTrace(const Operator& op, const StartVectorPlan& plan, int num_moments, int block_width,
               const KpmScaling& scaling);

    /// Continues from a saved state (e.g. a checkpoint); throws DimensionMismatch when it
    /// does not fit this trace.
    void restore(TraceState state);

    /// Makes the next block's start vectors (StartVectorPlan::fill) and its recurrence when
    /// no block is under way; returns whether it did. step() calls it first, so a caller
    /// needs it only to time the start vectors apart from the sweeps (kpm-dos reports both).
    bool prepare();
    /// One step of the block under way (prepare() first if there is none).
    void step();
    bool done() const { return state_.blocks_done >= num_blocks_; }

    std::int64_t num_blocks() const { return num_blocks_; }
    std::int64_t blocks_done() const { return state_.blocks_done; }
    int block_width() const { return width_; }
    /// Moments done in the block under way (0 between blocks).
    int block_moments_done() const { return recurrence_ ? recurrence_->moments_done() : 0; }
    std::int64_t sweeps_done() const;
    std::int64_t num_sweeps() const { return num_blocks_ * kpm_num_sweeps(num_moments_); }

    /// A copy of the state (block vectors included).
    TraceState state() const;
    /// The state without copies, for writing a checkpoint: the moment sums of the finished
    /// blocks and the recurrence of the block under way (nullptr between blocks).
    const std::vector<double>& sums() const { return state_.sums; }
    const ChebyshevState* block_state() const { return recurrence_ ? &recurrence_->state() : nullptr; }

    /// Slot moments [slots, M]: sums / divisor. Requires done(). For an operator whose
    /// dots are per rank (Operator::dots_reduced() false), and for a row-reading plan on
    /// several ranks (each reads its own rows), the sums are first added over the ranks,
    /// once: a collective call, every rank must make it.
    std::vector<double> slot_moments() const;

private:
    const Operator* op_;
    const StartVectorPlan* plan_;
    int num_moments_;
    int width_;
    KpmScaling scaling_;
    std::int64_t num_blocks_;
    TraceState state_;  // state_.block unused while running: recurrence_ holds it
    std::optional<ChebyshevRecurrence> recurrence_;
    /// Row-reading plans: the reads of the block under way, in the block's own rows.
    struct LocalRead {
        global_index local_row;
        int column;
        std::int64_t slot;
        complex_type conj_phase;
    };
    std::vector<LocalRead> reads_;
    /// A filtering plan's reads of the block under way: every filtered row it holds, per column.
    struct FilterRead {
        global_index local_row;
        int column;
        std::size_t offset;  ///< of the real part in state_.sums
    };
    std::vector<FilterRead> filter_reads_;
    void collect_reads();
    void read_rows(int first_moment);
};

}  // namespace topokpm::numerics
