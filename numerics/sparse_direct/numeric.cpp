// Numeric phase of SparseLU: right-looking supernodal LU with static pivoting, and the solve
// with iterative refinement.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <tuple>
#include <utility>

#include "numerics/sparse_direct/sparse_lu.hpp"
#include "numerics/sparse_direct/update_kernels.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::sparse_direct {
namespace {

const complex_double kOne(1.0, 0.0), kMinusOne(-1.0, 0.0), kZero(0.0, 0.0);

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// In-place LU without row interchanges of the n x n column-major block a (leading dimension
// lda): a = L U, L unit lower. Pivots below tau are replaced (see sparse_lu.hpp) and counted.
// Recursive halving keeps all but O(n^2 * 32) of the work in BLAS-3.
void dense_lu_static(complex_double* a, int n, int lda, double tau, global_index& replaced)
{
    if (n <= 32) {
        for (int k = 0; k < n; ++k) {
            complex_double& pivot = a[k + k * lda];
            const double mag = std::abs(pivot);
            if (mag < tau || mag == 0.0) {
                if (tau == 0.0)
                    throw NumericalError(detail::concat("zero pivot in the sparse LU with static pivoting disabled "
                                                        "({pivot_scale} = 0)"));
                pivot = mag == 0.0 ? complex_double(tau, 0.0) : pivot * (tau / mag);
                ++replaced;
            }
            const complex_double inv = kOne / pivot;
            for (int i = k + 1; i < n; ++i) a[i + k * lda] *= inv;
            for (int j = k + 1; j < n; ++j) {
                const complex_double ukj = a[k + j * lda];
                if (ukj == kZero) continue;
                for (int i = k + 1; i < n; ++i) a[i + j * lda] -= a[i + k * lda] * ukj;
            }
        }
        return;
    }
    const int n1 = n / 2, n2 = n - n1;
    complex_double* a12 = a + n1 * lda;
    complex_double* a21 = a + n1;
    complex_double* a22 = a + n1 + n1 * lda;
    dense_lu_static(a, n1, lda, tau, replaced);
    cblas_ztrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, n1, n2, &kOne, a, lda, a12, lda);
    cblas_ztrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, n2, n1, &kOne, a, lda, a21, lda);
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n2, n2, n1, &kMinusOne, a21, lda, a12, lda, &kOne, a22, lda);
    dense_lu_static(a22, n2, lda, tau, replaced);
}


// ---- the CPU table of update_kernels.hpp ----

void cpu_gemm(void*, int m, int w, int nc, const complex_double* l, int ldl, const complex_double* u, int ldu,
              complex_double* work, int ldw)
{
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, w, nc, &kOne, l, ldl, u, ldu, &kZero, work, ldw);
}

void cpu_fill(void*, complex_double* dst, std::size_t count, complex_double value) { std::fill(dst, dst + count, value); }

complex_double* cpu_scratch(void*, std::size_t count)
{
    thread_local std::vector<complex_double> buffer;
    if (buffer.size() < count) buffer.resize(count);
    return buffer.data();
}

void cpu_synchronize(void*) {}

void cpu_scatter(void*, const ScatterPlan& plan, const complex_double* work, int ldw)
{
    const global_index* index = plan.index.data();
    for (const ScatterBlock& b : plan.blocks) {
        const global_index* row_at = index + b.row_offset;
        const global_index rows = b.r1 - b.r0;
        for (global_index j = b.j0; j < b.j1; ++j) {
            complex_double* dst = b.base + index[b.col_offset + j - b.j0];
            const complex_double* src = work + j * ldw + b.r0;
            for (global_index i = 0; i < rows; ++i) dst[row_at[i]] -= src[i];
        }
    }
}

}  // namespace

namespace cpu {
const UpdateKernels& update_kernels()
{
    static const UpdateKernels table{cpu_gemm, cpu_scatter, cpu_fill, cpu_scratch, cpu_synchronize, false};
    return table;
}
}  // namespace cpu

