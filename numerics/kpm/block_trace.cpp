#include "numerics/kpm/block_trace.hpp"

#include <algorithm>
#include <cmath>

#include "numerics/kpm/start_vectors.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

class RandomPhasePlan final : public StartVectorPlan {
public:
    RandomPhasePlan(global_index n, int r, std::uint64_t seed) : n_(n), r_(r), seed_(seed) {}
    global_index num_columns() const override { return r_; }
    std::int64_t num_slots() const override { return r_; }
    std::int64_t slot(global_index column) const override { return column; }
    double divisor() const override { return static_cast<double>(n_); }
    void fill(BlockVector& block, global_index first_column, global_index row_begin) const override
    {
        random_phase_values(block.data(), block.num_rows(), block.num_cols(), valid_columns(block, first_column), seed_,
                            first_column, n_, row_begin);
    }
    bool fills_on_device() const override { return true; }
    void fill_on_device(BlockVector& block, global_index first_column, const RowRuns& runs, int device) const override
    {
        on_device(block, first_column, runs, device);
    }
    void fill_on_device(BasicBlockVector<complex_single>& block, global_index first_column, const RowRuns& runs,
                        int device) const override
    {
        on_device(block, first_column, runs, device);
    }
    /// Columns of the block at `first_column` that are vectors of the plan; the rest are zero.
    template <class T>
    int valid_columns(const BasicBlockVector<T>& block, global_index first_column) const
    {
        return static_cast<int>(std::clamp<global_index>(r_ - first_column, 0, block.num_cols()));
    }
    /// Each run's rows at their place in the block, columns from C on zero.
    template <class T>
    void on_device(BasicBlockVector<T>& block, global_index first_column, const RowRuns& runs, int device) const
    {
        const int w = block.num_cols();
        const int valid = valid_columns(block, first_column);
        T* data = block.device_data_overwrite(device);
        global_index local = 0;
        for (const auto& [b, e] : runs) {
            random_phase_values_on(device, data + local * w, e - b, w, valid, seed_, first_column, n_, b);
            local += e - b;
        }
        TOPOKPM_REQUIRE(local == block.num_rows(), "row runs of ", local, " rows for a block of ", block.num_rows());
    }

private:
    global_index n_;
    int r_;
    std::uint64_t seed_;
};

class ExactTracePlan final : public StartVectorPlan {
public:
    explicit ExactTracePlan(global_index n) : n_(n) {}
    global_index num_columns() const override { return n_; }
    std::int64_t num_slots() const override { return 1; }
    std::int64_t slot(global_index) const override { return 0; }
    double divisor() const override { return static_cast<double>(n_); }
    void fill(BlockVector& block, global_index first_column, global_index row_begin) const override
    {
        fill_unit_vectors(block, first_column - row_begin);
    }

private:
    global_index n_;
};

class UnitVectorPlan final : public StartVectorPlan {
public:
    UnitVectorPlan(global_index n, std::vector<global_index> rows) : n_(n), rows_(std::move(rows)) {}
    global_index num_columns() const override { return static_cast<global_index>(rows_.size()); }
    std::int64_t num_slots() const override { return static_cast<std::int64_t>(rows_.size()); }
    std::int64_t slot(global_index column) const override { return column; }
    double divisor() const override { return 1.0; }
    void fill(BlockVector& block, global_index first_column, global_index row_begin) const override
    {
        fill_columns(block, first_column,
                     [&](int c, global_index col) { set_entry(block, row_begin, rows_[col], c, 1.0); });
    }

private:
    global_index n_;
    std::vector<global_index> rows_;
};

