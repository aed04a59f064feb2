// numerics::make_operator against the operators built by hand, operator_cost_model against
// byte counts worked out by hand and the built operators' own storage, and the width
// registry's dispatch and strips.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <memory>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"
#include "runtime/base/error.hpp"
#include "runtime/device/device.hpp"
#include "topokpm/config.hpp"

using namespace topokpm;
using namespace topokpm::numerics;

namespace {

std::unique_ptr<hamiltonians::Model> ti_model()
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = 6;
    p.ny = 5;
    p.nz = 4;
    p.disorder = 0.3;
    return hamiltonians::make_model(p);
}

/// y = A x for one random block, by `op`.
BlockVector apply(const Operator& op, int r)
{
    const global_index n = op.num_rows();
    BlockVector x(n, r), y(n, r);
    fill_random_phase_vectors(x, 7, 0, n);
    op.apply(x, y, AugmentedOps{0.5, 0.25, 0.0, false}, nullptr);
    return y;
}

}  // namespace

// Every kind the factory builds is bit for bit the operator built by hand from the same
// matrix or stencil (same kernel, same sweep order).
TEST(OperatorFactory, KindsEqualTheHandBuiltOperators)
{
    const auto model = ti_model();
    const OperatorSource source = hamiltonians::operator_source(*model);
    const global_index n = model->num_rows();
    const LatticeRowOrder lattice = *source.lattice;
    struct Case {
        OperatorSpec spec;
        std::unique_ptr<Operator> by_hand;
        std::string name;
    };
    OperatorSpec sell;
    sell.sell = {8, 32};
    OperatorSpec crs = sell;
    crs.kind = OperatorKind::Crs;
    OperatorSpec naive = sell;
    naive.kind = OperatorKind::Naive;
    OperatorSpec free = sell;
    free.kind = OperatorKind::Free;
    OperatorSpec sell_single = sell;
    sell_single.precision = Precision::Single;
    OperatorSpec free_single = free;
    free_single.precision = Precision::Single;
    std::vector<Case> cases;
    cases.push_back({sell, make_sell_operator(std::make_shared<SellMatrix>(SellMatrix::build(*model, 0, n, {8, 32})), lattice),
                     "sell-8-32-tiled"});
    cases.push_back({crs, make_sell_operator(std::make_shared<SellMatrix>(SellMatrix::build(*model, 0, n, {1, 1})), lattice),
                     "crs-tiled"});
    cases.push_back({naive, make_naive_operator(std::make_shared<SellMatrix>(SellMatrix::build(*model, 0, n, {1, 1}))),
                     "naive-crs"});
    cases.push_back({free, make_cpu_stencil_operator(model->block_stencil()), "ti-stencil-cpu"});
    cases.push_back({sell_single,
                     make_sell_operator(std::make_shared<const BasicSellMatrix<complex_single>>(
                                            convert_values<complex_single>(SellMatrix::build(*model, 0, n, {8, 32}))),
                                        lattice),
                     "sell-8-32-tiled-single"});
    cases.push_back({free_single, make_cpu_stencil_operator(model->block_stencil(), Precision::Single),
                     "ti-stencil-cpu-single"});
    for (const Case& c : cases) {
        const BuiltOperator built = make_operator(c.spec, source);
        EXPECT_EQ(built.op->name(), c.name);
        EXPECT_EQ(built.op->precision(), c.spec.precision) << c.name;
        EXPECT_EQ(built.fill_efficiency > 0, c.spec.kind != OperatorKind::Free) << c.name;
        for (const int r : {1, 8}) {
            const BlockVector a = apply(*built.op, r), b = apply(*c.by_hand, r);
            for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], b.data()[i]) << c.name << " R=" << r;
        }
    }
}

