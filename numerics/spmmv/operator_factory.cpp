#include "numerics/spmmv/operator_factory.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "numerics/spmmv/cuda_operator.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {
namespace {

const char* kind_name(OperatorKind kind)
{
    switch (kind) {
    case OperatorKind::Sell: return "sell";
    case OperatorKind::Crs: return "crs";
    case OperatorKind::Free: return "free";
    case OperatorKind::Naive: return "naive";
    }
    return "?";
}

/// The runs `range` selects from `total` rows: its runs, checked, or the one run [begin, end).
RowRuns runs_of(const RowRange& range, global_index total)
{
    if (range.runs.empty()) {
        const global_index end = range.end < 0 ? total : range.end;
        TOPOKPM_USER_REQUIRE(range.begin >= 0 && range.begin < end && end <= total, "{rows} [", range.begin, ", ",
                             end, "): not a non-empty range of the ", total, " rows");
        return {{range.begin, end}};
    }
    global_index last = 0;
    for (const auto& [b, e] : range.runs) {
        TOPOKPM_USER_REQUIRE(b >= last && b < e && e <= total, "{rows} run [", b, ", ", e,
                             "): runs must be non-empty, ascending and disjoint inside the ", total, " rows");
        last = e;
    }
    return range.runs;
}

/// The rows `runs` of a source with the columns outside them dropped, renumbered in the order
/// of the runs: a part of the matrix (RowRange), as a RowSource SellMatrix::build can take.
/// Columns stay ascending because the runs are.
class RowPart final : public RowSource {
public:
    RowPart(const RowSource& source, RowRuns runs) : source_(source), runs_(std::move(runs))
    {
        offset_.push_back(0);
        for (const auto& [b, e] : runs_) offset_.push_back(offset_.back() + (e - b));
    }
    global_index num_rows() const override { return offset_.back(); }
    int max_row_length() const override { return source_.max_row_length(); }
    bool real_valued() const override { return source_.real_valued(); }
    int row(global_index row, global_index* cols, complex_type* values) const override
    {
        const auto run = static_cast<size_t>(std::upper_bound(offset_.begin(), offset_.end(), row) - offset_.begin() - 1);
        const int len = source_.row(runs_[run].first + row - offset_[run], cols, values);
        int kept = 0;
        for (int k = 0; k < len; ++k) {
            // The run holding the column: the last one starting at or before it.
            const auto it = std::upper_bound(runs_.begin(), runs_.end(), cols[k],
                                             [](global_index c, const auto& r) { return c < r.first; });
            if (it == runs_.begin() || cols[k] >= std::prev(it)->second) continue;
            const auto q = static_cast<size_t>(std::prev(it) - runs_.begin());
            cols[kept] = offset_[q] + cols[k] - runs_[q].first;
            values[kept] = values[k];
            ++kept;
        }
        return kept;
    }

private:
    const RowSource& source_;
    RowRuns runs_;
    std::vector<global_index> offset_;  ///< local index of each run's first row, then the count
};

bool is_whole(const OperatorSpec& spec, global_index total)
{
    const RowRuns runs = runs_of(spec.rows, total);
    return runs.size() == 1 && runs[0].first == 0 && runs[0].second == total;
}

template <class T>
BuiltOperator make_stored(const OperatorSpec& spec, const OperatorSource& source)
{
    TOPOKPM_REQUIRE(source.rows != nullptr, "make_operator: kind ", kind_name(spec.kind), " without a row source");
    const global_index total = source.rows->num_rows();
    const global_index n = part_rows(spec, total);
    const bool whole = is_whole(spec, total);
    std::optional<RowPart> part;
    if (!whole) part.emplace(*source.rows, runs_of(spec.rows, total));
    const RowSource& rows = whole ? *source.rows : *part;
    auto m = std::make_shared<const BasicSellMatrix<T>>(BasicSellMatrix<T>::build(rows, 0, n, sell_params(spec)));
    BuiltOperator out;
    out.fill_efficiency = m->fill_efficiency();
    if constexpr (std::is_same_v<T, complex_double> || std::is_same_v<T, complex_single>) {  // cuda: complex values
        if (spec.device == Backend::Cuda) out.op = make_cuda_sell_operator(m, spec.device_index);
    }
    if constexpr (std::is_same_v<T, complex_double>) {  // naive: complex double only
        if (spec.kind == OperatorKind::Naive) out.op = make_naive_operator(m);
    }
    // The CPU sweeps visit lattice rows in y tiles so the neighbouring x planes stay in
    // cache (docs/performance.md).
    if (!out.op) out.op = source.lattice && whole ? make_sell_operator(m, *source.lattice) : make_sell_operator(m);
    return out;
}

/// The stencil of the x-planes or the (x, y) tile spec.rows selects (whole z-columns), or
/// the whole stencil.
BlockStencil stencil_part(const OperatorSpec& spec, const OperatorSource& source)
{
    TOPOKPM_REQUIRE(static_cast<bool>(source.stencil), "make_operator: kind free without a stencil");
    BlockStencil whole = source.stencil();
    const global_index column = static_cast<global_index>(whole.orbitals) * whole.nz;  // one (x, y) site column
    const global_index plane = column * whole.ny;
    const global_index total = plane * whole.nx;
    const RowRuns runs = runs_of(spec.rows, total);
    if (is_whole(spec, total)) return whole;
    const bool planes = runs[0].first % plane == 0 && runs[0].second % plane == 0;
    if (runs.size() == 1 && (spec.rows.runs.empty() || planes)) {
        const global_index b = runs[0].first, e = runs[0].second;
        TOPOKPM_USER_REQUIRE(b % plane == 0 && e % plane == 0, "{rows} [", b, ", ", e,
                             "): the matrix-free operator takes whole x-planes of ", plane, " rows");
        return x_slab(whole, static_cast<int>(b / plane), static_cast<int>(e / plane));
    }
    // A tile: run k is x-plane x0 + k, sites y0 <= y < y1, every z.
    const global_index x0 = runs[0].first / plane, y0 = runs[0].first % plane / column;
    const global_index y1 = y0 + (runs[0].second - runs[0].first) / column;
    for (size_t k = 0; k < runs.size(); ++k) {
        const global_index b = (x0 + static_cast<global_index>(k)) * plane + y0 * column;
        TOPOKPM_USER_REQUIRE(runs[k].first == b && runs[k].second == b + (y1 - y0) * column && y1 > y0,
                             "{rows} run [", runs[k].first, ", ", runs[k].second, "): the matrix-free operator "
                             "takes an (x, y) tile of whole z-columns of ", column, " rows, here x ", x0 + k,
                             ", y [", y0, ", ", y1, ")");
    }
    return xy_tile(whole, static_cast<int>(x0), static_cast<int>(x0 + static_cast<global_index>(runs.size())),
                   static_cast<int>(y0), static_cast<int>(y1));
}

}  // namespace

