#include "numerics/spmmv/operator_factory.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "numerics/spmmv/cuda_operator.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "numerics/spmmv/stencil_operator.hpp"
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

template <class T>
BuiltOperator make_stored(const OperatorSpec& spec, const OperatorSource& source)
{
    TOPOKPM_REQUIRE(source.rows != nullptr, "make_operator: kind ", kind_name(spec.kind), " without a row source");
    const RowSource& rows = *source.rows;
    auto m = std::make_shared<const BasicSellMatrix<T>>(
        BasicSellMatrix<T>::build(rows, 0, rows.num_rows(), sell_params(spec)));
    BuiltOperator out;
    out.fill_efficiency = m->fill_efficiency();
    if constexpr (std::is_same_v<T, complex_double>) {  // cuda and naive: complex double only
        if (spec.device == Backend::Cuda) out.op = make_cuda_sell_operator(m, spec.device_index);
        else if (spec.kind == OperatorKind::Naive) out.op = make_naive_operator(m);
    }
    // The CPU sweeps visit lattice rows in y tiles so the neighbouring x planes stay in
    // cache (docs/performance.md).
    if (!out.op) out.op = source.lattice ? make_sell_operator(m, *source.lattice) : make_sell_operator(m);
    return out;
}

}  // namespace

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
        TOPOKPM_REQUIRE(static_cast<bool>(source.stencil), "make_operator: kind free without a stencil");
        BuiltOperator out;
        out.op = spec.device == Backend::Cuda ? make_cuda_stencil_operator(source.stencil(), spec.device_index)
                                              : make_cpu_stencil_operator(source.stencil(), spec.precision);
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

namespace {

/// Rows [0, end) of a source with the columns outside dropped: a self-contained sample.
class LeadingRows final : public RowSource {
public:
    LeadingRows(const RowSource& source, global_index end) : source_(source), end_(end) {}
    global_index num_rows() const override { return end_; }
    int max_row_length() const override { return source_.max_row_length(); }
    bool real_valued() const override { return source_.real_valued(); }
    int row(global_index row, global_index* cols, complex_type* values) const override
    {
        const int len = source_.row(row, cols, values);
        int kept = 0;
        for (int k = 0; k < len; ++k) {
            if (cols[k] >= end_) continue;
            cols[kept] = cols[k];
            values[kept] = values[k];
            ++kept;
        }
        return kept;
    }

private:
    const RowSource& source_;
    global_index end_;
};

}  // namespace

double operator_rate(const OperatorSpec& spec, const OperatorSource& source, global_index rows, int width)
{
    TOPOKPM_REQUIRE(rows >= 1 && width >= 1, "rate sample of ", rows, " rows, width ", width);
    OperatorSource sample;
    std::optional<LeadingRows> leading;
    BlockStencil slab;
    if (spec.kind == OperatorKind::Free) {
        TOPOKPM_REQUIRE(static_cast<bool>(source.stencil), "operator_rate: kind free without a stencil");
        const BlockStencil whole = source.stencil();
        const global_index plane = static_cast<global_index>(whole.orbitals) * whole.ny * whole.nz;
        const int planes = static_cast<int>(std::clamp<global_index>(rows / plane, 1, whole.nx));
        slab = x_slab(whole, 0, planes);
        sample.stencil = [&slab] { return slab; };
    } else {
        TOPOKPM_REQUIRE(source.rows != nullptr && rows <= source.rows->num_rows(), "operator_rate: ", rows,
                        " sample rows");
        leading.emplace(*source.rows, rows);
        sample.rows = &*leading;
    }
    const BuiltOperator built = make_operator(spec, sample);
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
