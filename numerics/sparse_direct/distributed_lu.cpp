// SparseLU's numeric phase and solve across MPI ranks, 1-D supernode-cyclic (see the header).
#include "numerics/sparse_direct/distributed_lu.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>

#include "numerics/dense/block_cyclic.hpp"
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
    const numerics::dense::ProcessGrid grid = numerics::dense::ProcessGrid::of(comm_);
    pr_ = grid.rows;
    pc_ = grid.cols;
    myrow_ = grid.row;
    mycol_ = grid.col;
    mpi::check(MPI_Comm_split(comm_, myrow_, mycol_, &row_comm_), "MPI_Comm_split(row)");
    mpi::check(MPI_Comm_split(comm_, mycol_, myrow_, &col_comm_), "MPI_Comm_split(column)");

    const global_index ns = static_cast<global_index>(lu_.sn_rows_.size());
    l_offset_.assign(ns, -1);
    u_offset_.assign(ns, -1);
    local_offset_.assign(ns, -1);
    std::size_t total = 0;
    for (global_index s = 0; s < ns; ++s) {
        const global_index nc = lu_.sn_begin_[s + 1] - lu_.sn_begin_[s];
        const global_index m = static_cast<global_index>(lu_.sn_rows_[s].size());
        if (s % pc_ == mycol_) {
            l_offset_[s] = static_cast<global_index>(grid_entries_);
            grid_entries_ += static_cast<std::size_t>((nc + m) * nc);
        }
        if (s % pr_ == myrow_) {
            u_offset_[s] = static_cast<global_index>(grid_entries_);
            grid_entries_ += static_cast<std::size_t>(nc * m);
        }
        if (owner(s) == rank_) {
            local_offset_[s] = static_cast<global_index>(total);
            total += static_cast<std::size_t>((nc + m) * nc + nc * m);
        }
    }
    panels_.resize(total);

    // This rank's entries of A: entry (p_i, p_j) belongs to block (sn(p_i), sn(p_j)), assembled
    // at the step of its panel (SparseLU's destinations of A's entries).
    const CsrMatrix& a = lu_.a_;
    const global_index n = lu_.n_;
    auto mine = [&](global_index pi, global_index pj) {
        return lu_.sn_of_[pi] % pr_ == myrow_ && lu_.sn_of_[pj] % pc_ == mycol_;
    };
    std::vector<char> has_diag(n, 0);
    struct Entry { global_index e, offset; char in_u; };
    std::vector<std::vector<Entry>> lists(ns);
    for (global_index i = 0; i < n; ++i)
        for (global_index q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) {
            const bool diag = a.cols[q] == i;
            if (diag) has_diag[lu_.iperm_[i]] = 1;
            if (!mine(lu_.iperm_[i], lu_.iperm_[a.cols[q]])) continue;
            lists[lu_.entry_sn_[q]].push_back({diag ? -1 - q : q, lu_.entry_offset_[q], static_cast<char>(lu_.entry_in_u_[q])});
        }
    for (global_index p = 0; p < n; ++p) {
        if (has_diag[p] || !mine(p, p)) continue;
        const global_index s = lu_.sn_of_[p];
        const global_index ld = lu_.sn_begin_[s + 1] - lu_.sn_begin_[s] + static_cast<global_index>(lu_.sn_rows_[s].size());
        const global_index r = p - lu_.sn_begin_[s];
        lists[s].push_back({-1 - a.nnz() - p, r + r * ld, 0});
    }
    asm_ptr_.assign(ns + 1, 0);
    for (global_index s = 0; s < ns; ++s) {
        asm_ptr_[s + 1] = asm_ptr_[s] + static_cast<global_index>(lists[s].size());
        for (const Entry& e : lists[s]) {
            asm_entry_.push_back(e.e);
            asm_offset_.push_back(e.offset);
            asm_in_u_.push_back(e.in_u);
        }
    }
}

