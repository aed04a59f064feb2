#include "numerics/dense/tall_skinny.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <utility>

#include "numerics/base/first_touch.hpp"
#include "numerics/dense/dense_kernels.hpp"
#include "numerics/dense/qr.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::numerics::dense {

using tasks::Access;
using tasks::TaskContext;

namespace {

template <class T>
void check_block(const TileMatrix<T>& a)
{
    TOPOKPM_USER_REQUIRE(a.nt() == 1, "a tall-skinny block needs one tile column (nb = k), got ", a.nt());
    const int k = a.tile_cols(0);
    for (int i = 0; i < a.mt(); ++i)
        TOPOKPM_USER_REQUIRE(a.tile_rows(i) >= k, "every row block needs >= k = ", k, " rows; block ", i, " has ",
                             a.tile_rows(i), " (choose {block_rows} so the last block is not shorter)");
}

// Ids: matrix 0 = the row blocks, 1.. = the small per-block buffers below.
enum Buffer { kBlock = 0, kR = 1, kTreeT = 2, kC = 3 };
tasks::DataId buffer_id(Buffer b, int i) { return tile_id(int(b), i, 0); }

double thread_cpu_seconds()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Flop counts of the complex kernels' shapes (LAWN 41 weights: a multiply-add is 8 real
// flops, an add 2), following the reference LAPACK routines call by call.
constexpr double kMadd = 8, kAdd = 2;
double gemm_count(double m, double n, double k) { return kMadd * m * n * k; }
// Triangle of order t times a t x c block (either side): c t (t +- 1) / 2 multiply-adds.
double trmm_count(double t, double c, bool unit) { return kMadd * c * t * (unit ? t - 1 : t + 1) / 2; }
// xLARFG of length n: the norm of n - 1 entries (4 flops each) and their complex scaling (6).
double larfg_count(double n) { return 10 * std::max(0.0, n - 1); }

// A task body that also records its wall and thread-CPU seconds in *slot (one slot per task).
template <class F>
auto timed(std::pair<double, double>* slot, F body)
{
    return [slot, body](const TaskContext& c) {
        const double t0 = wall_seconds(), c0 = thread_cpu_seconds();
        body(c);
        *slot = {wall_seconds() - t0, thread_cpu_seconds() - c0};
    };
}

// Flops of the QR and of its T, kept apart for the phase profile.
struct LeafCount {
    double qr = 0, t = 0;
};

// xGEQR2 (reflector i: xLARFG, then GEMV and GERC on the n - i - 1 columns right of it) and
// xLARFT (column i of T: GEMV with the i earlier reflectors, TRMV with T); panel_qr does the
// same multiply-adds in fewer passes.
LeafCount geqr2_larft_count(double m, int n)
{
    LeafCount f;
    for (int i = 0; i < n; ++i) {
        f.qr += larfg_count(m - i) + kMadd * 2 * (m - i) * (n - i - 1);
        f.t += kMadd * ((m - i) * i + double(i) * (i + 1) / 2);
    }
    return f;
}

// kernels::cpu::geqrt_recursive(m, n): xGEQRT3's halves, each recursively, the left half's
// reflectors applied to the right (TRMM, GEMM, TRMM, GEMM, TRMM, subtraction), then T's
// off-diagonal block (TRMM, GEMM, 2 TRMM); blocks of <= kGeqrtBaseColumns by panel_qr
// (xGEQR2 + xLARFT's work), which forms V_1^H A_2 and V_1^H V_2 (a TRMM and a GEMM each)
// itself where both halves are its blocks: the same multiply-adds.
LeafCount leaf_qr_count(double m, int n)
{
    if (n <= kernels::cpu::kGeqrtBaseColumns) return geqr2_larft_count(m, n);
    const int n1 = n / 2, n2 = n - n1;
    const LeafCount left = leaf_qr_count(m, n1), right = leaf_qr_count(m - n1, n2);
    LeafCount f;
    f.qr = left.qr + right.qr + trmm_count(n1, n2, true) + gemm_count(n1, n2, m - n1) + trmm_count(n1, n2, false) +
           gemm_count(m - n1, n2, n1) + trmm_count(n1, n2, true) + kAdd * n1 * n2;
    f.t = left.t + right.t + trmm_count(n2, n1, true) + gemm_count(n1, n2, m - n) + trmm_count(n1, n2, false) +
          trmm_count(n2, n1, false);
    return f;
}

// xTPQRT2(m, n, l): column i's reflector has rows 1..p of B (p = m - l + min(l, i)): GEMV and
// GERC on the trailing columns; then T column by column (TRMV on the triangular rows, GEMVs,
// TRMV with T).
double tpqrt2_count(int m, int n, int l)
{
    double f = 0;
    for (int i = 1; i <= n; ++i) {
        const double p = m - l + std::min(l, i);
        f += larfg_count(p + 1) + kMadd * (2 * p + 2) * (n - i);
    }
    for (int i = 2; i <= n; ++i) {
        const double p = std::min(i - 1, l);
        f += kMadd * (p * (p + 1) / 2 + double(m - l) * (i - 1) + double(i - 1 - p) * l + double(i - 1) * i / 2);
    }
    return f;
}

// xTPRFB (left, forward, columnwise) with V m x k whose last l rows are upper trapezoidal, on
// [A (k x n); B (m x n)]: W = A + V^H B, W = T W (or T^H W), A -= W, B -= V W.
double tprfb_count(double m, double n, double k, double l)
{
    const double vb = n * (k * (m - l) + l * (l + 1) / 2);  // multiply-adds of V^H B and of V W
    return kMadd * (2 * vb + n * k * (k + 1) / 2) + kAdd * 2 * n * k;
}

// xTPQRT(k, k, l = k, ib) on [R_i; R_j] (the tree node) and the xTPMQRT that applies it to k
// columns: the block at column i has mb = i + ib - 1 rows of B, its last ib triangular.
// Returns {TPQRT's, TPMQRT's}.
std::pair<double, double> tree_node_count(int k, int ib)
{
    double qr = 0, q = 0;
    for (int i = 1; i <= k; i += ib) {
        const int b = std::min(k - i + 1, ib), mb = std::min(i + b - 1, k), lb = mb - i + 1;
        qr += tpqrt2_count(mb, b, lb);
        if (i + b <= k) qr += tprfb_count(mb, k - i - b + 1, b, lb);
        q += tprfb_count(mb, k, b, lb);  // TPMQRT's block on the k columns of [C_i; C_j]
    }
    return {qr, q};
}

// q_times_top(m, k): TRMM (V_1^H), TRMM (T), GEMM of the m - k rows, TRMM (V_1), subtraction.
double q_times_top_count(double m, int k)
{
    return 2 * trmm_count(k, k, true) + trmm_count(k, k, false) + gemm_count(m - k, k, k) + kAdd * double(k) * k;
}

}  // namespace