// A part of the rows (OperatorSpec::rows, a rank's local block) applies exactly the entries
// of its rows whose columns lie inside it, renumbered: compared with a plain loop over the
// model's rows, in long double. Each y entry is a sum of at most m + 1 terms (m = row
// length, plus the shift term): recursive summation errs by at most m eps relative to
// sum |terms|, each complex product by at most sqrt(8) eps < 3 eps, the final scaling by
// eps, so |y - y_exact| <= 2 (m + 3) eps scale (sum |H_ij| + shift) with |x_j| = 1 (random
// phases); the long-double reference adds nothing of that order.
TEST(OperatorFactory, PartOfTheRowsAppliesItsDiagonalBlock)
{
    const auto model = ti_model();
    const OperatorSource source = hamiltonians::operator_source(*model);
    const global_index n = model->num_rows();
    const global_index plane = 4 * 5 * 4;  // orbitals ny nz
    const double scale = 0.5, shift = 0.25, eps = 0x1p-52;
    for (const OperatorKind kind : {OperatorKind::Sell, OperatorKind::Crs, OperatorKind::Naive, OperatorKind::Free}) {
        const bool free = kind == OperatorKind::Free;
        // Stored kinds take any range; free whole x-planes.
        const global_index begin = free ? plane : 37, end = free ? 4 * plane : 211;
        OperatorSpec spec;
        spec.kind = kind;
        spec.sell = {8, 32};
        spec.rows = {begin, end};
        ASSERT_EQ(part_rows(spec, n), end - begin);
        const auto op = make_operator(spec, source).op;
        ASSERT_EQ(op->num_rows(), end - begin);
        const BlockVector y = apply(*op, 3);
        BlockVector x(end - begin, 3);
        fill_random_phase_vectors(x, 7, 0, end - begin);
        std::vector<global_index> cols(model->max_row_length());
        std::vector<complex_type> vals(model->max_row_length());
        double worst = 0;
        for (global_index i = 0; i < end - begin; ++i) {
            const int len = model->row(begin + i, cols.data(), vals.data());
            for (int c = 0; c < 3; ++c) {
                using wide = std::complex<long double>;
                wide sum = -static_cast<long double>(shift) * wide(x(i, c));
                double magnitude = shift;
                for (int k = 0; k < len; ++k) {
                    if (cols[k] < begin || cols[k] >= end) continue;
                    sum += wide(vals[k]) * wide(x(cols[k] - begin, c));
                    magnitude += std::abs(vals[k]);
                }
                const double bound = 2.0 * (len + 3) * eps * scale * magnitude;
                const wide diff = wide(y(i, c)) - static_cast<long double>(scale) * sum;
                worst = std::max(worst, static_cast<double>(std::abs(diff)) / bound);
            }
        }
        EXPECT_LE(worst, 1.0) << op->name() << ": largest error in units of the bound";
    }
    // Ranges outside the matrix, empty ones and free parts that cut an x-plane are refused.
    OperatorSpec bad;
    for (const RowRange& r : {RowRange{0, 0}, RowRange{-1, 10}, RowRange{0, n + 1}, RowRange{10, 5}}) {
        bad.rows = r;
        EXPECT_THROW(make_operator(bad, source), InputError) << r.begin << ", " << r.end;
    }
    bad.kind = OperatorKind::Free;
    bad.rows = {plane / 2, 2 * plane};
    EXPECT_THROW(make_operator(bad, source), InputError);
}