DistributedLU::~DistributedLU()
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;  // MPI already gone (an object outliving MPI_Finalize): nothing to free
    if (row_comm_ != MPI_COMM_NULL) MPI_Comm_free(&row_comm_);
    if (col_comm_ != MPI_COMM_NULL) MPI_Comm_free(&col_comm_);
}

namespace {

// Buffers sized once to the largest step (resize() would zero-fill every growth).
template <class T>
void grow(std::vector<T>& v, std::size_t n)
{
    if (v.size() < n) v.resize(n);
}

// Rows R_k[g0, g1) of step k inside supernode t; `local` is the first position of the group
// in this rank's packed rows (or columns) of R_k.
struct Group {
    global_index t, g0, g1, local;
};

}  // namespace

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
    // Kept between factorizations (another shift reuses the pages).
    grid_panels_.resize(grid_entries_);
    std::fill(grid_panels_.begin(), grid_panels_.end(), complex_double(-0.0, -0.0));

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

    global_index replaced = 0, first_failure = -1;
    std::vector<Group> rgroups, cgroups;
    std::vector<complex_double>&dblock = dblock_, &lbuf = lbuf_, &ubuf = ubuf_, &work = work_;
    std::vector<global_index> pos;
    for (global_index k = 0; k < ns; ++k) {
        const global_index nc = lu_.sn_begin_[k + 1] - lu_.sn_begin_[k];
        const auto& rows = lu_.sn_rows_[k];
        const global_index m = static_cast<global_index>(rows.size()), ld = nc + m;
        const bool in_col = k % pc_ == mycol_, in_row = k % pr_ == myrow_;
        complex_double* lp = in_col ? grid_panels_.data() + l_offset_[k] : nullptr;  // (nc + m) x nc
        complex_double* up = in_row ? grid_panels_.data() + u_offset_[k] : nullptr;  // nc x m
        for (global_index e = asm_ptr_[k]; e < asm_ptr_[k + 1]; ++e) {
            const global_index q = asm_entry_[e];
            complex_double v;
            if (q >= 0) v = a.values[q];
            else if (-1 - q < a.nnz()) v = a.values[-1 - q] - z;
            else v = kZero - z;
            (asm_in_u_[e] ? up : lp)[asm_offset_[e]] += v;
        }
        // R_k's supernode groups: this rank's rows (process row) and columns (process column).
        rgroups.clear();
        cgroups.clear();
        global_index mr = 0, mc = 0;
        for (global_index g0 = 0; g0 < m;) {
            const global_index t = lu_.sn_of_[rows[g0]], te = lu_.sn_begin_[t + 1];
            global_index g1 = g0;
            while (g1 < m && rows[g1] < te) ++g1;
            if (t % pr_ == myrow_) { rgroups.push_back({t, g0, g1, mr}); mr += g1 - g0; }
            if (t % pc_ == mycol_) { cgroups.push_back({t, g0, g1, mc}); mc += g1 - g0; }
            g0 = g1;
        }
        // 1. the diagonal block, factored by its owner, down its process column. A zero pivot
        // (static pivoting off) is remembered and reported by every rank after the loop: the
        // steps go on (with inf/NaN) so that no rank waits in a broadcast another one left.
        const std::size_t dsize = static_cast<std::size_t>(nc * nc);
        const int inc = static_cast<int>(nc);
        grow(dblock, dsize);
        if (in_col && in_row) {
            try {
                lu_.factor_diagonal(k, lp, report.pivot_threshold, replaced);
            } catch (const NumericalError&) {
                if (first_failure < 0) first_failure = k;
            }
            for (global_index c = 0; c < nc; ++c) std::copy_n(lp + c * ld, nc, dblock.data() + c * nc);
        }
        if (in_col && pr_ > 1) bcast(dblock.data(), dsize, static_cast<int>(k % pr_), col_comm_);
        // 2. process column k mod Pc: its L(I, k) = A(I, k) U_kk^-1
        if (in_col)
            for (const Group& g : rgroups)
                cblas_ztrsm(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, static_cast<int>(g.g1 - g.g0),
                            inc, &kOne, dblock.data(), inc, lp + nc + g.g0, static_cast<int>(ld));
        // 3. L(I, k) along the process rows; process row k mod Pr also gets the diagonal block in
        // the same message (for its U TRSM). Nothing is sent where nothing is needed (the sizes
        // are known to the whole row).
        const std::size_t lsize = static_cast<std::size_t>(mr * nc) + (in_row ? dsize : 0);
        grow(lbuf, lsize);
        if (in_col) {
            for (const Group& g : rgroups)
                for (global_index c = 0; c < nc; ++c)
                    std::copy_n(lp + nc + g.g0 + c * ld, g.g1 - g.g0, lbuf.data() + g.local + c * mr);
            if (in_row) std::copy_n(dblock.data(), dsize, lbuf.data() + mr * nc);
        }
        if (pc_ > 1 && lsize > 0) bcast(lbuf.data(), lsize, static_cast<int>(k % pc_), row_comm_);
        // 4. process row k mod Pr: its U(k, J) = L_kk^-1 A(k, J), then down the process columns
        grow(ubuf, static_cast<std::size_t>(nc * mc));
        if (in_row) {
            const complex_double* lkk = lbuf.data() + mr * nc;
            for (const Group& g : cgroups) {
                cblas_ztrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, inc, static_cast<int>(g.g1 - g.g0),
                            &kOne, lkk, inc, up + g.g0 * nc, inc);
                std::copy_n(up + g.g0 * nc, (g.g1 - g.g0) * nc, ubuf.data() + g.local * nc);
            }
        }
        if (pr_ > 1 && mc > 0) bcast(ubuf.data(), static_cast<std::size_t>(nc * mc), static_cast<int>(k % pr_), col_comm_);
        // 5. A(I, J) -= L(I, k) U(k, J) for the blocks this rank owns
        if (mr == 0 || mc == 0) continue;
        grow(work, static_cast<std::size_t>(mr * mc));
        cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mr), static_cast<int>(mc), inc, &kOne,
                    lbuf.data(), static_cast<int>(mr), ubuf.data(), inc, &kZero, work.data(), static_cast<int>(mr));
        for (const Group& b : cgroups)
            for (const Group& r : rgroups) {
                const global_index h = r.g1 - r.g0;
                if (r.g0 >= b.g0) {  // I >= J: the L panel of J
                    const global_index t = b.t, tb = lu_.sn_begin_[t], tnc = lu_.sn_begin_[t + 1] - tb;
                    const auto& trows = lu_.sn_rows_[t];
                    const global_index tld = tnc + static_cast<global_index>(trows.size());
                    grow(pos, static_cast<std::size_t>(h));
                    if (r.t == t) {
                        for (global_index i = 0; i < h; ++i) pos[i] = rows[r.g0 + i] - tb;
                    } else {
                        std::size_t walk = std::lower_bound(trows.begin(), trows.end(), rows[r.g0]) - trows.begin();
                        for (global_index i = 0; i < h; ++i) {
                            while (walk < trows.size() && trows[walk] < rows[r.g0 + i]) ++walk;
                            TOPOKPM_REQUIRE(walk < trows.size() && trows[walk] == rows[r.g0 + i], "update row ",
                                            rows[r.g0 + i], " outside supernode ", t);
                            pos[i] = tnc + static_cast<global_index>(walk);
                        }
                    }
                    complex_double* lt = grid_panels_.data() + l_offset_[t];
                    for (global_index j = b.g0; j < b.g1; ++j) {
                        complex_double* dst = lt + (rows[j] - tb) * tld;
                        const complex_double* src = work.data() + (b.local + j - b.g0) * mr + r.local;
                        for (global_index i = 0; i < h; ++i) dst[pos[i]] -= src[i];
                    }
                } else {  // I < J: the U panel of I
                    const global_index t = r.t, tb = lu_.sn_begin_[t], tnc = lu_.sn_begin_[t + 1] - tb;
                    const auto& trows = lu_.sn_rows_[t];
                    complex_double* ut = grid_panels_.data() + u_offset_[t];
                    std::size_t walk = std::lower_bound(trows.begin(), trows.end(), rows[b.g0]) - trows.begin();
                    for (global_index j = b.g0; j < b.g1; ++j) {
                        while (walk < trows.size() && trows[walk] < rows[j]) ++walk;
                        TOPOKPM_REQUIRE(walk < trows.size() && trows[walk] == rows[j], "update column ", rows[j],
                                        " outside supernode ", t);
                        complex_double* dst = ut + static_cast<global_index>(walk) * tnc;
                        const complex_double* src = work.data() + (b.local + j - b.g0) * mr + r.local;
                        for (global_index i = 0; i < h; ++i) dst[rows[r.g0 + i] - tb] -= src[i];
                    }
                }
            }
    }
    std::int64_t failed = first_failure < 0 ? std::numeric_limits<std::int64_t>::max() : first_failure;
    mpi::check(MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT64_T, MPI_MIN, comm_), "MPI_Allreduce(MPI_MIN)");
    if (failed != std::numeric_limits<std::int64_t>::max())
        throw NumericalError(detail::concat("zero pivot in the sparse LU with static pivoting disabled "
                                            "({pivot_scale} = 0), supernode ", failed));
    redistribute_for_solve();
    report.tiny_pivots = mpi::allreduce_sum(static_cast<std::int64_t>(replaced), comm_);
    shift_ = z;
    factored_ = true;
    report.seconds = mpi::allreduce_max(seconds_since(t0), comm_);
    return report;
}

