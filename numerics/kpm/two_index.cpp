#include "numerics/kpm/two_index.hpp"

#include <algorithm>
#include <optional>

#include "numerics/kpm/two_index_store.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::numerics {

double two_index_bytes(global_index rows, int num_moments, int block_width, std::int64_t slots)
{
    const double block = static_cast<double>(rows) * block_width * sizeof(complex_type);
    const double gamma = static_cast<double>(num_moments) * num_moments * sizeof(complex_type);
    return two_index_store_bytes(rows, block_width, num_moments, std::min(num_moments, kLeftBatch)) +
           4 * block + (slots >= 2 ? slots + 1 : 1) * gamma;
}

TwoIndexMoments two_index_moments(const TwoIndexTrace& t,
                                  const std::function<void(std::int64_t, std::int64_t)>& progress,
                                  const TwoIndexCheckpoints& checkpoints, TwoIndexState* resume)
{
    TOPOKPM_USER_REQUIRE(t.num_moments >= 2, "{moments} ", t.num_moments, ": must be >= 2");
    TOPOKPM_USER_REQUIRE(t.block_width >= 1, "{block_width} ", t.block_width, ": must be >= 1");
    TOPOKPM_REQUIRE(t.h && t.va && t.vb && t.plan, "two_index_moments without its operators or plan");
    const global_index n = t.h->num_rows();
    TOPOKPM_REQUIRE(t.va->num_rows() == n && t.vb->num_rows() == n, "velocity operators of ", t.va->num_rows(), " and ",
                    t.vb->num_rows(), " rows for H of ", n);
    TOPOKPM_REQUIRE(t.va->num_ranks() == t.h->num_ranks() && t.vb->num_ranks() == t.h->num_ranks() &&
                        t.va->row_runs() == t.h->row_runs() && t.vb->row_runs() == t.h->row_runs(),
                    "velocity operators distributed otherwise than H (other ranks or rows)");
    const int m = t.num_moments;
    const global_index columns = t.plan->num_columns();
    const int w = static_cast<int>(std::min<global_index>(t.block_width, columns));
    const std::int64_t blocks = (columns + w - 1) / w;
    const int batch = std::min(m, kLeftBatch);
    // probing_trace_moments(M) moments reach v_{M-1} (block_trace.hpp).
    const int recurrence_moments = probing_trace_moments(m);

    // The kept vectors, where H leaves its blocks (two_index_store.hpp), and one batch's
    // products per column, copied to the host.
    const std::unique_ptr<TwoIndexStore> store = make_two_index_store(t.device, n, w, m, batch);
    std::vector<complex_type> product(static_cast<std::size_t>(w) * batch * m);
    const auto mm = static_cast<std::size_t>(m) * static_cast<std::size_t>(m);
    const std::int64_t slots = t.plan->num_slots();
    TwoIndexState state;
    std::optional<ChebyshevState> resumed_left;  // the left recurrence to continue, until it is
    if (resume) {
        TOPOKPM_REQUIRE(resume->blocks_done >= 0 && resume->blocks_done < blocks &&
                            resume->sums.size() == static_cast<std::size_t>(slots) * mm &&
                            (!resume->left ||
                             (resume->left->current.num_rows() == n && resume->left->current.num_cols() == w &&
                              resume->left_done > 0 && resume->left_done < m && resume->left_done % batch == 0 &&
                              (resume->left->sweeps_done == resume->left_done ||
                               resume->left->sweeps_done == resume->left_done - 1))),
                        "saved two-index state (", resume->blocks_done, " blocks, ", resume->sums.size(),
                        " sums, left vectors ", resume->left_done, ") does not fit this trace (", blocks,
                        " blocks of width ", w, ", ", slots, " slots, M = ", m, ")");
        state.blocks_done = resume->blocks_done;
        state.sums = std::move(resume->sums);
        resumed_left = std::move(resume->left);
        state.left_done = resumed_left ? resume->left_done : 0;
    } else {
        state.sums.assign(static_cast<std::size_t>(slots) * mm, complex_type(0.0, 0.0));
    }
    std::vector<complex_type>& sums = state.sums;
    BlockVector scratch(n, w);
    const AugmentedOps plain{1.0, 0.0, 0.0, false};
    const std::int64_t sweeps_per_block = 2 * (m - 1);
    const std::int64_t total_sweeps = blocks * sweeps_per_block;
    std::int64_t sweeps = 0;  // of the block under way
    auto count = [&](std::int64_t b, int done) {
        sweeps += done;
        if (progress) progress(b * sweeps_per_block + sweeps, total_sweeps);
    };
    // A resumable point: `left` is the recurrence of the left pass under way (its state is
    // saved with the sums), or null (the state saved is the block's start, or the resumed one).
    auto pause = [&](const ChebyshevRecurrence* left) {
        if (!checkpoints.due || !checkpoints.due()) return;
        TwoIndexState saved;
        saved.blocks_done = state.blocks_done;
        saved.sums = sums;
        if (left) saved.left = left->state();
        else if (resumed_left) saved.left = resumed_left;
        saved.left_done = saved.left ? state.left_done : 0;
        checkpoints.save(saved);
    };

    for (std::int64_t b = state.blocks_done; b < blocks; ++b) {
        state.blocks_done = b;
        sweeps = 0;
        BlockVector start(n, w);
        t.plan->fill_runs(start, b * w, t.h->row_runs());
        BlockVector left_start(n, w);
        if (!resumed_left) t.va->apply(start, left_start, plain, nullptr);
        // The right pass: R_i = v_b T_i(Ht) |r>, i < M, kept.
        {
            pause(nullptr);
            ChebyshevRecurrence recurrence(*t.h, std::move(start), recurrence_moments, t.scaling);
            for (int next = 0; next < m;) {
                const int before = recurrence.sweeps_done();
                recurrence.step();
                count(b, recurrence.sweeps_done() - before);
                for (; next <= std::min(recurrence.sweeps_done(), m - 1); ++next) {
                    t.vb->apply(recurrence.vector(next), scratch, plain, nullptr);
                    store->keep_right(next, scratch);
                }
                if (next < m) pause(nullptr);
            }
        }
        // The left pass: L_i = T_i(Ht) v_a |r>, a batch at a time against all R_j.
        int filled = 0;
        int& first = state.left_done;  // L_first .. are the batch under way
        auto flush = [&] {
            // Per column c: product (batch x M, column-major) = L_c^H R_c over the N rows,
            // added in column, row, moment order (the same for every store).
            const int used = static_cast<int>(std::min<global_index>(w, columns - b * w));  // not the zero padding
            store->products(filled, used, product.data());
            for (int c = 0; c < used; ++c) {
                const complex_type* p = product.data() + static_cast<std::size_t>(c) * batch * m;
                complex_type* sum = sums.data() + static_cast<std::size_t>(t.plan->slot(b * w + c)) * mm;
                for (int l = 0; l < filled; ++l)
                    for (int j = 0; j < m; ++j)
                        sum[static_cast<std::size_t>(first + l) * m + j] += p[static_cast<std::size_t>(j) * batch + l];
            }
            first += filled;
            filled = 0;
        };
        std::optional<ChebyshevRecurrence> recurrence;
        if (resumed_left) {
            sweeps = (m - 1) + resumed_left->sweeps_done;  // where the resumed block stands
            recurrence.emplace(*t.h, std::move(*resumed_left), recurrence_moments, t.scaling);
            resumed_left.reset();
        } else {
            first = 0;
            recurrence.emplace(*t.h, std::move(left_start), recurrence_moments, t.scaling);
        }
        for (int next = first; next < m;) {
            if (next > recurrence->sweeps_done()) {
                const int before = recurrence->sweeps_done();
                recurrence->step();
                count(b, recurrence->sweeps_done() - before);
            }
            for (; next <= std::min(recurrence->sweeps_done(), m - 1); ++next) {
                store->keep_left(filled, recurrence->vector(next));
                if (++filled == batch) {
                    flush();
                    if (first < m) pause(&*recurrence);
                }
            }
        }
        if (filled > 0) flush();
    }
    // Each rank summed its own rows' terms: one sum over the ranks, of every slot's sums
    // (complex<double> is layout-compatible with double[2], [complex.numbers.general]).
    if (t.h->num_ranks() > 1) t.h->sum_over_ranks(reinterpret_cast<double*>(sums.data()), 2 * sums.size());
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