// Kind free builds the model's stencil once (one source.stencil() call) and hands it back in
// BuiltOperator::stencil, shared with the CPU operator rather than copied: the run's bounds
// read that one instead of building a second potential (67 MB on graphene 2048x2048). The
// stored kinds build none; a part hands back its slab.
TEST(OperatorFactory, FreeBuildsTheStencilOnceAndSharesIt)
{
    const auto model = ti_model();
    OperatorSource source = hamiltonians::operator_source(*model);
    int builds = 0;
    const auto build = source.stencil;
    source.stencil = [&] {
        ++builds;
        return build();
    };
    const BlockStencil whole = model->block_stencil();
    auto same_potential = [](const BlockStencil& a, const BlockStencil& b, size_t offset) {
        if (a.potential.size() + offset > b.potential.size()) return false;
        for (size_t i = 0; i < a.potential.size(); ++i)
            if (a.potential[i] != b.potential[offset + i]) return false;
        return true;
    };
    for (const Precision p : {Precision::Double, Precision::Single}) {
        OperatorSpec free;
        free.kind = OperatorKind::Free;
        free.precision = p;
        builds = 0;
        const BuiltOperator built = make_operator(free, source);
        EXPECT_EQ(builds, 1);
        ASSERT_NE(built.stencil, nullptr);
        EXPECT_EQ(built.stencil.use_count(), 2) << "the operator holds the stencil handed back, not a copy";
        EXPECT_EQ(built.stencil->num_rows(), model->num_rows());
        EXPECT_EQ(built.stencil->potential.size(), whole.potential.size());
        EXPECT_TRUE(same_potential(*built.stencil, whole, 0));
        // The operator applies the stencil handed back: bit for bit the one built by hand over it.
        const auto by_hand = make_cpu_stencil_operator(BlockStencil(*built.stencil), p);
        const BlockVector a = apply(*built.op, 2), b = apply(*by_hand, 2);
        for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], b.data()[i]) << i;
    }
    OperatorSpec sell;
    builds = 0;
    EXPECT_EQ(make_operator(sell, source).stencil, nullptr);
    EXPECT_EQ(builds, 0);
    // x-planes 1 .. 3 of 6 (a rank's rows): one build, the slab handed back.
    OperatorSpec part;
    part.kind = OperatorKind::Free;
    const global_index plane = 4 * 5 * 4;  // orbitals ny nz
    part.rows = {plane, 4 * plane};
    builds = 0;
    const BuiltOperator slab = make_operator(part, source);
    EXPECT_EQ(builds, 1);
    ASSERT_NE(slab.stencil, nullptr);
    EXPECT_EQ(slab.stencil->nx, 3);
    EXPECT_TRUE(same_potential(*slab.stencil, whole, static_cast<size_t>(5 * 4)));  // sites per plane (ti: per site)
}

TEST(OperatorFactory, CombinationsWithoutAnImplementationAreInputErrors)
{
    const auto model = ti_model();
    const OperatorSource source = hamiltonians::operator_source(*model);
    OperatorSpec naive_single;
    naive_single.kind = OperatorKind::Naive;
    naive_single.precision = Precision::Single;
    EXPECT_THROW(make_operator(naive_single, source), InputError);
}