class PlaneWavePlan final : public StartVectorPlan {
public:
    PlaneWavePlan(const PlaneWaveLattice& lattice, std::vector<Momentum> k) : lattice_(lattice), k_(std::move(k)) {}
    global_index num_columns() const override
    {
        return static_cast<global_index>(k_.size()) * lattice_.states_per_cell;
    }
    std::int64_t num_slots() const override { return static_cast<std::int64_t>(k_.size()); }
    std::int64_t slot(global_index column) const override { return column / lattice_.states_per_cell; }
    double divisor() const override { return lattice_.states_per_cell; }
    void fill(BlockVector& block, global_index first_column, global_index row_begin) const override
    {
        // Column by column: a block may straddle two momenta when W does not divide S.
        const global_index total = static_cast<global_index>(lattice_.nx) * lattice_.ny * lattice_.states_per_cell;
        TOPOKPM_REQUIRE(row_begin >= 0 && row_begin + block.num_rows() <= total, "plane-wave rows ", row_begin, " + ",
                        block.num_rows(), " outside the ", total, " rows of the lattice");
        fill_columns(block, first_column, [&](int c, global_index col) {
            set_plane_wave_column(block.data(), block.num_cols(), c, lattice_,
                                  k_[static_cast<size_t>(col / lattice_.states_per_cell)],
                                  static_cast<int>(col % lattice_.states_per_cell), row_begin, block.num_rows());
        });
    }
    /// Column c of the rows [row_begin, row_begin + rows) (a rank's share): the entries of
    /// |k, s> there, from each row's canonical cell (x, y); the other rows untouched.
    static void set_plane_wave_column(complex_type* data, int w, int c, const PlaneWaveLattice& lat,
                                      const Momentum& k, int s, global_index row_begin, global_index rows)
    {
        const global_index states = lat.states_per_cell;
        const double norm = 1.0 / std::sqrt(static_cast<double>(lat.nx) * lat.ny);
        // The cells whose row s + S cell falls in the range.
        const global_index first_cell = (row_begin - s + states - 1) / states;
        const global_index end_cell = (row_begin + rows - s + states - 1) / states;
#pragma omp parallel for schedule(static)
        for (global_index cell = first_cell; cell < end_cell; ++cell) {
            const global_index x = cell / lat.ny, y = cell % lat.ny;
            // Reduce the integer phase first: 2 pi (mx x mod Nx) / Nx stays accurate on big lattices.
            const auto px = static_cast<double>(((static_cast<global_index>(k.mx) * x) % lat.nx + lat.nx) % lat.nx);
            const auto py = static_cast<double>(((static_cast<global_index>(k.my) * y) % lat.ny + lat.ny) % lat.ny);
            const double phase = 2.0 * M_PI * (px / lat.nx + py / lat.ny);
            const global_index local = s + states * cell - row_begin;
            data[static_cast<size_t>(local) * w + c] = complex_type(norm * std::cos(phase), norm * std::sin(phase));
        }
    }

private:
    PlaneWaveLattice lattice_;
    std::vector<Momentum> k_;
};

}  // namespace

std::unique_ptr<StartVectorPlan> random_phase_plan(global_index num_rows, int num_vectors, std::uint64_t vector_seed)
{
    TOPOKPM_USER_REQUIRE(num_vectors >= 1, "{vectors} ", num_vectors, ": must be >= 1");
    return std::make_unique<RandomPhasePlan>(num_rows, num_vectors, vector_seed);
}

std::unique_ptr<StartVectorPlan> exact_trace_plan(global_index num_rows)
{
    TOPOKPM_REQUIRE(num_rows >= 1, "exact trace of an empty operator");
    return std::make_unique<ExactTracePlan>(num_rows);
}

std::unique_ptr<StartVectorPlan> unit_vector_plan(global_index num_rows, std::vector<global_index> rows)
{
    TOPOKPM_USER_REQUIRE(!rows.empty(), "{ldos}: the selection holds no rows");
    for (const global_index j : rows)
        TOPOKPM_USER_REQUIRE(j >= 0 && j < num_rows, "{ldos}: row ", j, " outside the allowed range 0 .. ",
                             num_rows - 1, " (N = ", num_rows, ")");
    return std::make_unique<UnitVectorPlan>(num_rows, std::move(rows));
}

std::unique_ptr<StartVectorPlan> plane_wave_plan(const PlaneWaveLattice& lattice, std::vector<Momentum> momenta)
{
    TOPOKPM_USER_REQUIRE(!momenta.empty(), "{k_points}: no momenta given");
    TOPOKPM_USER_REQUIRE(lattice.nx >= 1 && lattice.ny >= 1 && lattice.states_per_cell >= 1,
                         "{k_points}: lattice ", lattice.nx, "x", lattice.ny, " with ", lattice.states_per_cell,
                         " states per cell has no plane waves");
    return std::make_unique<PlaneWavePlan>(lattice, std::move(momenta));
}