// The SCATTER of step k's update columns [c0, c1) as a plan: entry (R[i], R[j]) of the update
// block lands in the L panel of the supernode of column R[j] when R[i] is not above it,
// otherwise in the U panel of the supernode of row R[i] (positions by merge walks over the
// target's sorted rows). Updates of disjoint column ranges touch disjoint entries, which is
// what lets HALO hand [n_g, m) to another device; panel_of(t) gives the target panels in the
// memory of the device that applies the plan (never dereferenced here).
void SparseLU::scatter_plan(global_index k, global_index c0, global_index c1, const PanelOf& panel_of,
                            ScatterPlan& plan) const
{
    plan.clear();
    const auto& rows = sn_rows_[k];
    const global_index m = static_cast<global_index>(rows.size());
    if (c1 <= c0 || m == 0) return;
    auto& index = plan.index;
    // L part, column group by column group: rows at or below the target supernode's first column.
    for (global_index g0 = c0; g0 < c1;) {
        const global_index t = sn_of_[rows[g0]];
        const global_index tb = sn_begin_[t], te = sn_begin_[t + 1], tnc = te - tb;
        global_index g1 = g0;
        while (g1 < c1 && rows[g1] < te) ++g1;
        const auto& trows = sn_rows_[t];
        const global_index ld = tnc + static_cast<global_index>(trows.size());
        const global_index i0 = std::lower_bound(rows.begin(), rows.end(), tb) - rows.begin();
        const global_index row_offset = static_cast<global_index>(index.size());
        std::size_t walk = 0;
        for (global_index i = i0; i < m; ++i) {
            if (rows[i] < te) { index.push_back(rows[i] - tb); continue; }
            while (walk < trows.size() && trows[walk] < rows[i]) ++walk;
            TOPOKPM_REQUIRE(walk < trows.size() && trows[walk] == rows[i], "update row ", rows[i],
                            " outside supernode ", t);
            index.push_back(tnc + static_cast<global_index>(walk));
        }
        const global_index col_offset = static_cast<global_index>(index.size());
        for (global_index j = g0; j < g1; ++j) index.push_back((rows[j] - tb) * ld);
        plan.blocks.push_back({panel_of(t), i0, m, g0 - c0, g1 - c0, row_offset, col_offset});
        g0 = g1;
    }
    // U part, row group by row group: columns beyond the row's supernode.
    for (global_index h0 = 0; h0 < m;) {
        const global_index t = sn_of_[rows[h0]];
        const global_index tb = sn_begin_[t], te = sn_begin_[t + 1], tnc = te - tb;
        global_index h1 = h0;
        while (h1 < m && rows[h1] < te) ++h1;
        const global_index j0 = std::max<global_index>(
            c0, std::lower_bound(rows.begin(), rows.end(), te) - rows.begin());
        if (j0 < c1) {
            const auto& trows = sn_rows_[t];
            const global_index row_offset = static_cast<global_index>(index.size());
            for (global_index i = h0; i < h1; ++i) index.push_back(rows[i] - tb);
            const global_index col_offset = static_cast<global_index>(index.size());
            // the chunk's first column in the target's rows, then a merge walk
            std::size_t walk = std::lower_bound(trows.begin(), trows.end(), rows[j0]) - trows.begin();
            for (global_index j = j0; j < c1; ++j) {
                while (walk < trows.size() && trows[walk] < rows[j]) ++walk;
                TOPOKPM_REQUIRE(walk < trows.size() && trows[walk] == rows[j], "update column ", rows[j],
                                " outside supernode ", t);
                index.push_back(static_cast<global_index>(walk) * tnc);
            }
            complex_double* ut = panel_of(t) + (tnc + static_cast<global_index>(trows.size())) * tnc;
            plan.blocks.push_back({ut, h0, h1, j0 - c0, c1 - c0, row_offset, col_offset});
        }
        h0 = h1;
    }
}

// The Schur-complement update of supernode k restricted to the columns [c0, c1) of its update
// block on the host: A(R, R[c0:c1]) -= L(R, k) U(k, R[c0:c1]), R = supernode_rows(k), as one
// GEMM into `work` and the SCATTER of scatter_plan() into the panels panel_of(t) (panel_of(k)
// is read for L(k), U(k)).
void SparseLU::schur_update(global_index k, global_index c0, global_index c1, complex_double* work,
                            ScatterPlan& plan, const PanelOf& panel_of) const
{
    const global_index m = static_cast<global_index>(sn_rows_[k].size());
    const global_index nc = sn_begin_[k + 1] - sn_begin_[k];
    if (c1 <= c0 || m == 0) return;
    const complex_double* lk = panel_of(k);
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(c1 - c0),
                static_cast<int>(nc), &kOne, lk + nc, static_cast<int>(nc + m), lk + (nc + m) * nc + c0 * nc,
                static_cast<int>(nc), &kZero, work, static_cast<int>(m));
    scatter_plan(k, c0, c1, panel_of, plan);
    cpu_scatter(nullptr, plan, work, static_cast<int>(m));
}

