#include "numerics/spmmv/operator_factory.hpp"

#include <algorithm>
#include <chrono>
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

/// Rows [begin, end) of a source with the columns outside that range dropped, renumbered
/// from 0: a part of the matrix (RowRange), as a RowSource SellMatrix::build can take.
class RowPart final : public RowSource {
public:
    RowPart(const RowSource& source, global_index begin, global_index end) : source_(source), begin_(begin), end_(end)
    {
    }
    global_index num_rows() const override { return end_ - begin_; }
    int max_row_length() const override { return source_.max_row_length(); }
    bool real_valued() const override { return source_.real_valued(); }
    int row(global_index row, global_index* cols, complex_type* values) const override
    {
        const int len = source_.row(begin_ + row, cols, values);
        int kept = 0;
        for (int k = 0; k < len; ++k) {
            if (cols[k] < begin_ || cols[k] >= end_) continue;
            cols[kept] = cols[k] - begin_;
            values[kept] = values[k];
            ++kept;
        }
        return kept;
    }

private:
    const RowSource& source_;
    global_index begin_, end_;
};

bool is_whole(const OperatorSpec& spec, global_index total)
{
    return spec.rows.begin == 0 && (spec.rows.end < 0 || spec.rows.end == total);
}

template <class T>
BuiltOperator make_stored(const OperatorSpec& spec, const OperatorSource& source)
{
    TOPOKPM_REQUIRE(source.rows != nullptr, "make_operator: kind ", kind_name(spec.kind), " without a row source");
    const global_index total = source.rows->num_rows();
    const global_index n = part_rows(spec, total);
    const bool whole = is_whole(spec, total);
    std::optional<RowPart> part;
    if (!whole) part.emplace(*source.rows, spec.rows.begin, spec.rows.begin + n);
    const RowSource& rows = whole ? *source.rows : *part;
    auto m = std::make_shared<const BasicSellMatrix<T>>(BasicSellMatrix<T>::build(rows, 0, n, sell_params(spec)));
    BuiltOperator out;
    out.fill_efficiency = m->fill_efficiency();
    if constexpr (std::is_same_v<T, complex_double>) {  // cuda and naive: complex double only
        if (spec.device == Backend::Cuda) out.op = make_cuda_sell_operator(m, spec.device_index);
        else if (spec.kind == OperatorKind::Naive) out.op = make_naive_operator(m);
    }
    // The CPU sweeps visit lattice rows in y tiles so the neighbouring x planes stay in
    // cache (docs/performance.md).
    if (!out.op) out.op = source.lattice && whole ? make_sell_operator(m, *source.lattice) : make_sell_operator(m);
    return out;
}

/// The stencil of the x-planes spec.rows selects (whole planes), or the whole stencil.
BlockStencil stencil_part(const OperatorSpec& spec, const OperatorSource& source)
{
    TOPOKPM_REQUIRE(static_cast<bool>(source.stencil), "make_operator: kind free without a stencil");
    BlockStencil whole = source.stencil();
    const global_index plane = static_cast<global_index>(whole.orbitals) * whole.ny * whole.nz;
    const global_index total = plane * whole.nx;
    const global_index n = part_rows(spec, total);
    if (is_whole(spec, total)) return whole;
    TOPOKPM_USER_REQUIRE(spec.rows.begin % plane == 0 && n % plane == 0, "{rows} [", spec.rows.begin, ", ",
                         spec.rows.begin + n, "): the matrix-free operator takes whole x-planes of ", plane, " rows");
    return x_slab(whole, static_cast<int>(spec.rows.begin / plane), static_cast<int>((spec.rows.begin + n) / plane));
}

}  // namespace

global_index part_rows(const OperatorSpec& spec, global_index total)
{
    const global_index end = spec.rows.end < 0 ? total : spec.rows.end;
    TOPOKPM_USER_REQUIRE(spec.rows.begin >= 0 && spec.rows.begin < end && end <= total, "{rows} [", spec.rows.begin,
                         ", ", end, "): not a non-empty range of the ", total, " rows");
    return end - spec.rows.begin;
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
    TOPOKPM_USER_REQUIRE(!single || (spec.device == Backend::Cpu && spec.kind != OperatorKind::Naive),
                         "precision single: implemented for the sell, crs and free operators on the cpu device; ",
                         "kind ", kind_name(spec.kind), spec.device == Backend::Cuda ? " on cuda" : "", " has none");
    TOPOKPM_USER_REQUIRE(spec.device == Backend::Cpu || spec.kind != OperatorKind::Naive,
                         "kind naive: the baseline runs on the cpu device only");
    if (spec.kind == OperatorKind::Free) {
        BuiltOperator out;
        out.op = spec.device == Backend::Cuda ? make_cuda_stencil_operator(stencil_part(spec, source), spec.device_index)
                                              : make_cpu_stencil_operator(stencil_part(spec, source), spec.precision);
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
    const BuiltOperator built = make_operator(part, source);
    const global_index n = built.op->num_rows();
    BlockVector x(n, width), y(n, width);
    for (size_t i = 0; i < x.size(); ++i) x.data()[i] = complex_type(1.0, 0.5);
    const AugmentedOps ops{0.1, 0.0, 0.0, true};
    DotSums dots;
    built.op->apply(x, y, ops, &dots);  // warm-up
    constexpr int reps = 5;
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < reps; ++k) built.op->apply(x, y, ops, &dots);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return static_cast<double>(n) * reps / std::max(seconds, 1e-9);
}

}  // namespace topokpm::numerics
