#include "numerics/kpm/two_index.hpp"

#include <cblas.h>

#include <algorithm>

#include "runtime/base/error.hpp"

namespace topokpm::numerics {

double two_index_bytes(global_index rows, int num_moments, int block_width, std::int64_t slots)
{
    const double block = static_cast<double>(rows) * block_width * sizeof(complex_type);
    const double gamma = static_cast<double>(num_moments) * num_moments * sizeof(complex_type);
    return (num_moments + std::min(num_moments, kLeftBatch) + 4) * block + (slots >= 2 ? slots + 1 : 1) * gamma;
}

namespace {

/// Runs the recurrence from `start` until v_{M-1} and hands every v_n to visit(n, v_n) in order.
template <class Visit, class Step>
void each_chebyshev_vector(const Operator& h, BlockVector start, int num_moments, const KpmScaling& scaling,
                           Visit&& visit, Step&& after_step)
{
    // probing_trace_moments(M) moments reach v_{M-1} (block_trace.hpp).
    ChebyshevRecurrence recurrence(h, std::move(start), probing_trace_moments(num_moments), scaling);
    int next = 0;
    while (next < num_moments) {
        const int before = recurrence.sweeps_done();
        recurrence.step();
        after_step(recurrence.sweeps_done() - before);
        for (; next <= std::min(recurrence.sweeps_done(), num_moments - 1); ++next)
            visit(next, recurrence.vector(next));
    }
}

}  // namespace

TwoIndexMoments two_index_moments(const TwoIndexTrace& t,
                                  const std::function<void(std::int64_t, std::int64_t)>& progress)
{
    TOPOKPM_USER_REQUIRE(t.num_moments >= 2, "{moments} ", t.num_moments, ": must be >= 2");
    TOPOKPM_USER_REQUIRE(t.block_width >= 1, "{block_width} ", t.block_width, ": must be >= 1");
    TOPOKPM_REQUIRE(t.h && t.va && t.vb && t.plan, "two_index_moments without its operators or plan");
    const global_index n = t.h->num_rows();
    TOPOKPM_REQUIRE(t.va->num_rows() == n && t.vb->num_rows() == n, "velocity operators of ", t.va->num_rows(), " and ",
                    t.vb->num_rows(), " rows for H of ", n);
    TOPOKPM_REQUIRE(t.h->num_ranks() == 1 && t.va->num_ranks() == 1 && t.vb->num_ranks() == 1,
                    "two-index moments run on one rank");
    const int m = t.num_moments;
    const global_index columns = t.plan->num_columns();
    const int w = static_cast<int>(std::min<global_index>(t.block_width, columns));
    const std::int64_t blocks = (columns + w - 1) / w;
    const auto k = static_cast<std::size_t>(n) * static_cast<std::size_t>(w);  // values per block
    const int batch = std::min(m, kLeftBatch);

    // Kept per moment column by column, [M][W][N]: column c of R_m at (m W + c) N, so that the
    // N x M matrix of one column's R_m has the leading dimension W N (likewise the L_n).
    std::vector<complex_type> right(k * static_cast<std::size_t>(m));
    std::vector<complex_type> left(k * static_cast<std::size_t>(batch));
    std::vector<complex_type> product(static_cast<std::size_t>(batch) * m);
    const auto mm = static_cast<std::size_t>(m) * static_cast<std::size_t>(m);
    const std::int64_t slots = t.plan->num_slots();
    std::vector<complex_type> sums(static_cast<std::size_t>(slots) * mm, complex_type(0.0, 0.0));
    const auto nn = static_cast<std::size_t>(n);
    auto transpose_into = [&](complex_type* to, const BlockVector& v) {
        const complex_type* from = v.data();
        for (std::size_t j = 0; j < nn; ++j)
            for (std::size_t c = 0; c < static_cast<std::size_t>(w); ++c) to[c * nn + j] = from[j * w + c];
    };
    BlockVector scratch(n, w);
    const AugmentedOps plain{1.0, 0.0, 0.0, false};
    const std::int64_t total_sweeps = blocks * 2 * (m - 1);
    std::int64_t sweeps = 0;
    auto count = [&](int done) {
        sweeps += done;
        if (progress) progress(sweeps, total_sweeps);
    };
    const complex_type one(1.0, 0.0), zero(0.0, 0.0);

    for (std::int64_t b = 0; b < blocks; ++b) {
        BlockVector start(n, w);
        t.plan->fill_runs(start, b * w, t.h->row_runs());
        BlockVector left_start(n, w);
        t.va->apply(start, left_start, plain, nullptr);
        each_chebyshev_vector(
            *t.h, std::move(start), m, t.scaling,
            [&](int i, const BlockVector& v) {
                t.vb->apply(v, scratch, plain, nullptr);
                transpose_into(right.data() + k * static_cast<std::size_t>(i), scratch);
            },
            count);
        int filled = 0, first = 0;
        auto flush = [&] {
            // Per column c: product (batch x M, column-major) = L_c^H R_c over the N rows.
            for (int c = 0; c < w; ++c) {
                const global_index column = b * w + c;
                if (column >= columns) break;  // the zero columns padding the last block
                const std::size_t offset = static_cast<std::size_t>(c) * nn;
                cblas_zgemm(CblasColMajor, CblasConjTrans, CblasNoTrans, filled, m, static_cast<int>(n), &one,
                            left.data() + offset, static_cast<int>(k), right.data() + offset, static_cast<int>(k),
                            &zero, product.data(), batch);
                complex_type* sum = sums.data() + static_cast<std::size_t>(t.plan->slot(column)) * mm;
                for (int l = 0; l < filled; ++l)
                    for (int j = 0; j < m; ++j)
                        sum[static_cast<std::size_t>(first + l) * m + j] +=
                            product[static_cast<std::size_t>(j) * batch + l];
            }
            first += filled;
            filled = 0;
        };
        each_chebyshev_vector(
            *t.h, std::move(left_start), m, t.scaling,
            [&](int, const BlockVector& v) {
                transpose_into(left.data() + k * static_cast<std::size_t>(filled), v);
                if (++filled == batch) flush();
            },
            count);
        if (filled > 0) flush();
    }
    TwoIndexMoments out;
    out.num_slots = slots;
    out.gamma.assign(mm, complex_type(0.0, 0.0));
    const double divisor = t.plan->divisor();
    for (complex_type& v : sums) v /= divisor;
    for (std::int64_t sl = 0; sl < slots; ++sl)  // in slot order: reproducible
        for (std::size_t i = 0; i < mm; ++i) out.gamma[i] += sums[static_cast<std::size_t>(sl) * mm + i];
    for (complex_type& g : out.gamma) g /= static_cast<double>(slots);
    if (slots >= 2) out.per_slot = std::move(sums);
    return out;
}

}  // namespace topokpm::numerics
