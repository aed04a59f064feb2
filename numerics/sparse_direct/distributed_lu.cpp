// SparseLU's numeric phase and solve across MPI ranks, 1-D supernode-cyclic (see the header).
#include "numerics/sparse_direct/distributed_lu.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>

#include "runtime/base/error.hpp"
#include "runtime/mpi/communicator.hpp"

namespace topokpm::sparse_direct {
namespace {

const complex_double kOne(1.0, 0.0), kMinusOne(-1.0, 0.0), kZero(0.0, 0.0);

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void bcast(complex_double* data, std::size_t count, int root, MPI_Comm comm)
{
    TOPOKPM_REQUIRE(count <= static_cast<std::size_t>(INT_MAX), "broadcast of ", count, " entries");
    mpi::check(MPI_Bcast(data, static_cast<int>(count), MPI_C_DOUBLE_COMPLEX, root, comm), "MPI_Bcast(panel)");
}

// FNV-1a over the analysis that decides the layout (every rank must hold the same one).
std::uint64_t analysis_hash(const SparseLU& lu)
{
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<std::uint64_t>(lu.size()));
    for (const global_index p : lu.perm()) mix(static_cast<std::uint64_t>(p));
    for (const global_index b : lu.supernode_begin()) mix(static_cast<std::uint64_t>(b));
    for (std::size_t s = 0; s + 1 < lu.supernode_begin().size(); ++s)
        for (const global_index r : lu.supernode_rows(static_cast<global_index>(s))) mix(static_cast<std::uint64_t>(r));
    return h;
}

}  // namespace

DistributedLU::DistributedLU(const SparseLU& analysis, MPI_Comm comm) : lu_(analysis), comm_(comm)
{
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &ranks_);
    const std::uint64_t h = analysis_hash(lu_);
    const std::vector<std::uint64_t> all = mpi::allgather(h, comm_);
    for (const std::uint64_t other : all)
        if (other != h)
            throw Error("the sparse LU analyses differ between the MPI ranks (each rank must analyse the same "
                        "matrix with the same options)");

    const global_index ns = static_cast<global_index>(lu_.sn_rows_.size());
    local_offset_.assign(ns, -1);
    std::size_t total = 0;
    for (global_index s = 0; s < ns; ++s) {
        if (owner(s) != rank_) continue;
        const global_index nc = lu_.sn_begin_[s + 1] - lu_.sn_begin_[s];
        const global_index m = static_cast<global_index>(lu_.sn_rows_[s].size());
        local_offset_[s] = static_cast<global_index>(total);
        total += static_cast<std::size_t>((nc + m) * nc + nc * m);
    }
    panels_.resize(total);

    // Assembly lists of the owned supernodes (SparseLU's destinations of A's entries).
    const CsrMatrix& a = lu_.a_;
    const global_index n = lu_.n_;
    std::vector<char> has_diag(n, 0);
    std::vector<std::vector<std::pair<global_index, global_index>>> lists(ns);
    for (global_index i = 0; i < n; ++i)
        for (global_index q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) {
            const bool diag = a.cols[q] == i;
            if (diag) has_diag[lu_.iperm_[i]] = 1;
            const global_index s = lu_.entry_sn_[q];
            if (owner(s) != rank_) continue;
            const global_index nc = lu_.sn_begin_[s + 1] - lu_.sn_begin_[s];
            const global_index m = static_cast<global_index>(lu_.sn_rows_[s].size());
            lists[s].emplace_back(diag ? -1 - q : q, lu_.entry_offset_[q] + (lu_.entry_in_u_[q] ? (nc + m) * nc : 0));
        }
    for (global_index p = 0; p < n; ++p) {
        const global_index s = lu_.sn_of_[p];
        if (has_diag[p] || owner(s) != rank_) continue;
        const global_index ld = lu_.sn_begin_[s + 1] - lu_.sn_begin_[s] + static_cast<global_index>(lu_.sn_rows_[s].size());
        const global_index r = p - lu_.sn_begin_[s];
        lists[s].emplace_back(-1 - a.nnz() - p, r + r * ld);
    }
    asm_ptr_.assign(ns + 1, 0);
    for (global_index s = 0; s < ns; ++s) {
        asm_ptr_[s + 1] = asm_ptr_[s] + static_cast<global_index>(lists[s].size());
        for (const auto& [e, off] : lists[s]) {
            asm_entry_.push_back(e);
            asm_offset_.push_back(off);
        }
    }
}