TsqrPhases tsqr_phase_flops(const std::vector<int>& block_rows, int k, int ib)
{
    TsqrPhases p;
    for (int m : block_rows) {
        const LeafCount leaf = leaf_qr_count(m, k);
        p.leaf_qr.flops += leaf.qr + leaf.t;
        p.leaf_t_flops += leaf.t;
        p.leaf_q.flops += q_times_top_count(m, k);
    }
    if (block_rows.size() > 1) {
        const double nodes = double(block_rows.size() - 1);
        const auto [qr, q] = tree_node_count(k, std::max(1, std::min(ib, k)));
        p.tree_qr.flops = nodes * qr;
        p.tree_q.flops = nodes * q;
    }
    return p;
}

double tsqr_flops(const std::vector<int>& block_rows, int k, int ib)
{
    return tsqr_phase_flops(block_rows, k, ib).total_flops();
}

double tsqr_lawn41_flops(double rows, double k)
{
    // LAWN 41 xUNGQR(m, n, k) with m = rows, n = k = k; complex: 6 per multiply, 2 per add.
    const double m = rows, n = k;
    const double mults = 2 * m * n * k - (m + n) * k * k + 2 * k * k * k / 3 + 2 * n * k - k * k - 5 * k / 3;
    const double adds = 2 * m * n * k - (m + n) * k * k + 2 * k * k * k / 3 + n * k - m * k + k / 3;
    return qr_flops(rows, k) + 6 * mults + 2 * adds;
}