// Each supernode's panels onto the owner of its diagonal block: the L panels summed down the
// process column, the U panels along the process row, every rank contributing its own blocks
// and exact zeros elsewhere (so the sums are the entries themselves). One reduction per root
// (Pr + Pc in all), each over the concatenated panels of that root's supernodes.
void DistributedLU::redistribute_for_solve()
{
    const global_index ns = static_cast<global_index>(lu_.sn_rows_.size());
    std::vector<complex_double>&part = part_, &sum = sum_;
    auto reduce = [&](int root, int me, MPI_Comm comm, const char* what) {
        TOPOKPM_REQUIRE(part.size() <= static_cast<std::size_t>(INT_MAX), "reduction of ", part.size(), " entries");
        if (part.empty()) return;  // the same on every rank of `comm`: same supernodes
        sum.resize(root == me ? part.size() : 0);
        mpi::check(MPI_Reduce(part.data(), sum.data(), static_cast<int>(part.size()), MPI_C_DOUBLE_COMPLEX, MPI_SUM,
                              root, comm),
                   what);
    };
    // One side: the panels of the supernodes s = root (mod p) whose diagonal block lies in
    // this rank's process column (s = mine (mod q)) for L, or row for U, summed onto rank
    // `root` of `comm` (the diagonal block's owner): L panels ((nc + m) x nc, at panel(s)) or
    // U panels (nc x m, after the L panel). pack(s, root, grid panel, out) sets this rank's
    // entries of panel s in `out` (zeros elsewhere).
    auto gather = [&](bool lower, int p, int me, int q, int mine, MPI_Comm comm, const char* what, auto pack) {
        const std::vector<global_index>& offset = lower ? l_offset_ : u_offset_;
        auto size = [&](global_index s) {
            const global_index nc = lu_.sn_begin_[s + 1] - lu_.sn_begin_[s];
            const global_index m = static_cast<global_index>(lu_.sn_rows_[s].size());
            return static_cast<std::size_t>(lower ? (nc + m) * nc : nc * m);
        };
        auto dest = [&](global_index s) {
            const global_index nc = lu_.sn_begin_[s + 1] - lu_.sn_begin_[s];
            return lower ? panel(s) : panel(s) + (nc + static_cast<global_index>(lu_.sn_rows_[s].size())) * nc;
        };
        if (p == 1) {  // the column (row) is this rank alone: its panels are whole
            for (global_index s = mine; s < ns; s += q) std::copy_n(grid_panels_.data() + offset[s], size(s), dest(s));
            return;
        }
        for (int root = 0; root < p; ++root) {
            part.clear();
            for (global_index s = root; s < ns; s += p) {
                if (s % q != mine) continue;
                const std::size_t base = part.size();
                part.resize(base + size(s), kZero);
                pack(s, root, grid_panels_.data() + offset[s], part.data() + base);
            }
            reduce(root, me, comm, what);
            if (root != me) continue;
            std::size_t at = 0;
            for (global_index s = root; s < ns; s += p) {
                if (s % q != mine) continue;
                std::copy_n(sum.data() + at, size(s), dest(s));
                at += size(s);
            }
        }
    };
    gather(true, pr_, myrow_, pc_, mycol_, col_comm_, "MPI_Reduce(L panels)",
           [&](global_index s, int root, const complex_double* lp, complex_double* out) {
               const global_index nc = lu_.sn_begin_[s + 1] - lu_.sn_begin_[s];
               const auto& rows = lu_.sn_rows_[s];
               const global_index m = static_cast<global_index>(rows.size()), ld = nc + m;
               for (global_index c = 0; c < nc; ++c) {
                   if (root == myrow_) std::copy_n(lp + c * ld, nc, out + c * ld);
                   for (global_index i = 0; i < m; ++i)
                       if (lu_.sn_of_[rows[i]] % pr_ == myrow_) out[nc + i + c * ld] = lp[nc + i + c * ld];
               }
           });
    gather(false, pc_, mycol_, pr_, myrow_, row_comm_, "MPI_Reduce(U panels)",
           [&](global_index s, int, const complex_double* up, complex_double* out) {
               const global_index nc = lu_.sn_begin_[s + 1] - lu_.sn_begin_[s];
               const auto& rows = lu_.sn_rows_[s];
               const global_index m = static_cast<global_index>(rows.size());
               for (global_index j = 0; j < m; ++j)
                   if (lu_.sn_of_[rows[j]] % pc_ == mycol_) std::copy_n(up + j * nc, nc, out + j * nc);
           });
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
    SolveReport report;
    if (nrhs == 0 || n == 0) return report;

    // SparseLU's refinement on every rank with the same numbers: its decisions agree
    // without communication.
    report = lu_.refine(shift_, b, x, nrhs, options, [&](std::vector<complex_double>& v) { lu_solve(v, nrhs); });
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
    out.gmres_solves = static_cast<int>(mpi::allreduce_sum(static_cast<std::int64_t>(part.gmres_solves), comm));
    out.gmres_steps = static_cast<int>(mpi::allreduce_sum(static_cast<std::int64_t>(part.gmres_steps), comm));
    out.worst_backward_error = mpi::allreduce_max(part.worst_backward_error, comm);
    out.worst_error_bound = mpi::allreduce_max(part.worst_error_bound, comm);
    // A rank stopped by options.stop returns normally and joins the sums above; every rank
    // then reports the stop (each checks its own stop(): mpirun forwards a signal to all).
    const bool stopped = mpi::allreduce_max(static_cast<int>(static_cast<std::size_t>(part.energies_done) < nm), comm) != 0;
    out.energies_done = stopped ? static_cast<int>(mpi::allreduce_sum(static_cast<std::int64_t>(part.energies_done), comm))
                                : static_cast<int>(ne);
    out.max_refinement_steps = mpi::allreduce_max(part.max_refinement_steps, comm);
    out.factor_seconds = mpi::allreduce_max(part.factor_seconds, comm);
    out.solve_seconds = mpi::allreduce_max(part.solve_seconds, comm);
    return out;
}

}  // namespace topokpm::sparse_direct