void SparseLU::update_segments(global_index k, global_index c0, global_index c1,
                               std::vector<std::pair<global_index, global_index>>& out) const
{
    out.clear();
    const auto& rows = sn_rows_[k];
    // Each split-point segment in equal pieces of <= chunk_ columns: the pieces depend on the
    // segment only, so [0, n_g) and [n_g, m) (n_g at a split point) get the same ones as [0, m).
    auto pieces = [&](global_index a, global_index b) {
        const global_index count = (b - a + chunk_ - 1) / chunk_;
        for (global_index p = 0; p < count; ++p) out.emplace_back(a + (b - a) * p / count, a + (b - a) * (p + 1) / count);
    };
    global_index a = c0;
    for (const global_index sp : split_points_) {
        const global_index cut = std::lower_bound(rows.begin(), rows.end(), sn_begin_[sp]) - rows.begin();
        if (cut <= a) continue;
        if (cut >= c1) break;
        pieces(a, cut);
        a = cut;
    }
    if (a < c1) pieces(a, c1);
}

std::size_t SparseLU::update_work_size() const
{
    std::size_t size = 0;
    for (const auto& rows : sn_rows_)
        size = std::max(size, rows.size() * std::min<std::size_t>(rows.size(), static_cast<std::size_t>(chunk_)));
    return size;
}

void SparseLU::update_columns(const UpdateKernels& kernels, void* queue, global_index k, global_index c0,
                              global_index c1, ScatterPlan& plan, const PanelOf& panel_of) const
{
    const global_index m = static_cast<global_index>(sn_rows_[k].size());
    const global_index nc = sn_begin_[k + 1] - sn_begin_[k];
    if (c1 <= c0 || m == 0) return;
    std::vector<std::pair<global_index, global_index>> segments;
    update_segments(k, c0, c1, segments);
    const complex_double* lk = panel_of(k);
    const complex_double* lbelow = lk + nc;                 // m x nc, leading dimension nc + m
    const complex_double* ublock = lk + (nc + m) * nc;      // nc x m, leading dimension nc
    auto gemm = [&](global_index a, global_index b, complex_double* w) {
        kernels.gemm(queue, static_cast<int>(m), static_cast<int>(b - a), static_cast<int>(nc), lbelow,
                     static_cast<int>(nc + m), ublock + a * nc, static_cast<int>(nc), w, static_cast<int>(m));
    };
    if (kernels.whole_step) {
        // Every piece's GEMM (the same shapes as the host's) into one work array, one SCATTER.
        complex_double* work = kernels.scratch(queue, static_cast<std::size_t>(m * (c1 - c0)));
        for (const auto& [a, b] : segments) gemm(a, b, work + (a - c0) * m);
        scatter_plan(k, c0, c1, panel_of, plan);
        kernels.scatter(queue, plan, work, static_cast<int>(m));
        return;
    }
    global_index widest = 0;
    for (const auto& [a, b] : segments) widest = std::max(widest, b - a);
    complex_double* work = kernels.scratch(queue, static_cast<std::size_t>(m * widest));
    for (const auto& [a, b] : segments) {
        gemm(a, b, work);
        scatter_plan(k, a, b, panel_of, plan);
        kernels.scatter(queue, plan, work, static_cast<int>(m));
    }
}

// panel += the entries of A - z I in supernode s (the "+ a" of the accumulate-then-add form).
void SparseLU::assemble(global_index s, complex_double* panel, complex_double z) const
{
    for (global_index e = asm_ptr_[s]; e < asm_ptr_[s + 1]; ++e) {
        const global_index q = asm_entry_[e];
        complex_double v;
        if (q >= 0) v = a_.values[q];
        else if (-1 - q < a_.nnz()) v = a_.values[-1 - q] - z;  // stored diagonal
        else v = kZero - z;                                    // unstored diagonal
        panel[asm_offset_[e]] += v;
    }
}