BlockTrace::BlockTrace(const Operator& op, const StartVectorPlan& plan, int num_moments, int block_width,
                       const KpmScaling& scaling)
    : op_(&op), plan_(&plan), num_moments_(num_moments), scaling_(scaling)
{
    TOPOKPM_USER_REQUIRE(num_moments >= 2, "{moments} ", num_moments, ": must be >= 2");
    TOPOKPM_USER_REQUIRE(block_width >= 1, "{vectors} ", block_width, ": the block width must be >= 1");
    const global_index c = plan.num_columns();
    TOPOKPM_REQUIRE(c >= 1, "a trace without start vectors");
    TOPOKPM_REQUIRE(plan.read_moments() == 0 || num_moments >= probing_trace_moments(plan.read_moments()),
                    "a trace of ", num_moments, " moments cannot read ", plan.read_moments(), " moments off its rows");
    width_ = static_cast<int>(std::min<global_index>(block_width, c));
    num_blocks_ = (c + width_ - 1) / width_;
    state_.sums.assign(static_cast<size_t>(plan.num_slots()) * num_moments, 0.0);
}

void BlockTrace::restore(TraceState state)
{
    TOPOKPM_REQUIRE(state.blocks_done >= 0 && state.blocks_done <= num_blocks_ &&
                        state.sums.size() == static_cast<size_t>(plan_->num_slots()) * num_moments_ &&
                        (!state.block || (state.block->current.num_cols() == width_ && state.blocks_done < num_blocks_)),
                    "saved trace state (", state.blocks_done, " blocks, ", state.sums.size(),
                    " moment sums) does not fit this trace (", num_blocks_, " blocks of width ", width_, ", ",
                    plan_->num_slots(), " x ", num_moments_, " moments)");
    recurrence_.reset();
    if (state.block) recurrence_.emplace(*op_, std::move(*state.block), num_moments_, scaling_);
    state.block.reset();
    state_ = std::move(state);
    if (recurrence_) collect_reads();
}

void BlockTrace::collect_reads()
{
    reads_.clear();
    if (plan_->read_moments() == 0) return;
    const RowRuns runs = op_->row_runs();
    const global_index first = state_.blocks_done * width_;
    const global_index cols = std::min<global_index>(width_, plan_->num_columns() - first);
    for (global_index c = 0; c < cols; ++c)
        for (const StartVectorPlan::Read& r : plan_->reads(first + c)) {
            global_index local = 0;  // the row's place in this rank's block; skipped when another rank's
            for (const auto& [b, e] : runs) {
                if (r.row >= b && r.row < e) {
                    reads_.push_back({local + r.row - b, static_cast<int>(c), r.slot, std::conj(r.phase)});
                    break;
                }
                local += e - b;
            }
        }
    filter_reads_.clear();
    if (const StartVectorPlan::Filter* f = plan_->filter()) {
        const auto all = static_cast<size_t>(plan_->num_columns());
        for (size_t i = 0; i < f->rows.size(); ++i) {
            global_index local = 0;
            for (const auto& [b, e] : runs) {
                if (f->rows[i] >= b && f->rows[i] < e) {
                    for (global_index c = 0; c < cols; ++c)
                        filter_reads_.push_back({local + f->rows[i] - b, static_cast<int>(c),
                                                 f->offset + 2 * (i * all + static_cast<size_t>(first + c))});
                    break;
                }
                local += e - b;
            }
        }
    }
}

void BlockTrace::read_rows(int first_moment)
{
    // After s sweeps the recurrence holds v_s and v_{s-1}; one step makes one or two sweeps.
    const int last = std::min(recurrence_->sweeps_done(), plan_->read_moments() - 1);
    for (int n = first_moment; n <= last; ++n) {
        const BlockVector& v = recurrence_->vector(n);
        for (const LocalRead& r : reads_)
            state_.sums[static_cast<size_t>(r.slot) * num_moments_ + n] += (r.conj_phase * v(r.local_row, r.column)).real();
        if (filter_reads_.empty()) continue;
        const double h = plan_->filter()->weights[static_cast<size_t>(n)];
        for (const FilterRead& r : filter_reads_) {
            const complex_type z = v(r.local_row, r.column);
            state_.sums[r.offset] += h * z.real();
            state_.sums[r.offset + 1] += h * z.imag();
        }
    }
}