// The part of step k's Schur update that lands in the supernodes this rank owns: for target t
// with rows R[g0:g1) of R_k, the L-side block (rows R[g0:], columns R_t) and the U-side block
// (rows R_t, columns R[g1:]); together over all t they are the m x m update of one rank.
void DistributedLU::update_targets(global_index k, const complex_double* pk)
{
    const auto& rows = lu_.sn_rows_[k];
    const global_index m = static_cast<global_index>(rows.size());
    const global_index nc = lu_.sn_begin_[k + 1] - lu_.sn_begin_[k];
    const complex_double* lbelow = pk + nc;               // m x nc, ld nc + m
    const complex_double* ucols = pk + (nc + m) * nc;     // nc x m, ld nc
    for (global_index g0 = 0; g0 < m;) {
        const global_index t = lu_.sn_of_[rows[g0]];
        const global_index tb = lu_.sn_begin_[t], te = lu_.sn_begin_[t + 1], tnc = te - tb;
        global_index g1 = g0;
        while (g1 < m && rows[g1] < te) ++g1;
        if (owner(t) != rank_) {
            g0 = g1;
            continue;
        }
        const auto& trows = lu_.sn_rows_[t];
        const global_index ld = tnc + static_cast<global_index>(trows.size());
        complex_double* lt = panel(t);
        const global_index mm = m - g0, w = g1 - g0;
        work_.resize(static_cast<std::size_t>(mm * w));
        cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mm), static_cast<int>(w),
                    static_cast<int>(nc), &kOne, lbelow + g0, static_cast<int>(nc + m), ucols + g0 * nc,
                    static_cast<int>(nc), &kZero, work_.data(), static_cast<int>(mm));
        pos_.resize(static_cast<std::size_t>(mm));
        std::size_t walk = 0;
        for (global_index i = g0; i < m; ++i) {
            if (rows[i] < te) { pos_[i - g0] = rows[i] - tb; continue; }
            while (walk < trows.size() && trows[walk] < rows[i]) ++walk;
            TOPOKPM_REQUIRE(walk < trows.size() && trows[walk] == rows[i], "update row ", rows[i], " outside supernode ", t);
            pos_[i - g0] = tnc + static_cast<global_index>(walk);
        }
        for (global_index j = g0; j < g1; ++j) {
            complex_double* dst = lt + (rows[j] - tb) * ld;
            const complex_double* src = work_.data() + (j - g0) * mm;
            for (global_index i = 0; i < mm; ++i) dst[pos_[i]] -= src[i];
        }
        if (g1 < m) {
            const global_index w2 = m - g1;
            work_.resize(static_cast<std::size_t>(w * w2));
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(w), static_cast<int>(w2),
                        static_cast<int>(nc), &kOne, lbelow + g0, static_cast<int>(nc + m), ucols + g1 * nc,
                        static_cast<int>(nc), &kZero, work_.data(), static_cast<int>(w));
            complex_double* ut = lt + ld * tnc;
            walk = 0;
            for (global_index j = g1; j < m; ++j) {
                while (walk < trows.size() && trows[walk] < rows[j]) ++walk;
                TOPOKPM_REQUIRE(walk < trows.size() && trows[walk] == rows[j], "update column ", rows[j],
                                " outside supernode ", t);
                complex_double* dst = ut + static_cast<global_index>(walk) * tnc;
                const complex_double* src = work_.data() + (j - g1) * w;
                for (global_index i = g0; i < g1; ++i) dst[rows[i] - tb] -= src[i - g0];
            }
        }
        g0 = g1;
    }
}