// Panel factorization: diagonal block, then L(R, k) = A(R, k) U_kk^-1 and U(k, R) = L_kk^-1 A(k, R).
void SparseLU::factor_panel(global_index k, complex_double* panel, double tau, global_index& replaced) const
{
    const int nc = static_cast<int>(sn_begin_[k + 1] - sn_begin_[k]);
    const int m = static_cast<int>(sn_rows_[k].size());
    dense_lu_static(panel, nc, nc + m, tau, replaced);
    const global_index pieces = panel_solve_pieces(k);
    for (global_index p = 0; p < 2 * pieces; ++p) panel_solve(k, panel, p);
}

global_index SparseLU::panel_solve_pieces(global_index k) const
{
    const global_index m = static_cast<global_index>(sn_rows_[k].size());
    return (m + chunk_ - 1) / chunk_;
}

// One piece of the panel solves: rows [r0, r1) of L(R, k) = A(R, k) U_kk^-1, or columns
// [r0, r1) of U(k, R) = L_kk^-1 A(k, R).
void SparseLU::panel_solve(global_index k, complex_double* panel, global_index piece) const
{
    const global_index nc = sn_begin_[k + 1] - sn_begin_[k];
    const global_index m = static_cast<global_index>(sn_rows_[k].size());
    const global_index count = panel_solve_pieces(k), ld = nc + m;
    const bool lower = piece < count;
    const global_index p = lower ? piece : piece - count;
    const global_index r0 = m * p / count, r1 = m * (p + 1) / count;
    if (lower)
        cblas_ztrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, static_cast<int>(r1 - r0),
                    static_cast<int>(nc), &kOne, panel, static_cast<int>(ld), panel + nc + r0, static_cast<int>(ld));
    else
        cblas_ztrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, static_cast<int>(nc),
                    static_cast<int>(r1 - r0), &kOne, panel, static_cast<int>(ld), panel + ld * nc + r0 * nc,
                    static_cast<int>(nc));
}

// The plain path: steps in order on the calling thread; a step with a large update (over 99 %
// of the flops are in a few percent of the steps; parallel_update_flops is ~1 ms of GEMM, worth
// a fork-join) shares its panel-solve and update pieces
// among the threads of a parallel region. BLAS runs single-threaded everywhere (inside a
// parallel region OpenBLAS-openmp does so by itself; outside, the thread count is set to 1),
// so every piece is the same call whichever thread runs it. Small steps take no barrier: on
// a machine shared with other processes each barrier can cost a scheduler time slice.
void SparseLU::factorize_threads(complex_double z, double tau, FactorReport& report)
{
    const global_index ns = static_cast<global_index>(sn_rows_.size());
    const int threads = omp_get_max_threads();
    struct RestoreThreads {
        int saved;
        ~RestoreThreads() { omp_set_num_threads(saved); }
    } restore{threads};
    omp_set_num_threads(1);
    const std::size_t work_size = update_work_size();
    std::vector<FirstTouchVector<complex_double>> work(threads);
    std::vector<ScatterPlan> plans(threads);
    work[0].resize(work_size);
    std::vector<std::pair<global_index, global_index>> segments;
    const PanelOf host = [this](global_index t) { return panels_.data() + panel_offset_[2 * t]; };
    for (global_index k = 0; k < ns; ++k) {
        complex_double* panel = panels_.data() + panel_offset_[2 * k];
        const global_index m = static_cast<global_index>(sn_rows_[k].size());
        const global_index nc = sn_begin_[k + 1] - sn_begin_[k];
        assemble(k, panel, z);
        update_segments(k, 0, m, segments);
        if (threads == 1 || 8.0 * static_cast<double>(m) * static_cast<double>(m) * static_cast<double>(nc) < parallel_update_flops) {
            factor_panel(k, panel, tau, report.tiny_pivots);
            for (const auto& [c0, c1] : segments) schur_update(k, c0, c1, work[0].data(), plans[0], host);
            continue;
        }
        dense_lu_static(panel, static_cast<int>(nc), static_cast<int>(nc + m), tau, report.tiny_pivots);
        const global_index pieces = 2 * panel_solve_pieces(k), count = static_cast<global_index>(segments.size());
        // An exception may not leave the parallel region: the first is kept and rethrown.
        std::exception_ptr error;
#pragma omp parallel num_threads(threads)
        {
            const int tid = omp_get_thread_num();
            auto guard = [&](auto&& body) {
                try {
                    body();
                } catch (...) {
#pragma omp critical(topokpm_sparse_lu_error)
                    if (!error) error = std::current_exception();
                }
            };
            if (work[tid].size() < work_size) work[tid].resize(work_size);
#pragma omp for schedule(dynamic, 1)
            for (global_index p = 0; p < pieces; ++p) guard([&] { panel_solve(k, panel, p); });
#pragma omp for schedule(dynamic, 1)
            for (global_index i = 0; i < count; ++i)
                guard([&] { schur_update(k, segments[i].first, segments[i].second, work[tid].data(), plans[tid], host); });
        }
        if (error) std::rethrow_exception(error);
    }
}

