#include "numerics/kpm/two_index.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "runtime/base/error.hpp"

namespace topokpm::numerics {

double two_index_bytes(global_index rows, int num_moments, int block_width)
{
    const double block = static_cast<double>(rows) * block_width * sizeof(complex_type);
    return (num_moments + std::min(num_moments, kLeftBatch) + 4) * block;
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

std::vector<complex_type> two_index_moments(const TwoIndexTrace& t,
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

    std::vector<complex_type> right(k * static_cast<std::size_t>(m));  // R_m, column m of a K x M matrix
    std::vector<complex_type> left(k * static_cast<std::size_t>(batch));
    std::vector<complex_type> product(static_cast<std::size_t>(batch) * m);
    std::vector<complex_type> gamma(static_cast<std::size_t>(m) * m, complex_type(0.0, 0.0));
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
                std::memcpy(right.data() + k * static_cast<std::size_t>(i), scratch.data(), k * sizeof(complex_type));
            },
            count);
        int filled = 0, first = 0;
        auto flush = [&] {
            // product (batch x M, column-major) = L^H R over the K values of the block.
            cblas_zgemm(CblasColMajor, CblasConjTrans, CblasNoTrans, filled, m, static_cast<int>(k), &one, left.data(),
                        static_cast<int>(k), right.data(), static_cast<int>(k), &zero, product.data(), batch);
            for (int l = 0; l < filled; ++l)
                for (int j = 0; j < m; ++j)
                    gamma[static_cast<std::size_t>(first + l) * m + j] +=
                        product[static_cast<std::size_t>(j) * batch + l];
            first += filled;
            filled = 0;
        };
        each_chebyshev_vector(
            *t.h, std::move(left_start), m, t.scaling,
            [&](int, const BlockVector& v) {
                std::memcpy(left.data() + k * static_cast<std::size_t>(filled), v.data(), k * sizeof(complex_type));
                if (++filled == batch) flush();
            },
            count);
        if (filled > 0) flush();
    }
    const double divisor = t.plan->divisor() * static_cast<double>(t.plan->num_slots());
    for (complex_type& g : gamma) g /= divisor;
    return gamma;
}

}  // namespace topokpm::numerics