// Issue 36: single precision on cuda is built like double (sell and free): no InputError; in
// a CPU-only build both reach the NotCompiled stubs, with a GPU both build an operator in their
// precision (tests/unit/cuda for the sweeps).
TEST(OperatorFactory, CudaSinglePrecisionIsBuiltLikeDouble)
{
    const auto model = ti_model();
    const OperatorSource source = hamiltonians::operator_source(*model);
    for (const OperatorKind kind : {OperatorKind::Sell, OperatorKind::Free})
        for (const Precision precision : {Precision::Double, Precision::Single}) {
            OperatorSpec spec;
            spec.kind = kind;
            spec.device = Backend::Cuda;
            spec.precision = precision;
            const std::string what = std::string(kind == OperatorKind::Sell ? "sell" : "free") +
                                     (precision == Precision::Single ? " single" : " double");
            if (!TOPOKPM_HAVE_CUDA) {
                EXPECT_THROW(make_operator(spec, source), NotCompiled) << what;
                continue;
            }
            if (device::visible_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
            const BuiltOperator built = make_operator(spec, source);
            EXPECT_EQ(built.op->precision(), precision) << what;
            const std::string name = built.op->name();
            const bool ends_single = name.size() > 7 && name.compare(name.size() - 7, 7, "-single") == 0;
            EXPECT_EQ(name.find("cuda-"), 0u) << name;
            EXPECT_EQ(ends_single, precision == Precision::Single) << name;
        }
}

// Bytes by hand: SELL double 16 + 4 per nonzero, single 8 + 4; free the double potential
// (ti: one entry per site = 1/4 per row); vectors 3 x 16 (8) bytes per row and column.
TEST(OperatorCostModel, BytesByHandAndAgainstTheBuiltOperators)
{
    OperatorSpec sell;
    OperatorSpec single = sell;
    single.precision = Precision::Single;
    OperatorSpec free;
    free.kind = OperatorKind::Free;
    const double n = 1000, nnz = 13000;
    EXPECT_EQ(operator_cost_model(sell, 0.25).sweep_bytes(n, nnz, 8), 20.0 * nnz + 48.0 * n * 8);
    EXPECT_EQ(operator_cost_model(single, 0.25).sweep_bytes(n, nnz, 8), 12.0 * nnz + 24.0 * n * 8);
    EXPECT_EQ(operator_cost_model(free, 0.25).sweep_bytes(n, nnz, 8), 2.0 * n + 48.0 * n * 8);
    EXPECT_EQ(operator_cost_model(free, 1.0).matrix_bytes(n, nnz), 8.0 * n);
    EXPECT_EQ(operator_cost_model(single, 1.0).block_bytes(n, 4), 8.0 * n * 4);
    EXPECT_EQ(operator_cost_model(sell, 1.0).sweep_flops(n, nnz, 2), (8.0 * nnz + 34.0 * n) * 2);

    // The model counts what the kernels read: the built operators hold that plus their
    // padding and O(rows) tables (SELL) and nothing else (free: the potential).
    const auto model = ti_model();
    const OperatorSource source = hamiltonians::operator_source(*model);
    const double rows = static_cast<double>(model->num_rows());
    for (const OperatorSpec& spec : {sell, single, free}) {
        const BuiltOperator built = make_operator(spec, source);
        const double modelled = operator_cost_model(spec, source.potential_per_row).matrix_bytes(rows, source.estimated_nonzeros);
        const double held = built.op->cost().matrix_bytes;
        EXPECT_LE(modelled, held) << built.op->name();
        EXPECT_LE(held, 1.3 * modelled) << built.op->name();
    }
}

TEST(WidthRegistry, DispatchAndStrips)
{
    for (const int r : {1, 2, 4, 8, 16, 32, 3, 12, 64}) {
        const int got = with_width(r, [](auto w) { return decltype(w)::value; });
        EXPECT_EQ(got, is_registered_width(r) ? r : 0) << r;
    }
    int sum = 0;
    for (const int w : strip_widths(45)) {
        EXPECT_TRUE(is_registered_width(w)) << w;
        sum += w;
    }
    EXPECT_EQ(sum, 45);
    if (registered_widths() == std::vector<int>{1, 2, 4, 8, 16, 32}) {
        EXPECT_EQ(strip_widths(45), (std::vector<int>{32, 8, 4, 1}));
    }
}

TEST(OperatorStrips, ForEachStripCoversTheColumnsInOrderInRegisteredWidths)
{
    // The one strip-mining rule of the algorithms (Operator::for_each_strip): contiguous
    // strips [first, first + w) from column 0, each a registered width, widest first.
    const auto model = ti_model();
    const auto op = make_cpu_stencil_operator(model->block_stencil());
    for (const int n : {0, 1, 3, 12, 45, 64}) {
        std::vector<int> widths;
        int next = 0;
        op->for_each_strip(n, [&](int first, int w) {
            EXPECT_EQ(first, next) << n;
            EXPECT_TRUE(is_registered_width(w)) << n << ": " << w;
            if (!widths.empty()) {
                EXPECT_LE(w, widths.back()) << n;
            }
            widths.push_back(w);
            next = first + w;
        });
        EXPECT_EQ(next, n);
        EXPECT_EQ(widths, strip_widths(n)) << n;
    }
    if (registered_widths() == std::vector<int>{1, 2, 4, 8, 16, 32}) {
        std::vector<int> widths;
        op->for_each_strip(12, [&](int, int w) { widths.push_back(w); });
        EXPECT_EQ(widths, (std::vector<int>{8, 4}));
    }
}