void SparseLU::factor_diagonal(global_index k, complex_double* panel, double tau, global_index& replaced) const
{
    const int nc = static_cast<int>(sn_begin_[k + 1] - sn_begin_[k]);
    dense_lu_static(panel, nc, nc + static_cast<int>(sn_rows_[k].size()), tau, replaced);
}

FactorReport SparseLU::factorize(complex_double z, const FactorOptions& options)
{
    TOPOKPM_USER_REQUIRE(options.pivot_scale >= 0.0 && std::isfinite(options.pivot_scale), "{pivot_scale} = ",
                         options.pivot_scale, " must be finite and >= 0");
    TOPOKPM_USER_REQUIRE(options.halo.device_share <= 1.0 && !std::isnan(options.halo.device_share),
                         "{device_share} = ", options.halo.device_share, " must be in [0, 1] (or < 0: chosen by the model)");
    TOPOKPM_USER_REQUIRE(options.halo.gpu >= 0, "{gpu} = ", options.halo.gpu, " must be >= 0");
    TOPOKPM_USER_REQUIRE(std::isfinite(z.real()) && std::isfinite(z.imag()), "{shift} = ", z, " must be finite");
    const auto t0 = std::chrono::steady_clock::now();
    factored_ = false;
    const global_index ns = static_cast<global_index>(sn_rows_.size());
    // One arena for all panels, allocated on the first call and reused by later shifts. The
    // panels hold the host's accumulated updates, started at -0.0 (see sparse_lu.hpp).
    if (panel_offset_.empty()) {
        panel_offset_.resize(2 * ns + 1, 0);
        for (global_index s = 0; s < ns; ++s) {
            const global_index nc = sn_begin_[s + 1] - sn_begin_[s], m = sn_rows_[s].size();
            panel_offset_[2 * s + 1] = panel_offset_[2 * s] + (nc + m) * nc;
            panel_offset_[2 * s + 2] = panel_offset_[2 * s + 1] + nc * m;
        }
        panels_.resize(static_cast<std::size_t>(panel_offset_[2 * ns]));
        // Assembly lists: A's entries grouped by supernode, plus the diagonals A does not store.
        std::vector<char> has_diag(n_, 0), is_diag(a_.nnz(), 0);
        asm_ptr_.assign(ns + 1, 0);
        for (global_index q = 0; q < a_.nnz(); ++q) ++asm_ptr_[entry_sn_[q] + 1];
        for (global_index i = 0; i < n_; ++i)
            for (global_index q = a_.row_ptr[i]; q < a_.row_ptr[i + 1]; ++q)
                if (a_.cols[q] == i) { has_diag[iperm_[i]] = 1; is_diag[q] = 1; }
        for (global_index p = 0; p < n_; ++p)
            if (!has_diag[p]) ++asm_ptr_[sn_of_[p] + 1];
        for (global_index s = 0; s < ns; ++s) asm_ptr_[s + 1] += asm_ptr_[s];
        asm_entry_.resize(asm_ptr_[ns]);
        asm_offset_.resize(asm_ptr_[ns]);
        std::vector<global_index> fill(asm_ptr_.begin(), asm_ptr_.end() - 1);
        for (global_index q = 0; q < a_.nnz(); ++q) {
            const global_index s = entry_sn_[q], e = fill[s]++;
            asm_entry_[e] = is_diag[q] ? -1 - q : q;
            asm_offset_[e] = entry_offset_[q] + (entry_in_u_[q] ? panel_offset_[2 * s + 1] - panel_offset_[2 * s] : 0);
        }
        for (global_index p = 0; p < n_; ++p) {
            if (has_diag[p]) continue;
            const global_index s = sn_of_[p], e = fill[s]++;
            const global_index ld = sn_begin_[s + 1] - sn_begin_[s] + static_cast<global_index>(sn_rows_[s].size());
            const global_index r = p - sn_begin_[s];
            asm_entry_[e] = -1 - a_.nnz() - p;
            asm_offset_[e] = r + r * ld;
        }
    }
    {  // uninitialized on the first call (FirstTouchVector): the threads touch it first
        complex_double* p = panels_.data();
        const std::ptrdiff_t size = static_cast<std::ptrdiff_t>(panels_.size());
#pragma omp parallel for schedule(static)
        for (std::ptrdiff_t e = 0; e < size; ++e) p[e] = complex_double(-0.0, -0.0);
    }
    // The 1-norm of A - z I (for tau), and a finiteness check of A.
    std::vector<double> colsum(n_, 0.0);
    std::vector<complex_double> diag(n_, kZero);
    for (global_index i = 0; i < n_; ++i)
        for (global_index q = a_.row_ptr[i]; q < a_.row_ptr[i + 1]; ++q) {
            const complex_double v = a_.values[q];
            if (!std::isfinite(v.real()) || !std::isfinite(v.imag()))
                throw NumericalError(detail::concat("matrix entry (", i, ", ", a_.cols[q], ") = ", v, " is not finite"));
            if (a_.cols[q] == i) diag[i] = v;
            else colsum[a_.cols[q]] += std::abs(v);
        }
    double norm1 = 0.0;
    for (global_index i = 0; i < n_; ++i) norm1 = std::max(norm1, colsum[i] + std::abs(diag[i] - z));

    FactorReport report;
    report.norm1 = norm1;
    report.pivot_threshold = options.pivot_scale * norm1;
    if (options.halo.accelerator == Accelerator::none) {
        factorize_threads(z, report.pivot_threshold, report);
    } else {
        factorize_halo(z, options.halo, report.pivot_threshold, report);
    }
    shift_ = z;
    pivot_threshold_ = report.pivot_threshold;
    tiny_pivots_ = report.tiny_pivots;
    factored_ = true;
    report.seconds = seconds_since(t0);
    return report;
}