FactorReport DistributedLU::factorize(complex_double z, const FactorOptions& options)
{
    TOPOKPM_USER_REQUIRE(options.pivot_scale >= 0.0 && std::isfinite(options.pivot_scale), "{pivot_scale} = ",
                         options.pivot_scale, " must be finite and >= 0");
    TOPOKPM_USER_REQUIRE(options.halo.accelerator == Accelerator::none, "{accelerator}: the HALO split runs within one "
                         "process; the factorization across ranks is host only");
    TOPOKPM_USER_REQUIRE(std::isfinite(z.real()) && std::isfinite(z.imag()), "{shift} = ", z, " must be finite");
    const auto t0 = std::chrono::steady_clock::now();
    factored_ = false;
    const CsrMatrix& a = lu_.a_;
    const global_index n = lu_.n_;
    const global_index ns = static_cast<global_index>(lu_.sn_rows_.size());
    std::fill(panels_.begin(), panels_.end(), complex_double(-0.0, -0.0));

    // ||A - zI||_1 and A's finiteness, on every rank from its replicated copy (same result).
    std::vector<double> colsum(n, 0.0);
    std::vector<complex_double> diag(n, kZero);
    for (global_index i = 0; i < n; ++i)
        for (global_index q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) {
            const complex_double v = a.values[q];
            if (!std::isfinite(v.real()) || !std::isfinite(v.imag()))
                throw NumericalError(detail::concat("matrix entry (", i, ", ", a.cols[q], ") = ", v, " is not finite"));
            if (a.cols[q] == i) diag[i] = v;
            else colsum[a.cols[q]] += std::abs(v);
        }
    double norm1 = 0.0;
    for (global_index i = 0; i < n; ++i) norm1 = std::max(norm1, colsum[i] + std::abs(diag[i] - z));
    FactorReport report;
    report.norm1 = norm1;
    report.pivot_threshold = options.pivot_scale * norm1;

    global_index replaced = 0;
    for (global_index k = 0; k < ns; ++k) {
        const global_index nc = lu_.sn_begin_[k + 1] - lu_.sn_begin_[k];
        const global_index m = static_cast<global_index>(lu_.sn_rows_[k].size());
        const std::size_t size = static_cast<std::size_t>((nc + m) * nc + nc * m);
        const bool mine = owner(k) == rank_;
        complex_double status = kZero;
        if (mine) {
            complex_double* pk = panel(k);
            for (global_index e = asm_ptr_[k]; e < asm_ptr_[k + 1]; ++e) {
                const global_index q = asm_entry_[e];
                complex_double v;
                if (q >= 0) v = a.values[q];
                else if (-1 - q < a.nnz()) v = a.values[-1 - q] - z;
                else v = kZero - z;
                pk[asm_offset_[e]] += v;
            }
            try {
                lu_.factor_panel(k, pk, report.pivot_threshold, replaced);
            } catch (const NumericalError&) {
                status = kOne;  // every rank throws below, after the broadcast
            }
        }
        const complex_double* pk = mine ? panel(k) : nullptr;
        if (ranks_ > 1) {
            step_.resize(size + 1);
            if (mine) {
                std::copy_n(panel(k), size, step_.data());
                step_[size] = status;
            }
            bcast(step_.data(), size + 1, owner(k), comm_);
            status = step_[size];
            if (!mine) pk = step_.data();
        }
        if (status != kZero)
            throw NumericalError(detail::concat("zero pivot in the sparse LU with static pivoting disabled "
                                                "({pivot_scale} = 0), supernode ", k));
        update_targets(k, pk);
    }
    report.tiny_pivots = mpi::allreduce_sum(static_cast<std::int64_t>(replaced), comm_);
    shift_ = z;
    factored_ = true;
    report.seconds = mpi::allreduce_max(seconds_since(t0), comm_);
    return report;
}

// v <- (A - zI)^-1 v in place (original order), n x nrhs, the same on every rank.
void DistributedLU::lu_solve(std::vector<complex_double>& v, int nrhs) const
{
    const global_index n = lu_.n_;
    const global_index ns = static_cast<global_index>(lu_.sn_rows_.size());
    const auto& perm = lu_.perm_;
    std::vector<complex_double> y(static_cast<std::size_t>(n * nrhs));
    for (int c = 0; c < nrhs; ++c)
        for (global_index p = 0; p < n; ++p) y[p + c * n] = v[perm[p] + c * n];
    std::vector<complex_double> buf;
    for (global_index s = 0; s < ns; ++s) {  // L y = P v
        const global_index b = lu_.sn_begin_[s];
        const int nc = static_cast<int>(lu_.sn_begin_[s + 1] - b);
        const auto& rows = lu_.sn_rows_[s];
        const int m = static_cast<int>(rows.size());
        buf.resize(static_cast<std::size_t>(nc + m) * nrhs);
        complex_double* ys = buf.data();                                 // nc x nrhs, ld nc
        complex_double* tmp = buf.data() + static_cast<std::size_t>(nc) * nrhs;  // m x nrhs, ld m
        if (owner(s) == rank_) {
            for (int c = 0; c < nrhs; ++c) std::copy_n(&y[b + c * n], nc, ys + c * nc);
            const complex_double* l = panel(s);
            cblas_ztrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, nc, nrhs, &kOne, l, nc + m, ys, nc);
            if (m > 0)
                cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, nrhs, nc, &kOne, l + nc, nc + m, ys, nc, &kZero,
                            tmp, m);
        }
        if (ranks_ > 1) bcast(buf.data(), buf.size(), owner(s), comm_);
        for (int c = 0; c < nrhs; ++c) {
            std::copy_n(ys + c * nc, nc, &y[b + c * n]);
            for (int i = 0; i < m; ++i) y[rows[i] + c * n] -= tmp[i + c * m];
        }
    }
    for (global_index s = ns - 1; s >= 0; --s) {  // U y = y
        const global_index b = lu_.sn_begin_[s];
        const int nc = static_cast<int>(lu_.sn_begin_[s + 1] - b);
        const auto& rows = lu_.sn_rows_[s];
        const int m = static_cast<int>(rows.size());
        buf.resize(static_cast<std::size_t>(nc) * nrhs);
        if (owner(s) == rank_) {
            for (int c = 0; c < nrhs; ++c) std::copy_n(&y[b + c * n], nc, buf.data() + c * nc);
            const complex_double* l = panel(s);
            if (m > 0) {
                std::vector<complex_double> tmp(static_cast<std::size_t>(m) * nrhs);
                for (int c = 0; c < nrhs; ++c)
                    for (int i = 0; i < m; ++i) tmp[i + c * m] = y[rows[i] + c * n];
                cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, nc, nrhs, m, &kMinusOne,
                            l + static_cast<std::size_t>(nc + m) * nc, nc, tmp.data(), m, &kOne, buf.data(), nc);
            }
            cblas_ztrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, nc, nrhs, &kOne, l, nc + m,
                        buf.data(), nc);
        }
        if (ranks_ > 1) bcast(buf.data(), buf.size(), owner(s), comm_);
        for (int c = 0; c < nrhs; ++c) std::copy_n(buf.data() + c * nc, nc, &y[b + c * n]);
    }
    for (int c = 0; c < nrhs; ++c)
        for (global_index p = 0; p < n; ++p) v[perm[p] + c * n] = y[p + c * n];
}