template <class T>
double cholqr2_rcond_threshold(global_index rows, int k)
{
    const double u = std::numeric_limits<typename T::value_type>::epsilon() / 2;
    return 64.0 * (double(rows) * k + double(k) * (k + 1)) * u;
}

template <class T>
TallSkinnyResult<T> tsqr(TileMatrix<T>& a, const DenseExecution& execution)
{
    check_block(a);
    require_host_addressable(execution, "TSQR");
    const double start = wall_seconds();
    const int k = a.tile_cols(0), mt = a.mt();
    const int ib = std::min(execution.inner_block, k);
    const std::size_t kk = std::size_t(k) * k, tk = std::size_t(ib) * k;
    // Leaves: one k x k block reflector each (geqrt with ib = k), so the leaf's part of Q is
    // one GEMM (q_times_top); the tree keeps the inner block ib. Per block, one k x k slot
    // holds R_i, then (a right child's) the tree's V_i, then C_i, the block's k x k part of
    // tree x [I; 0]; the leaf's T moves into the block's own upper triangle once R_i is out.
    // The slots are written by the tasks before they are read: allocated uninitialized
    // (allocate_pages), so the workers first-touch them and a next call of the same shape
    // reuses the pages, instead of the master zero-filling fresh memory while they wait.
    FirstTouchVector<T> slots((kk + tk) * std::size_t(mt));
    T* const r = slots.data();
    T* const tree_t = r + kk * mt;
    std::vector<T> c_root(kk, T(0));  // C_0 = I: slot 0 keeps the final R
    for (int d = 0; d < k; ++d) c_root[std::size_t(d) * k + d] = T(1);
    // Seconds in each task body, one slot per task (leaves by block, tree nodes by their j).
    std::vector<std::pair<double, double>> leaf_qr_s(mt), tree_qr_s(mt), tree_q_s(mt), leaf_q_s(mt);
    auto runtime = make_runtime(execution);
    const int accelerators = execution.device_workers > 0 ? 1 : 0;
    for (int i = 0; i < mt; ++i) {
        // Row block i and its small buffers share an owner (one device per block).
        const int owner = column_owner(i, execution.slices, accelerators);
        runtime->register_data(buffer_id(kBlock, i), a.tile(i, 0), a.tile_bytes(i, 0), owner);
        runtime->register_data(buffer_id(kR, i), r + kk * i, kk * sizeof(T), owner);
        runtime->register_data(buffer_id(kTreeT, i), tree_t + tk * i, tk * sizeof(T), owner);
    }
    runtime->register_data(buffer_id(kC, 0), c_root.data(), kk * sizeof(T), column_owner(0, execution.slices, accelerators));
    for (int i = 0; i < mt; ++i) {
        const int mi = a.tile_rows(i);
        runtime->submit({timed(&leaf_qr_s[i], [=](const TaskContext& c) {
                             T* blk = c.as<T>(buffer_id(kBlock, i));
                             T* ri = c.as<T>(buffer_id(kR, i));
                             thread_local std::vector<T> leaf_t;
                             leaf_t.resize(kk);
                             kernels::cpu::geqrt_recursive(mi, k, blk, mi, leaf_t.data(), k);
                             for (int col = 0; col < k; ++col)
                                 for (int row = 0; row < k; ++row) {
                                     T& top = blk[row + std::size_t(col) * mi];
                                     const bool upper = row <= col;
                                     ri[row + std::size_t(col) * k] = upper ? top : T(0);
                                     if (upper) top = leaf_t[row + std::size_t(col) * k];
                                 }
                         }),
                         {{buffer_id(kBlock, i), Access::read_write}, {buffer_id(kR, i), Access::overwrite}},
                         1.0});
    }
    // Binary tree: at stride s, R_i (i a multiple of 2s) absorbs R_{i+s}, whose slot keeps V.
    int levels = 0;
    for (int s = 1; s < mt; s *= 2, ++levels)
        for (int i = 0; i + s < mt; i += 2 * s) {
            const int j = i + s;
            runtime->submit({timed(&tree_qr_s[j], [=](const TaskContext& c) {
                                 T* tj = c.as<T>(buffer_id(kTreeT, j));
                                 std::fill_n(tj, tk, T(0));  // TPQRT leaves T's blocks' lower parts
                                 kernels::cpu::tpqrt(k, k, k, ib, c.as<T>(buffer_id(kR, i)), k,
                                                     c.as<T>(buffer_id(kR, j)), k, tj, ib);
                             }),
                             {{buffer_id(kR, i), Access::read_write},
                              {buffer_id(kR, j), Access::read_write},
                              {buffer_id(kTreeT, j), Access::overwrite}},
                             2.0 + levels});
        }
    // Q = leaves * tree * [I; 0]: C_0 = I, then the tree top-down (node (i, j) turns the V in
    // slot j into C_j, and C_i is slot i's, written when i was a right child higher up), then
    // each leaf.
    const auto c_id = [](int i) { return i == 0 ? buffer_id(kC, 0) : buffer_id(kR, i); };
    for (int s = 1 << std::max(0, levels - 1); s >= 1 && levels > 0; s /= 2)
        for (int i = 0; i + s < mt; i += 2 * s) {
            const int j = i + s;
            runtime->submit({timed(&tree_q_s[j], [=](const TaskContext& c) {
                                 T* sj = c.as<T>(buffer_id(kR, j));
                                 thread_local std::vector<T> v;
                                 v.assign(sj, sj + kk);
                                 std::fill_n(sj, kk, T(0));  // C_j: the 0 of [C_i; 0]
                                 kernels::cpu::tpmqrt('N', k, k, k, k, ib, v.data(), k,
                                                      c.as<T>(buffer_id(kTreeT, j)), ib, c.as<T>(c_id(i)), k, sj, k);
                             }),
                             {{c_id(i), Access::read_write},
                              {buffer_id(kR, j), Access::read_write},
                              {buffer_id(kTreeT, j), Access::read}},
                             1.0});
        }
    for (int i = 0; i < mt; ++i) {
        const int mi = a.tile_rows(i);
        runtime->submit({timed(&leaf_q_s[i], [=](const TaskContext& c) {
                             T* blk = c.as<T>(buffer_id(kBlock, i));
                             kernels::cpu::q_times_top(mi, k, blk, mi, blk, mi, c.as<T>(c_id(i)), k);
                         }),
                         {{buffer_id(kBlock, i), Access::read_write}, {c_id(i), Access::read}},
                         0.0});
    }
    // Everything is submitted: each buffer's device copy goes when its last task is done.
    for (int i = 0; i < mt; ++i)
        for (Buffer kind : {kBlock, kR, kTreeT}) runtime->release(buffer_id(kind, i));
    runtime->release(buffer_id(kC, 0));
    runtime->wait_all();
    TallSkinnyResult<T> result;
    result.r.assign(kk, T(0));
    for (int col = 0; col < k; ++col)
        for (int row = 0; row <= col; ++row) result.r[row + std::size_t(col) * k] = r[row + std::size_t(col) * k];
    result.report = {wall_seconds() - start, runtime->stats()};
    std::vector<int> block_rows(mt);
    for (int i = 0; i < mt; ++i) block_rows[i] = a.tile_rows(i);
    result.phases = tsqr_phase_flops(block_rows, k, ib);
    result.flops = result.phases.total_flops();
    for (int i = 0; i < mt; ++i) {
        const auto add = [](TsqrPhase& ph, std::pair<double, double> s) {
            ph.seconds += s.first;
            ph.cpu_seconds += s.second;
        };
        add(result.phases.leaf_qr, leaf_qr_s[i]);
        add(result.phases.tree_qr, tree_qr_s[i]);
        add(result.phases.tree_q, tree_q_s[i]);
        add(result.phases.leaf_q, leaf_q_s[i]);
    }
    return result;
}

#define TOPOKPM_TALL_SKINNY(T)                                                          \
    template TallSkinnyResult<T> tsqr<T>(TileMatrix<T>&, const DenseExecution&);        \
    template double cholqr2_rcond_threshold<T>(global_index, int);
TOPOKPM_TALL_SKINNY(complex_double)
TOPOKPM_TALL_SKINNY(complex_single)

}  // namespace topokpm::numerics::dense