SolveReport SparseLU::solve(const complex_double* b, complex_double* x, int nrhs, const SolveOptions& options) const
{
    TOPOKPM_REQUIRE(factored_, "solve() before factorize()");
    TOPOKPM_USER_REQUIRE(nrhs >= 0, "{nrhs} = ", nrhs, " must be >= 0");
    TOPOKPM_USER_REQUIRE(options.max_refinement_steps >= 0, "{max_refinement_steps} = ", options.max_refinement_steps,
                         " must be >= 0");
    const auto t0 = std::chrono::steady_clock::now();
    const global_index n = n_;
    const global_index ns = static_cast<global_index>(sn_rows_.size());
    SolveReport report;
    if (nrhs == 0 || n == 0) return report;

    std::vector<complex_double> y(static_cast<std::size_t>(n * nrhs)), tmp;
    // y <- (A - zI)^-1 y in place, y in the original order on entry and exit.
    auto lu_solve = [&](std::vector<complex_double>& v) {
        for (int c = 0; c < nrhs; ++c)
            for (global_index p = 0; p < n; ++p) y[p + c * n] = v[perm_[p] + c * n];
        for (global_index s = 0; s < ns; ++s) {  // L y = P v
            const int nc = static_cast<int>(sn_begin_[s + 1] - sn_begin_[s]);
            const auto& rows = sn_rows_[s];
            const int m = static_cast<int>(rows.size());
            const complex_double* l = lpanel(s);
            complex_double* ys = y.data() + sn_begin_[s];
            cblas_ztrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, nc, nrhs, &kOne, l, nc + m, ys,
                        static_cast<int>(n));
            if (m == 0) continue;
            tmp.resize(static_cast<std::size_t>(m) * nrhs);
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, nrhs, nc, &kOne, l + nc, nc + m, ys,
                        static_cast<int>(n), &kZero, tmp.data(), m);
            for (int c = 0; c < nrhs; ++c)
                for (int i = 0; i < m; ++i) y[rows[i] + c * n] -= tmp[i + c * m];
        }
        for (global_index s = ns - 1; s >= 0; --s) {  // U y = y
            const int nc = static_cast<int>(sn_begin_[s + 1] - sn_begin_[s]);
            const auto& rows = sn_rows_[s];
            const int m = static_cast<int>(rows.size());
            complex_double* ys = y.data() + sn_begin_[s];
            if (m > 0) {
                tmp.resize(static_cast<std::size_t>(m) * nrhs);
                for (int c = 0; c < nrhs; ++c)
                    for (int i = 0; i < m; ++i) tmp[i + c * m] = y[rows[i] + c * n];
                cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, nc, nrhs, m, &kMinusOne, upanel(s), nc,
                            tmp.data(), m, &kOne, ys, static_cast<int>(n));
            }
            cblas_ztrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, nc, nrhs, &kOne,
                        lpanel(s), nc + m, ys, static_cast<int>(n));
        }
        for (int c = 0; c < nrhs; ++c)
            for (global_index p = 0; p < n; ++p) v[perm_[p] + c * n] = y[p + c * n];
    };
    report = refine(shift_, b, x, nrhs, options, lu_solve);
    report.seconds = seconds_since(t0);
    return report;
}