SolveReport DistributedLU::solve(const complex_double* b, complex_double* x, int nrhs, const SolveOptions& options) const
{
    TOPOKPM_REQUIRE(factored_, "solve() before factorize()");
    TOPOKPM_USER_REQUIRE(nrhs >= 0, "{nrhs} = ", nrhs, " must be >= 0");
    TOPOKPM_USER_REQUIRE(options.max_refinement_steps >= 0, "{max_refinement_steps} = ", options.max_refinement_steps,
                         " must be >= 0");
    const auto t0 = std::chrono::steady_clock::now();
    const global_index n = lu_.n_;
    const CsrMatrix& a = lu_.a_;
    SolveReport report;
    if (nrhs == 0 || n == 0) return report;

    // The refinement of SparseLU::solve (componentwise backward error, LAPACK's halving rule),
    // on every rank with the same numbers: its decisions agree without communication.
    std::vector<complex_double> r(static_cast<std::size_t>(n * nrhs));
    auto residual = [&](int c) {
        double berr = 0.0, rmax = 0.0;
        const complex_double* xc = x + c * n;
        for (global_index i = 0; i < n; ++i) {
            complex_double acc = b[i + c * n], dii = -shift_;
            double scale = std::abs(b[i + c * n]);
            for (global_index q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) {
                if (a.cols[q] == i) { dii += a.values[q]; continue; }
                acc -= a.values[q] * xc[a.cols[q]];
                scale += std::abs(a.values[q]) * std::abs(xc[a.cols[q]]);
            }
            acc -= dii * xc[i];
            scale += std::abs(dii) * std::abs(xc[i]);
            r[i + c * n] = acc;
            const double mag = std::abs(acc);
            rmax = std::max(rmax, mag);
            if (mag > 0.0) berr = std::max(berr, scale > 0.0 ? mag / scale : INFINITY);
        }
        return std::make_pair(berr, rmax);
    };
    std::vector<complex_double> v(b, b + n * nrhs);
    lu_solve(v, nrhs);
    std::copy(v.begin(), v.end(), x);
    std::vector<double> berr(nrhs), rnorm(nrhs);
    std::vector<int> steps(nrhs, 0);
    std::vector<char> active(nrhs, 1);
    std::vector<complex_double> previous(static_cast<std::size_t>(n));
    for (int c = 0; c < nrhs; ++c) std::tie(berr[c], rnorm[c]) = residual(c);
    for (int step = 0; step < options.max_refinement_steps; ++step) {
        bool any = false;
        for (int c = 0; c < nrhs; ++c) {
            if (active[c] && berr[c] <= options.target_backward_error) active[c] = 0;
            any = any || active[c];
        }
        if (!any) break;
        std::copy(r.begin(), r.end(), v.begin());
        lu_solve(v, nrhs);
        for (int c = 0; c < nrhs; ++c) {
            if (!active[c]) continue;
            complex_double* xc = x + c * n;
            std::copy(xc, xc + n, previous.begin());
            for (global_index i = 0; i < n; ++i) xc[i] += v[i + c * n];
            const auto [e, rn] = residual(c);
            if (e < berr[c]) {
                ++steps[c];
                if (e > 0.5 * berr[c]) active[c] = 0;
                berr[c] = e;
                rnorm[c] = rn;
            } else {
                std::copy(previous.begin(), previous.end(), xc);
                residual(c);
                active[c] = 0;
            }
        }
    }
    for (int c = 0; c < nrhs; ++c) {
        report.refinement_steps = std::max(report.refinement_steps, steps[c]);
        report.backward_error = std::max(report.backward_error, berr[c]);
        report.residual_norm = std::max(report.residual_norm, rnorm[c]);
    }
    report.seconds = seconds_since(t0);
    return report;
}