global_index part_rows(const OperatorSpec& spec, global_index total)
{
    global_index n = 0;
    for (const auto& [b, e] : runs_of(spec.rows, total)) n += e - b;
    return n;
}

SellParams sell_params(const OperatorSpec& spec)
{
    if (spec.kind != OperatorKind::Sell) return {1, 1};
    // On the GPU a chunk is one warp whatever C says.
    return {spec.device == Backend::Cuda ? 32 : spec.sell.chunk_height, spec.sell.sigma};
}

BuiltOperator make_operator(const OperatorSpec& spec, const OperatorSource& source)
{
    const bool single = spec.precision == Precision::Single;
    TOPOKPM_USER_REQUIRE(!single || spec.kind != OperatorKind::Naive,
                         "precision single: implemented for the sell, crs and free operators; kind ",
                         kind_name(spec.kind), " has none");
    TOPOKPM_USER_REQUIRE(spec.device == Backend::Cpu || spec.kind != OperatorKind::Naive,
                         "kind naive: the baseline runs on the cpu device only");
    if (spec.kind == OperatorKind::Free) {
        BuiltOperator out;
        out.stencil = std::make_shared<const BlockStencil>(stencil_part(spec, source));
        out.op = spec.device == Backend::Cuda
                     ? make_cuda_stencil_operator(*out.stencil, spec.device_index, spec.precision)
                     : make_cpu_stencil_operator(out.stencil, spec.precision, spec.stencil_tuning);
        return out;
    }
    // A model whose entries are all real stores real values (12 instead of 20 bytes per entry
    // in double) on the CPU's fused kernels; the vectors stay complex.
    if (stores_real_values(spec, source.rows != nullptr && source.rows->real_valued()))
        return single ? make_stored<float>(spec, source) : make_stored<double>(spec, source);
    return single ? make_stored<complex_single>(spec, source) : make_stored<complex_double>(spec, source);
}