void StartVectorPlan::fill_runs(BlockVector& block, global_index first_column, const RowRuns& runs) const
{
    if (runs.size() == 1) {
        fill(block, first_column, runs[0].first);
        return;
    }
    const int w = block.num_cols();
    global_index local = 0;
    for (const auto& [b, e] : runs) {
        BlockVector part(e - b, w);
        fill(part, first_column, b);
        std::copy(part.data(), part.data() + part.size(), block.data() + local * w);
        local += e - b;
    }
    TOPOKPM_REQUIRE(local == block.num_rows(), "row runs of ", local, " rows for a block of ", block.num_rows());
}

void StartVectorPlan::fill_on_device(BlockVector&, global_index, const RowRuns&, int) const
{
    TOPOKPM_REQUIRE(false, "fill_on_device() of a plan that fills on the host only");
}

void StartVectorPlan::fill_on_device(BasicBlockVector<complex_single>&, global_index, const RowRuns&, int) const
{
    TOPOKPM_REQUIRE(false, "fill_on_device() of a plan that fills on the host only");
}

bool BlockTrace::prepare()
{
    if (recurrence_ || done()) return false;
    const global_index first = state_.blocks_done * width_;
    const int device = op_->blocks_device();
    if (device != device::no_device && plan_->fills_on_device()) {
        // Made where the sweeps read them, in the operator's precision: no host array is
        // touched and nothing crosses the bus.
        auto made_on_device = [&](auto start) {
            plan_->fill_on_device(start, first, op_->row_runs(), device);
            recurrence_.emplace(*op_, std::move(start), num_moments_, scaling_);
        };
        if (op_->precision() == Precision::Single)
            made_on_device(BasicBlockVector<complex_single>::zeros_on(op_->num_rows(), width_, device));
        else
            made_on_device(BlockVector::zeros_on(op_->num_rows(), width_, device));
    } else {
        BlockVector start(op_->num_rows(), width_);
        plan_->fill_runs(start, first, op_->row_runs());
        recurrence_.emplace(*op_, std::move(start), num_moments_, scaling_);
    }
    collect_reads();
    return true;
}

void BlockTrace::step()
{
    TOPOKPM_REQUIRE(!done(), "step() after the last block");
    prepare();
    const int before = recurrence_->sweeps_done();
    recurrence_->step();
    const bool reading = plan_->read_moments() > 0;
    if (reading) read_rows(before == 0 ? 0 : before + 1);
    if (!recurrence_->done()) return;
    // Block finished: add its columns to their slots, in column order (reproducible).
    const std::vector<double>& raw = recurrence_->raw();
    const global_index first = state_.blocks_done * width_;
    const global_index cols = reading ? 0 : std::min<global_index>(width_, plan_->num_columns() - first);
    for (global_index c = 0; c < cols; ++c) {
        double* sum = state_.sums.data() + static_cast<size_t>(plan_->slot(first + c)) * num_moments_;
        const double* r = raw.data() + static_cast<size_t>(c) * num_moments_;
        for (int n = 0; n < num_moments_; ++n) sum[n] += r[n];
    }
    recurrence_.reset();
    ++state_.blocks_done;
}

std::int64_t BlockTrace::sweeps_done() const
{
    return state_.blocks_done * kpm_num_sweeps(num_moments_) + (recurrence_ ? recurrence_->sweeps_done() : 0);
}

TraceState BlockTrace::state() const
{
    TraceState copy{state_.blocks_done, state_.sums, std::nullopt};
    if (recurrence_) copy.block = recurrence_->state();
    return copy;
}

std::vector<double> BlockTrace::slot_moments() const
{
    TOPOKPM_REQUIRE(done(), "slot_moments() before the trace is complete");
    std::vector<double> out = state_.sums;
    // Once per trace (seed 004 Table III); rows read are each rank's own.
    if (!op_->dots_reduced() || (plan_->read_moments() > 0 && op_->num_ranks() > 1))
        op_->sum_over_ranks(out.data(), out.size());
    const double d = plan_->divisor();
    for (double& v : out) v /= d;
    return out;
}

}  // namespace topokpm::numerics