std::vector<complex_double> DistributedLU::gather_factors(int root) const
{
    const std::vector<complex_double> all = mpi::gatherv(panels_, root, nullptr, comm_);
    if (rank_ != root) return {};
    // Rank r's panels arrive in supernode order; interleave them into the one-rank layout.
    const global_index ns = static_cast<global_index>(lu_.sn_rows_.size());
    std::vector<std::size_t> start(ranks_ + 1, 0), cursor;
    std::vector<std::size_t> sizes(ns);
    for (global_index s = 0; s < ns; ++s) {
        const global_index nc = lu_.sn_begin_[s + 1] - lu_.sn_begin_[s];
        const global_index m = static_cast<global_index>(lu_.sn_rows_[s].size());
        sizes[s] = static_cast<std::size_t>((nc + m) * nc + nc * m);
        start[owner(s) + 1] += sizes[s];
    }
    for (int r = 0; r < ranks_; ++r) start[r + 1] += start[r];
    cursor.assign(start.begin(), start.end() - 1);
    std::vector<complex_double> out;
    out.reserve(all.size());
    for (global_index s = 0; s < ns; ++s) {
        std::size_t& c = cursor[owner(s)];
        out.insert(out.end(), all.begin() + static_cast<std::ptrdiff_t>(c),
                   all.begin() + static_cast<std::ptrdiff_t>(c + sizes[s]));
        c += sizes[s];
    }
    return out;
}

ShiftInvertSolver solver_of(DistributedLU& lu)
{
    ShiftInvertSolver s;
    s.size = lu.size();
    s.factorize = [&lu](complex_double z, const FactorOptions& o) { return lu.factorize(z, o); };
    s.solve = [&lu](const complex_double* b, complex_double* x, int nrhs) { return lu.solve(b, x, nrhs); };
    s.factor_nonzeros = static_cast<double>(lu.analysis().factor_nonzeros());
    s.factor_memory_bytes = lu.analysis().factor_memory_bytes();
    return s;
}

GreenLdos green_ldos_over_ranks(SparseLU& lu, const std::vector<global_index>& rows,
                                const std::vector<double>& energies, const GreenLdosOptions& options, MPI_Comm comm)
{
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    // Every rank checks every input (green_ldos sees only its own energies).
    (void)green_ldos(lu, rows, {}, options);
    for (const double e : energies) TOPOKPM_USER_REQUIRE(std::isfinite(e), "energy ", e, ": must be finite");
    std::vector<double> mine;
    for (std::size_t k = static_cast<std::size_t>(rank); k < energies.size(); k += static_cast<std::size_t>(ranks))
        mine.push_back(energies[k]);
    const GreenLdos part = green_ldos(lu, rows, mine, options);
    const std::size_t nr = rows.size(), ne = energies.size(), nm = mine.size();
    GreenLdos out;
    out.rho.assign(nr * ne, 0.0);
    for (std::size_t r = 0; r < nr; ++r)
        for (std::size_t j = 0; j < nm; ++j) out.rho[r * ne + rank + j * ranks] = part.rho[r * nm + j];
    if (ranks > 1) mpi::allreduce_sum(out.rho, comm);
    out.tiny_pivots = mpi::allreduce_sum(static_cast<std::int64_t>(part.tiny_pivots), comm);
    out.worst_backward_error = mpi::allreduce_max(part.worst_backward_error, comm);
    out.max_refinement_steps = mpi::allreduce_max(part.max_refinement_steps, comm);
    out.factor_seconds = mpi::allreduce_max(part.factor_seconds, comm);
    out.solve_seconds = mpi::allreduce_max(part.solve_seconds, comm);
    return out;
}

}  // namespace topokpm::sparse_direct