std::pair<double, double> SparseLU::residual(complex_double shift, const complex_double* b, const complex_double* x,
                                             complex_double* r) const
{
    double berr = 0.0, rmax = 0.0;
    for (global_index i = 0; i < n_; ++i) {
        // the diagonal of A - zI enters |A - zI| |x| as one entry, not as |a_ii| + |z|
        complex_double acc = b[i], dii = -shift;
        double scale = std::abs(b[i]);
        for (global_index q = a_.row_ptr[i]; q < a_.row_ptr[i + 1]; ++q) {
            if (a_.cols[q] == i) { dii += a_.values[q]; continue; }
            acc -= a_.values[q] * x[a_.cols[q]];
            scale += std::abs(a_.values[q]) * std::abs(x[a_.cols[q]]);
        }
        acc -= dii * x[i];
        scale += std::abs(dii) * std::abs(x[i]);
        r[i] = acc;
        const double mag = std::abs(acc);
        rmax = std::max(rmax, mag);
        if (mag > 0.0) berr = std::max(berr, scale > 0.0 ? mag / scale : INFINITY);
    }
    return {berr, rmax};
}

SolveReport SparseLU::refine(complex_double shift, const complex_double* b, complex_double* x, int nrhs,
                             const SolveOptions& options,
                             const std::function<void(std::vector<complex_double>&)>& apply_inverse) const
{
    const global_index n = n_;
    SolveReport report;
    std::vector<complex_double> r(static_cast<std::size_t>(n * nrhs));
    auto residual_of = [&](int c) { return residual(shift, b + c * n, x + c * n, r.data() + c * n); };

    std::vector<complex_double> v(b, b + n * nrhs);
    apply_inverse(v);
    std::copy(v.begin(), v.end(), x);
    std::vector<double> berr(nrhs), rnorm(nrhs);
    std::vector<int> steps(nrhs, 0);
    std::vector<char> active(nrhs, 1);
    std::vector<complex_double> previous(static_cast<std::size_t>(n));
    for (int c = 0; c < nrhs; ++c) std::tie(berr[c], rnorm[c]) = residual_of(c);
    for (int step = 0; step < options.max_refinement_steps; ++step) {
        bool any = false;
        for (int c = 0; c < nrhs; ++c) {
            if (active[c] && berr[c] <= options.target_backward_error) active[c] = 0;
            any = any || active[c];
        }
        if (!any) break;
        std::copy(r.begin(), r.end(), v.begin());
        apply_inverse(v);  // corrections d = (A - zI)^-1 r
        for (int c = 0; c < nrhs; ++c) {
            if (!active[c]) continue;
            complex_double* xc = x + c * n;
            std::copy(xc, xc + n, previous.begin());
            for (global_index i = 0; i < n; ++i) xc[i] += v[i + c * n];
            const auto [e, rn] = residual_of(c);
            if (e < berr[c]) {
                ++steps[c];
                // Continue only while each step at least halves the error (LAPACK's xGERFS rule).
                if (e > 0.5 * berr[c]) active[c] = 0;
                berr[c] = e;
                rnorm[c] = rn;
            } else {  // no gain: keep the previous iterate
                std::copy(previous.begin(), previous.end(), xc);
                residual_of(c);
                active[c] = 0;
            }
        }
    }
    for (int c = 0; c < nrhs; ++c) {
        report.refinement_steps = std::max(report.refinement_steps, steps[c]);
        report.backward_error = std::max(report.backward_error, berr[c]);
        report.residual_norm = std::max(report.residual_norm, rnorm[c]);
    }
    return report;
}

}  // namespace topokpm::sparse_direct