bool stores_real_values(const OperatorSpec& spec, bool real_valued_model)
{
    return real_valued_model && spec.device == Backend::Cpu &&
           (spec.kind == OperatorKind::Sell || spec.kind == OperatorKind::Crs);
}

OperatorCostModel operator_cost_model(const OperatorSpec& spec, double potential_per_row, bool real_valued_model)
{
    OperatorCostModel m;
    m.value_bytes = spec.precision == Precision::Single ? 8.0 : 16.0;
    if (spec.kind == OperatorKind::Free) {
        m.matrix_bytes_per_row = 8.0 * potential_per_row;  // the potential stays double
    } else {
        // value (complex, or its real part) + 32-bit column
        const double value = stores_real_values(spec, real_valued_model) ? m.value_bytes / 2 : m.value_bytes;
        m.matrix_bytes_per_nonzero = value + 4.0;
    }
    return m;
}

double operator_rate(const OperatorSpec& spec, const OperatorSource& source, global_index rows, int width)
{
    TOPOKPM_REQUIRE(rows >= 1 && width >= 1, "rate sample of ", rows, " rows, width ", width);
    OperatorSpec part = spec;
    part.rows = {0, rows};
    if (spec.kind == OperatorKind::Free) {  // whole x-planes, at least one
        TOPOKPM_REQUIRE(static_cast<bool>(source.stencil), "operator_rate: kind free without a stencil");
        const BlockStencil whole = source.stencil();
        const global_index plane = static_cast<global_index>(whole.orbitals) * whole.ny * whole.nz;
        part.rows.end = std::clamp<global_index>(rows / plane, 1, whole.nx) * plane;
    }
    return sweep_rate(*make_operator(part, source).op, width, false);
}

double sweep_rate(const Operator& op, int width, bool pairs)
{
    TOPOKPM_REQUIRE(width >= 1, "sweep rate at width ", width);
    const auto rate = [&](auto x) {
        auto y = x;
        for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = y.data()[i] = {0.5, 0.25};
        // |scale H| < 2 on the models' spectra (|H| <= 13 t here): the recurrence stays bounded.
        const AugmentedOps ops{0.1, 0.0, -1.0, true};
        DotSums first, second;
        const auto call = [&] {
            if (pairs) op.apply_two_steps(x, y, ops, &first, &second);
            else op.apply(x, y, ops, &first);
        };
        call();  // warm-up: pages, caches
        double best = 0.0;
        for (int round = 0; round < 3; ++round) {
            int calls = 0;
            double seconds = 0.0;
            const auto t0 = std::chrono::steady_clock::now();
            while (calls < 2 || seconds < 5e-3) {
                call();
                ++calls;
                seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            }
            best = std::max(best, (pairs ? 2.0 : 1.0) * calls * static_cast<double>(op.num_rows()) / seconds);
        }
        return best;
    };
    const global_index n = op.num_rows();
    return op.precision() == Precision::Single ? rate(BasicBlockVector<complex_single>(n, width))
                                               : rate(BlockVector(n, width));
}

}  // namespace topokpm::numerics
