// dense-bench: tile Cholesky / tile QR / TSQR on the dataflow runtime against OpenBLAS's
// zpotrf / zgeqrf (+ zungqr for TSQR's explicit Q) on the same matrix in the same run.
// Gflop/s by the LAWN 41 counts; medians over --reps; the residual of our factor; the
// per-worker busy time. See docs/dense.md for the measured table.
// Under mpirun (more than one rank; potrf or geqrf): the 2-D block-cyclic tile Cholesky /
// QR against ScaLAPACK's pzpotrf / pzgeqrf (when found at configure time) on the same
// matrix, same grid and block size, in the same run.
#include <omp.h>

#include <complex>
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "numerics/dense/block_cyclic.hpp"
#include "numerics/dense/cholesky.hpp"
#include "numerics/dense/qr.hpp"
#include "numerics/dense/tall_skinny.hpp"
#include "numerics/dense/tuning.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/timer.hpp"
#include "runtime/device/device.hpp"
#include "runtime/mpi/environment.hpp"
#include "runtime/topology/topology.hpp"

using namespace topokpm;
using namespace topokpm::numerics::dense;
using Z = complex_double;

namespace {

struct Args {
    std::string op = "potrf";
    long n = 4000;
    int k = 64;
    int tile = 0;  // 0: per-op default
    int ib = 32;
    int threads = 2;
    int reps = 3;
    int device_workers = 0;
    std::string device = "host-memory";  // the device's kind: host-memory or cuda
    int slices = 2;
    int scalapack_tile = 0;  // pzpotrf's / pzgeqrf's block size under mpirun; 0: --tile
    int domains = 2;         // QR under mpirun: tile-row domains of the reduction tree
    int host_width = 0;   // hybrid tiles' B_h; 0: square tiles
    bool tune = false;    // --host-width auto
    std::string placement = "model";  // updates by the runtime's cost model, or "owner"
    bool pin = true;
    bool check = true;
    std::string json;
};

[[noreturn]] void usage(const std::string& why)
{
    std::cerr << "dense-bench: " << why << "\n"
              << "usage: dense-bench --op potrf|geqrf|tsqr --n N [--k K] [--tile B] [--ib IB] [--threads T]\n"
                 "                   [--reps R] [--device-workers D] [--device host-memory|cuda] [--slices S]\n"
                 "                   [--host-width BH|auto] [--placement model|owner]\n"
                 "                   [--no-pin] [--no-check] [--json FILE]\n"
                 "  --n N       matrix order (potrf, geqrf) or rows (tsqr)\n"
                 "  --k K       columns of the tsqr block (default 64)\n"
                 "  --tile B    tile size (potrf/geqrf) or row block (tsqr); default 320 / 256 / 4096\n"
                 "  --ib IB     QR inner blocking (default 32)\n"
                 "  --threads T host workers of ours and OpenBLAS threads of theirs (default 2)\n"
                 "  --device-workers D  workers of the device (default 0: none; 1 with --device cuda)\n"
                 "  --device K  the device: host-memory (CPU kernels on private buffers, default) or cuda\n"
                 "              (GPU 0, cuSOLVER/cuBLAS). With a device the output adds seed 001's metric:\n"
                 "              ours / (host kernel rate x host workers + device kernel rate), the rates of\n"
                 "              the dominant kernel (GEMM / TSMQR) on B x B tiles measured in the same run.\n"
                 "              --slices 1 gives every tile column to the device (GPU only with\n"
                 "              --placement owner)\n"
                 "  --slices S  tile columns per large tile / per device cycle (default 2)\n"
                 "  under mpirun with > 1 rank: potrf or geqrf, the 2-D block-cyclic tile Cholesky / QR\n"
                 "              against ScaLAPACK's pzpotrf / pzgeqrf (when found at configure time) on the\n"
                 "              same grid\n"
                 "  --scalapack-tile NB  under mpirun: ScaLAPACK's block size (default: --tile, which also\n"
                 "              compares the two factors entry by entry)\n"
                 "  --domains D under mpirun, geqrf: tile rows i and i' share a flat chain of the reduction\n"
                 "              tree when i = i' mod D (default 2; the factor depends on D, not on the ranks)\n"
                 "  --host-width BH  potrf/geqrf on hybrid tiles: per large tile of --tile columns, S-1 host\n"
                 "              slices of BH/(S-1) and one device slice; auto: tuned from kernel rates\n"
                 "  --placement P  with a device: model (default) places every update task (TRSM, HERK,\n"
                 "              GEMM; UNMQR, TSMQR) by the runtime's cost model, the earliest estimated\n"
                 "              finish from the kernel rates and the copy rate measured before the timed\n"
                 "              runs; owner: every task on its column's owner (the panels always are)\n";
    std::exit(2);
}

Args parse(int argc, char** argv)
{
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string key = argv[i];
        if (key == "--no-pin") { a.pin = false; continue; }
        if (key == "--no-check") { a.check = false; continue; }
        if (key == "--help" || key == "-h") usage("help");
        if (i + 1 >= argc) usage("missing value for " + key);
        const std::string v = argv[++i];
        try {
            if (key == "--op") a.op = v;
            else if (key == "--n") a.n = std::stol(v);
            else if (key == "--k") a.k = std::stoi(v);
            else if (key == "--tile") a.tile = std::stoi(v);
            else if (key == "--ib") a.ib = std::stoi(v);
            else if (key == "--threads") a.threads = std::stoi(v);
            else if (key == "--reps") a.reps = std::stoi(v);
            else if (key == "--device-workers") a.device_workers = std::stoi(v);
            else if (key == "--device") a.device = v;
            else if (key == "--slices") a.slices = std::stoi(v);
            else if (key == "--scalapack-tile") a.scalapack_tile = std::stoi(v);
            else if (key == "--domains") a.domains = std::stoi(v);
            else if (key == "--host-width") {
                if (v == "auto") a.tune = true;
                else a.host_width = std::stoi(v);
            }
            else if (key == "--placement") a.placement = v;
            else if (key == "--json") a.json = v;
            else usage("unknown option " + key);
        } catch (const std::logic_error&) {
            usage("bad number '" + v + "' for " + key);
        }
    }
    if (a.op != "potrf" && a.op != "geqrf" && a.op != "tsqr") usage("--op must be potrf, geqrf or tsqr");
    if (a.n < 1 || a.k < 1 || a.threads < 1 || a.reps < 1 || a.ib < 1 || a.tile < 0) usage("values must be >= 1");
    if (a.tile == 0) a.tile = a.op == "potrf" ? 320 : a.op == "geqrf" ? 256 : kTsqrBlockRows;
    if (a.domains < 1) usage("--domains must be >= 1");
    if (a.slices < 1 || a.host_width < 0) usage("--slices must be >= 1 and --host-width >= 0");
    if ((a.tune || a.host_width > 0) && a.op == "tsqr") usage("--host-width applies to potrf and geqrf");
    if (a.device != "host-memory" && a.device != "cuda") usage("--device must be host-memory or cuda");
    if (a.device == "cuda" && a.device_workers == 0) a.device_workers = 1;
    if (a.device == "cuda" && a.device_workers != 1) usage("--device cuda is driven by --device-workers 1");
    if (a.device == "cuda" && a.op == "tsqr") usage("--device cuda applies to potrf and geqrf");
    if (a.tune && a.device_workers < 1) usage("--host-width auto needs --device-workers >= 1");
    if (a.placement != "model" && a.placement != "owner") usage("--placement must be model or owner");
    return a;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

std::vector<Z> gaussian(long m, long n, unsigned seed)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0.0, std::sqrt(0.5));
    std::vector<Z> a(std::size_t(m) * n);
    for (auto& x : a) x = {g(rng), g(rng)};
    return a;
}

double frob(const std::vector<Z>& a)
{
    double s = 0;
    for (const Z& x : a) s += std::norm(x);
    return std::sqrt(s);
}

/// ||A - B C||_F with B m x k, C k x n (column major), via zgemm.
double residual(const std::vector<Z>& a, const std::vector<Z>& b, const std::vector<Z>& c, long m, long k, long n,
                CBLAS_TRANSPOSE tc)
{
    std::vector<Z> d = a;
    const Z minus_one(-1), one(1);
    cblas_zgemm(CblasColMajor, CblasNoTrans, tc, m, n, k, &minus_one, b.data(), m, c.data(), tc == CblasNoTrans ? k : n,
                &one, d.data(), m);
    return frob(d);
}

/// Entry (r, c) of the benchmark's HPD matrix, computable on any rank without the rest:
/// pseudo-random Hermitian off-diagonal entries in the unit square, n on the diagonal
/// (strictly diagonally dominant, hence positive definite).
Z hpd_entry(long r, long c, long n)
{
    if (r == c) return Z(double(n), 0.0);
    const bool lower = r > c;
    std::uint64_t x = std::uint64_t(lower ? r : c) * 0x9E3779B97F4A7C15ull + std::uint64_t(lower ? c : r) + 1;
    auto next = [&x] {  // splitmix64
        std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return double((z ^ (z >> 31)) >> 11) * 0x1.0p-53 * 2 - 1;
    };
    const Z v(next(), next());
    return lower ? v : std::conj(v);
}

#ifdef TOPOKPM_HAVE_SCALAPACK
extern "C" {
void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinit(int* context, const char* order, int rows, int cols);
void Cblacs_gridexit(int context);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc,
               const int* icsrc, const int* context, const int* lld, int* info);
void pzpotrf_(const char* uplo, const int* n, Z* a, const int* ia, const int* ja, const int* desc, int* info);
void pzgeqrf_(const int* m, const int* n, Z* a, const int* ia, const int* ja, const int* desc, Z* tau, Z* work,
              const int* lwork, int* info);
}
#endif

double mpi_max(double v)
{
    double m = 0;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

double mpi_sum(double v)
{
    double s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

/// potrf or geqrf across the ranks of MPI_COMM_WORLD: ours (block_cyclic_cholesky /
/// block_cyclic_qr) and ScaLAPACK's pzpotrf / pzgeqrf, alternating, on the same matrix
/// (hpd_entry: Hermitian, diagonally dominant; the cost does not depend on the values).
int run_mpi(const Args& args, const DenseExecution& ex)
{
    const bool qr_op = args.op == "geqrf";
    if (!qr_op && args.op != "potrf")
        throw InputError("dense-bench under mpirun runs --op potrf or geqrf, got " + args.op);
    const long n = args.n;
    const int b = args.tile;
    const ProcessGrid grid = ProcessGrid::of(MPI_COMM_WORLD);
    const bool root = mpi::rank() == 0;
    auto fill_ours = [&](BlockCyclicMatrix<Z>& m) {
        for (int i = 0; i < m.nt(); ++i)
            for (int j = 0; j < m.nt(); ++j) {
                if (!m.mine(i, j)) continue;
                Z* t = m.tile(i, j);
                for (int c = 0; c < m.tile_rows(j); ++c)
                    for (int r = 0; r < m.tile_rows(i); ++r)
                        t[std::size_t(c) * m.tile_rows(i) + r] = hpd_entry(long(i) * b + r, long(j) * b + c, n);
            }
    };
    std::vector<double> ours_s, theirs_s;
    DenseReport last;
    double max_diff = -1;
    BlockCyclicMatrix<Z> m(n, b, grid);
    std::unique_ptr<BlockCyclicQr<Z>> factored;  // the last QR, for the checks
#ifdef TOPOKPM_HAVE_SCALAPACK
    int context = 0;
    Cblacs_get(-1, 0, &context);
    Cblacs_gridinit(&context, "Row", grid.rows, grid.cols);  // rank = row * Pc + col, as ProcessGrid
    const int N = int(n), zero = 0, one = 1, sb = args.scalapack_tile > 0 ? args.scalapack_tile : b;
    const int local_rows = numroc_(&N, &sb, &grid.row, &zero, &grid.rows);
    const int local_cols = numroc_(&N, &sb, &grid.col, &zero, &grid.cols);
    const int lld = std::max(1, local_rows);
    int desc[9], info = 0;
    descinit_(desc, &N, &N, &sb, &sb, &zero, &zero, &context, &lld, &info);
    std::vector<Z> local(std::size_t(lld) * std::max(1, local_cols));
    std::vector<Z> tau(std::size_t(std::max(1, local_cols))), work;
    if (qr_op) {
        int query = -1;
        Z size;
        pzgeqrf_(&N, &N, local.data(), &one, &one, desc, tau.data(), &size, &query, &info);
        work.resize(std::size_t(size.real()) + 1);
    }
    auto global_row = [&](int lr) { return long((lr / sb) * grid.rows + grid.row) * sb + lr % sb; };
    auto global_col = [&](int lc) { return long((lc / sb) * grid.cols + grid.col) * sb + lc % sb; };
#endif
    for (int rep = 0; rep < args.reps; ++rep) {
        if (qr_op) {
            BlockCyclicMatrix<Z> a(n, b, grid);
            fill_ours(a);
            MPI_Barrier(MPI_COMM_WORLD);
            const double start = wall_seconds();
            factored = std::make_unique<BlockCyclicQr<Z>>(
                block_cyclic_qr(std::move(a), ex, MPI_COMM_WORLD, args.domains, &last));
            ours_s.push_back(mpi_max(wall_seconds() - start));
        } else {
            fill_ours(m);
            MPI_Barrier(MPI_COMM_WORLD);
            const double start = wall_seconds();
            last = block_cyclic_cholesky(m, ex, MPI_COMM_WORLD);
            ours_s.push_back(mpi_max(wall_seconds() - start));
        }
#ifdef TOPOKPM_HAVE_SCALAPACK
        for (int lc = 0; lc < local_cols; ++lc)
            for (int lr = 0; lr < local_rows; ++lr)
                local[std::size_t(lc) * lld + lr] = hpd_entry(global_row(lr), global_col(lc), n);
        omp_set_num_threads(args.threads);
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = wall_seconds();
        if (qr_op) {
            int lwork = int(work.size());
            pzgeqrf_(&N, &N, local.data(), &one, &one, desc, tau.data(), work.data(), &lwork, &info);
        } else {
            pzpotrf_("L", &N, local.data(), &one, &one, desc, &info);
        }
        theirs_s.push_back(mpi_max(wall_seconds() - start));
        if (info != 0) throw NumericalError(args.op + " (ScaLAPACK) failed, info " + std::to_string(info));
#endif
    }
#ifdef TOPOKPM_HAVE_SCALAPACK
    const BlockCyclicMatrix<Z>& ours = qr_op ? factored->a : m;
    // Same grid, same blocks: compare this rank's entries of both factors (L; or R, whose
    // rows the two trees may scale by different unit phases, so |R| entry by entry).
    double diff = 0, scale = 0;
    for (int i = 0; i < ours.nt() && sb == b; ++i)
        for (int j = 0; j < ours.nt(); ++j) {
            if (!ours.mine(i, j) || (qr_op ? i > j : i < j)) continue;
            const Z* t = const_cast<BlockCyclicMatrix<Z>&>(ours).tile(i, j);
            for (int c = 0; c < ours.tile_rows(j); ++c)
                for (int r = 0; r < ours.tile_rows(i); ++r) {
                    const long gr = long(i) * b + r, gc = long(j) * b + c;
                    if (qr_op ? gr > gc : gr < gc) continue;
                    const int lr = (i / grid.rows) * b + r, lc = (j / grid.cols) * b + c;
                    const Z x = t[std::size_t(c) * ours.tile_rows(i) + r], y = local[std::size_t(lc) * lld + lr];
                    diff = std::max(diff, qr_op ? std::abs(std::abs(x) - std::abs(y)) : std::abs(x - y));
                    scale = std::max(scale, std::abs(x));
                }
        }
    if (sb == b) max_diff = mpi_max(diff) / mpi_max(scale);
    Cblacs_gridexit(context);
#endif
    // Our QR's backward error ||A - Q R||_F / (n u ||A||_F): Q applied to R (zero below).
    double residual = -1;
    if (qr_op && args.check) {
        BlockCyclicMatrix<Z> c(n, b, grid);
        for (int i = 0; i < c.nt(); ++i)
            for (int j = i; j < c.nt(); ++j) {
                if (!c.mine(i, j)) continue;
                const Z* r = factored->a.tile(i, j);
                Z* t = c.tile(i, j);
                for (int col = 0; col < c.tile_rows(j); ++col)
                    for (int row = 0; row < c.tile_rows(i); ++row)
                        if (long(i) * b + row <= long(j) * b + col)
                            t[std::size_t(col) * c.tile_rows(i) + row] = r[std::size_t(col) * c.tile_rows(i) + row];
            }
        block_cyclic_apply_q(*factored, 'N', c, ex, MPI_COMM_WORLD);
        double d2 = 0, a2 = 0;
        for (int i = 0; i < c.nt(); ++i)
            for (int j = 0; j < c.nt(); ++j) {
                if (!c.mine(i, j)) continue;
                const Z* t = c.tile(i, j);
                for (int col = 0; col < c.tile_rows(j); ++col)
                    for (int row = 0; row < c.tile_rows(i); ++row) {
                        const Z x = hpd_entry(long(i) * b + row, long(j) * b + col, n);
                        d2 += std::norm(x - t[std::size_t(col) * c.tile_rows(i) + row]);
                        a2 += std::norm(x);
                    }
            }
        residual = std::sqrt(mpi_sum(d2) / mpi_sum(a2)) / (double(n) * std::numeric_limits<double>::epsilon() / 2);
    }
    const char* theirs_name = qr_op ? "pzgeqrf" : "pzpotrf";
    const double flops = qr_op ? qr_flops(double(n), double(n)) : cholesky_flops(double(n));
    const double ours_med = median(ours_s), ours_gf = flops / ours_med * 1e-9;
    const double theirs_med = theirs_s.empty() ? 0 : median(theirs_s);
    const double theirs_gf = theirs_s.empty() ? 0 : flops / theirs_med * 1e-9;
    double busy = 0;
    for (double x : last.stats.busy_seconds) busy += x;
    const double busy_max = mpi_max(busy), busy_min = -mpi_max(-busy);
    if (root) {
        std::printf("dense-bench op=%s (mpi) n=%ld tile=%d ib=%d domains=%d scalapack_tile=%d ranks=%d grid=%dx%d "
                    "threads/rank=%d device_workers=%d reps=%d\n",
                    args.op.c_str(), n, b, args.ib, args.domains, args.scalapack_tile > 0 ? args.scalapack_tile : b,
                    mpi::size(), grid.rows, grid.cols, args.threads, args.device_workers, args.reps);
        std::printf("  ours      median %.4f s  %.2f Gflop/s\n", ours_med, ours_gf);
        if (!theirs_s.empty())
            std::printf("  scalapack median %.4f s  %.2f Gflop/s (%s)\n  ratio ours/theirs %.3f   "
                        "max |%s_ours%s - %s_scalapack%s| / max |%s| = %.3g\n",
                        theirs_med, theirs_gf, theirs_name, ours_gf / theirs_gf, qr_op ? "|R" : "L", qr_op ? "|" : "",
                        qr_op ? "|R" : "L", qr_op ? "|" : "", qr_op ? "R" : "L", max_diff);
        else
            std::printf("  (no ScaLAPACK at configure time)\n");
        if (qr_op) std::printf("  residual ||A-QR||_F/(n u ||A||_F) %.3g\n", residual);
        std::printf("  per-rank busy s: max %.3f min %.3f\n", busy_max, busy_min);
        if (!args.json.empty()) {
            std::ofstream out(args.json);
            if (!out) throw IoError("cannot write " + args.json);
            out.precision(10);
            // "lapack_*" is the baseline of the run: here ScaLAPACK's routine (also under "scalapack_*").
            out << "{\"op\": \"" << args.op << "\", \"mpi_ranks\": " << mpi::size() << ", \"grid\": [" << grid.rows
                << ", " << grid.cols << "], \"n\": " << n << ", \"tile\": " << b << ", \"ib\": " << args.ib
                << ", \"domains\": " << args.domains << ", \"threads\": " << args.threads
                << ", \"scalapack_tile\": " << (args.scalapack_tile > 0 ? args.scalapack_tile : b)
                << ", \"reps\": " << args.reps << ", \"baseline\": \"" << theirs_name
                << "\", \"ours_seconds\": " << ours_med << ", \"ours_gflops\": " << ours_gf
                << ", \"scalapack_seconds\": " << theirs_med << ", \"scalapack_gflops\": " << theirs_gf
                << ", \"lapack_gflops\": " << theirs_gf << ", \"ratio\": " << (theirs_gf > 0 ? ours_gf / theirs_gf : 0)
                << ", \"residual\": " << (qr_op ? residual : max_diff) << ", \"factor_difference\": " << max_diff
                << ", \"busy_seconds_max\": " << busy_max << ", \"busy_seconds_min\": " << busy_min << "}\n";
        }
    }
    return 0;
}

/// The execution of `args` (host workers, the device and its kind, s, ib).
DenseExecution execution_of(const Args& args)
{
    DenseExecution ex;
    ex.host_workers = args.threads;
    ex.device_workers = args.device_workers;
    ex.device_kind = args.device == "cuda" ? tasks::DeviceKind::cuda : tasks::DeviceKind::host_memory;
    ex.inner_block = args.ib;
    ex.slices = args.slices;
    return ex;
}

/// With --device cuda and no usable GPU: says so (with the CUDA runtime's reason) and
/// returns false; the seed's GPU metric cannot be measured here.
bool gpu_available(const Args& args)
{
    if (args.device != "cuda") return true;
    std::string why;
    if (device::visible_device_count(&why) > 0) return true;
    std::printf("dense-bench: --device cuda: no GPU here (%s); the seed's metric (ours / (host + GPU kernel "
                "rates)) needs one\n",
                why.c_str());
    return false;
}

int run_one_process(int argc, char** argv)
{
    Args args = parse(argc, argv);
    if (!gpu_available(args)) return 1;
    const double u = std::numeric_limits<double>::epsilon() / 2;
    std::unique_ptr<topology::Topology> topo;
    DenseExecution ex = execution_of(args);
    if (args.pin) {
        topo = std::make_unique<topology::Topology>();
        ex.topology = topo.get();
        ex.host_pus = topo->all_pus();
        ex.device_pus = topo->all_pus();
    }
    int host_width_estimate = 0;
    if (args.tune) {  // seed §3.6 on this machine, before the timed runs
        const double start = wall_seconds();
        const auto search =
            tune_host_width(args.op == "potrf" ? DenseOp::cholesky : DenseOp::qr, args.tile, ex, 64, 4,
                            &host_width_estimate);
        std::printf("tuning B_h (large tile %d, s = %d): estimate %d from kernel rates; probes", args.tile,
                    args.slices, host_width_estimate);
        for (const auto& p : search.probes)
            std::printf(" [B_h %d: host %.3f s, device %.3f s]", p.host_width, p.host_seconds, p.device_seconds);
        std::printf(" -> %d (%.1f s)\n", search.host_width, wall_seconds() - start);
        args.host_width = search.host_width;
    }
    // The kernel rates (and the copy rate): the cost model of the timed runs' placement and
    // the bound of seed 001's metric below, measured now with the same workers.
    KernelRates rates;
    if (args.device_workers > 0 && args.op != "tsqr")
        rates = measure_kernel_rates(args.op == "potrf" ? DenseOp::cholesky : DenseOp::qr, args.tile, ex);
    if (args.placement == "model") ex.rates = rates;
    const long n = args.n;
    const long cols = args.op == "tsqr" ? args.k : n;
    std::vector<Z> a = gaussian(n, cols, 2026);
    if (args.op == "potrf")  // the mpirun path's matrix, O(n^2) to build (X X^H took minutes at n = 8000)
        for (long c = 0; c < n; ++c)
            for (long r = 0; r < n; ++r) a[std::size_t(c) * n + r] = hpd_entry(r, c, n);
    const double flops = args.op == "potrf" ? cholesky_flops(n)
                         : args.op == "geqrf" ? qr_flops(n, n)
                                              : tsqr_lawn41_flops(double(n), double(cols));

    std::vector<double> ours_s, theirs_s, zgemm_s, ours_cpu_s, zgemm_cpu_s;  // wall; process CPU seconds
    double own_flops = 0;  // tsqr: the flops of the kernel calls it made (tsqr_flops), beside LAWN 41's
    std::vector<TsqrPhases> phases;  // tsqr: per repetition
    // TSQR's goal is a fraction of "its flops at the zgemm rate": a square zgemm, timed
    // with the same threads after each repetition.
    constexpr long kZgemmOrder = 1536;
    const Z one(1), zero(0);
    std::vector<Z> gemm_a, gemm_b, gemm_c;
    if (args.op == "tsqr") {
        gemm_a = gaussian(kZgemmOrder, kZgemmOrder, 7);
        gemm_b = gaussian(kZgemmOrder, kZgemmOrder, 8);
        gemm_c.assign(gemm_a.size(), zero);
    }
    DenseReport last_report;
    std::vector<Z> ours_out, r_out;
    for (int rep = 0; rep < args.reps; ++rep) {
        // Ours (the copy into tiles is not timed; LAPACK's copy below is not either).
        const int mb = args.tile, nb = args.op == "tsqr" ? int(cols) : args.tile;
        TileMatrix<Z> t = args.host_width > 0
                              ? TileMatrix<Z>(n, mb, hybrid_widths(cols, args.tile, args.slices, args.host_width))
                              : TileMatrix<Z>(n, cols, mb, nb);
        t.from_column_major(a.data(), n);
        DenseReport report;
        if (args.op == "potrf") {
            report = cholesky(t, ex);
            ours_out.assign(t.storage().size(), 0.0);
            t.to_column_major(ours_out.data(), n);
        } else if (args.op == "geqrf") {
            auto f = qr(std::move(t), ex, &report);
            if (rep == args.reps - 1 && args.check) {
                auto q = form_q(f, ex);
                ours_out.assign(std::size_t(n) * n, 0.0);
                q.to_column_major(ours_out.data(), n);
                r_out.assign(std::size_t(n) * n, 0.0);
                f.a.to_column_major(r_out.data(), n);
            }
        } else {
            const std::clock_t c0 = std::clock();
            auto result = tsqr(t, ex);
            ours_cpu_s.push_back(double(std::clock() - c0) / CLOCKS_PER_SEC);
            report = result.report;
            own_flops = result.flops;
            phases.push_back(result.phases);
            ours_out.assign(std::size_t(n) * cols, 0.0);
            t.to_column_major(ours_out.data(), n);
            r_out = result.r;
        }
        ours_s.push_back(report.seconds);
        last_report = report;

        // Theirs: OpenBLAS with the same number of threads.
        std::vector<Z> b = a;
        omp_set_num_threads(args.threads);
        const double start = wall_seconds();
        if (args.op == "potrf") {
            if (LAPACKE_zpotrf_work(LAPACK_COL_MAJOR, 'L', n, b.data(), n) != 0) throw NumericalError("zpotrf failed");
        } else {
            std::vector<Z> tau(static_cast<std::size_t>(cols));
            Z query;
            LAPACKE_zgeqrf_work(LAPACK_COL_MAJOR, n, cols, b.data(), n, tau.data(), &query, -1);
            std::vector<Z> work(std::size_t(query.real()) + 1);
            LAPACKE_zgeqrf_work(LAPACK_COL_MAJOR, n, cols, b.data(), n, tau.data(), work.data(), lapack_int(work.size()));
            if (args.op == "tsqr") {
                LAPACKE_zungqr_work(LAPACK_COL_MAJOR, n, cols, cols, b.data(), n, tau.data(), &query, -1);
                work.resize(std::size_t(query.real()) + 1);
                LAPACKE_zungqr_work(LAPACK_COL_MAJOR, n, cols, cols, b.data(), n, tau.data(), work.data(),
                                    lapack_int(work.size()));
            }
        }
        theirs_s.push_back(wall_seconds() - start);
        if (args.op == "tsqr") {  // the rate behind the issue's TSQR bound, under this repetition's load
            const double zstart = wall_seconds();
            const std::clock_t c0 = std::clock();
            cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, kZgemmOrder, kZgemmOrder, kZgemmOrder, &one,
                        gemm_a.data(), kZgemmOrder, gemm_b.data(), kZgemmOrder, &zero, gemm_c.data(), kZgemmOrder);
            zgemm_s.push_back(wall_seconds() - zstart);
            zgemm_cpu_s.push_back(double(std::clock() - c0) / CLOCKS_PER_SEC);
        }
    }

    // Backward error of our last factorization, ||A - factors||_F / (n u ||A||_F).
    double res = -1;
    if (args.check) {
        omp_set_num_threads(args.threads);
        if (args.op == "potrf") {
            for (long c = 0; c < n; ++c)
                for (long r = 0; r < c; ++r) ours_out[std::size_t(c) * n + r] = 0.0;
            res = residual(a, ours_out, ours_out, n, n, n, CblasConjTrans);
        } else {
            std::vector<Z> r(std::size_t(cols) * cols, 0.0);
            const long ldr = args.op == "tsqr" ? cols : n;
            for (long c = 0; c < cols; ++c)
                for (long row = 0; row <= c; ++row) r[std::size_t(c) * cols + row] = r_out[std::size_t(c) * ldr + row];
            res = residual(a, ours_out, r, n, cols, cols, CblasNoTrans);
        }
        res /= double(n) * u * frob(a);
    }

    const double ours_med = median(ours_s), theirs_med = median(theirs_s);
    const double ours_gf = flops / ours_med * 1e-9, theirs_gf = flops / theirs_med * 1e-9;
    // Seed 001's metric (its Fig. 10): ours against the upper bound per-core rate x cores +
    // device kernel rate x devices, the dominant kernel's rates (GEMM for potrf, TSMQR for
    // geqrf) on B x B tiles, measured before the timed runs. With --slices 1 and
    // --placement owner the host owns no tile column and runs nothing, so the bound is the
    // device's alone (the GPU-only run); with the cost model the host takes updates anyway.
    const double host_kernel_gf = args.slices > 1 || args.placement == "model" ? rates.host * 1e-9 : 0.0, device_kernel_gf = rates.device * 1e-9;
    const double bound_gf = host_kernel_gf + device_kernel_gf;
    const auto& st = last_report.stats;
    double busy_max = 0, busy_sum = 0;
    for (double b : st.busy_seconds) {
        busy_max = std::max(busy_max, b);
        busy_sum += b;
    }
    const double imbalance = st.busy_seconds.empty() ? 0 : busy_max / (busy_sum / st.busy_seconds.size());
    // The share of the update tasks' flops (the movable ones) the device ran.
    double update_flops = 0, device_update_flops = 0;
    for (std::size_t w = 0; w < st.flops.size(); ++w) {
        update_flops += st.flops[w];
        if (st.worker_device[w] != 0) device_update_flops += st.flops[w];
    }
    const double device_share = update_flops > 0 ? device_update_flops / update_flops : 0.0;
    std::printf("dense-bench op=%s n=%ld%s tile=%d ib=%d threads=%d device_workers=%d slices=%d host_width=%d reps=%d\n",
                args.op.c_str(), n, args.op == "tsqr" ? (" k=" + std::to_string(cols)).c_str() : "", args.tile,
                args.ib, args.threads, args.device_workers, args.slices, args.host_width, args.reps);
    if (args.device_workers > 0)
        std::printf("  device: %s\n", args.device == "cuda" ? device::describe(0).c_str() : "host-memory (CPU threads)");
    std::printf("  ours    median %.4f s  %.2f Gflop/s\n", ours_med, ours_gf);
    std::printf("  openblas median %.4f s  %.2f Gflop/s (%s)\n", theirs_med, theirs_gf,
                args.op == "potrf" ? "zpotrf" : args.op == "geqrf" ? "zgeqrf" : "zgeqrf+zungqr");
    std::printf("  ratio ours/theirs %.3f   residual ||A-F||_F/(n u ||A||_F) %.3g\n", ours_gf / theirs_gf, res);
    const double zgemm_gf = zgemm_s.empty() ? 0.0 : 8.0 * std::pow(double(kZgemmOrder), 3) / median(zgemm_s) * 1e-9;
    // TSQR against the zgemm-rate bound (time of a flop count at the zgemm rate / our time),
    // by two counts: LAWN 41's for the result, and the flops of the kernel calls ours made.
    const double own_gf = own_flops / ours_med * 1e-9;
    if (zgemm_gf > 0)
        std::printf("  zgemm %ld^3 median %.2f Gflop/s. Fraction of the zgemm-rate bound: by LAWN 41 (zgeqrf+zungqr, "
                    "%.4g flop) %.3f; by its own kernel calls (%.4g flop, %.3fx LAWN 41, %.2f Gflop/s) %.3f\n",
                    kZgemmOrder, zgemm_gf, flops, ours_gf / zgemm_gf, own_flops, own_flops / flops, own_gf,
                    own_gf / zgemm_gf);
    // The same per CPU second (all threads): time spent preempted does not count (cache and
    // memory contention with other processes still do).
    const double own_cpu_gf = ours_cpu_s.empty() ? 0.0 : own_flops / median(ours_cpu_s) * 1e-9;
    const double zgemm_cpu_gf =
        zgemm_cpu_s.empty() ? 0.0 : 8.0 * std::pow(double(kZgemmOrder), 3) / median(zgemm_cpu_s) * 1e-9;
    if (zgemm_cpu_gf > 0)
        std::printf("  per CPU second: ours %.2f (own flops), zgemm %.2f Gflop/s: %.3f (ours CPU %.3f s)\n",
                    own_cpu_gf, zgemm_cpu_gf, own_cpu_gf / zgemm_cpu_gf, median(ours_cpu_s));
    if (!phases.empty()) {
        // Each phase's workers' seconds in its task bodies (median over repetitions) and its
        // rate per busy core; the rest of ours x threads is waiting (tree, scheduling, ends).
        const auto phase_median = [&](TsqrPhase TsqrPhases::*ph, double TsqrPhase::*what) {
            std::vector<double> v;
            for (const auto& p : phases) v.push_back((p.*ph).*what);
            return median(v);
        };
        const std::pair<const char*, TsqrPhase TsqrPhases::*> list[] = {{"leaf QR+T", &TsqrPhases::leaf_qr},
                                                                        {"tree TPQRT", &TsqrPhases::tree_qr},
                                                                        {"tree TPMQRT", &TsqrPhases::tree_q},
                                                                        {"leaf Q", &TsqrPhases::leaf_q}};
        double busy = 0, busy_cpu = 0;
        std::printf("  phases (worker wall s / thread CPU s, median; Gflop/s per core by CPU s):\n");
        for (const auto& [name, ph] : list) {
            const double sec = phase_median(ph, &TsqrPhase::seconds), cpu = phase_median(ph, &TsqrPhase::cpu_seconds);
            const double f = (phases.back().*ph).flops;
            busy += sec;
            busy_cpu += cpu;
            std::printf("    %-12s %8.4f / %8.4f s  %.4g flop  %6.2f Gflop/s\n", name, sec, cpu, f,
                        cpu > 0 ? f / cpu * 1e-9 : 0.0);
        }
        std::printf("    (T's flops %.4g of the leaf QR's) busy %.4f / %.4f of %.4f worker s\n",
                    phases.back().leaf_t_flops, busy, busy_cpu, ours_med * args.threads);
    }
    if (bound_gf > 0)
        std::printf("  seed metric: ours %.2f / (host %.2f + %s device %.2f Gflop/s kernel rates) = %.3f of the "
                    "bound\n",
                    ours_gf, host_kernel_gf, args.device.c_str(), device_kernel_gf, ours_gf / bound_gf);
    if (args.device_workers > 0 && args.op != "tsqr")
        std::printf("  placement %s (model: host %.2f, device %.2f Gflop/s, copies %.2f GB/s): the device ran %.3f "
                    "of the update flops\n",
                    args.placement.c_str(), rates.host * 1e-9, rates.device * 1e-9, rates.link * 1e-9, device_share);
    std::printf("  tasks %ld, per-worker busy s:", st.tasks_submitted);
    for (double b : st.busy_seconds) std::printf(" %.3f", b);
    std::printf("  (max/mean %.3f), copies to device %.1f MB, to host %.1f MB, peak device buffers %ld\n", imbalance,
                st.bytes_to_device / 1e6, st.bytes_to_host / 1e6, st.peak_device_buffers);
    if (!args.json.empty()) {
        std::ofstream out(args.json);
        if (!out) throw IoError("cannot write " + args.json);
        out.precision(10);
        out << "{\"op\": \"" << args.op << "\", \"n\": " << n << ", \"k\": " << cols << ", \"tile\": " << args.tile
            << ", \"ib\": " << args.ib << ", \"threads\": " << args.threads
            << ", \"device_workers\": " << args.device_workers
            << ", \"device\": \"" << (args.device_workers > 0 ? args.device : "none") << "\""
            << ", \"host_kernel_gflops\": " << host_kernel_gf << ", \"device_kernel_gflops\": " << device_kernel_gf
            << ", \"bound_gflops\": " << bound_gf
            << ", \"fraction_of_bound\": " << (bound_gf > 0 ? ours_gf / bound_gf : 0.0) << ", \"slices\": " << args.slices
            << ", \"host_width\": " << args.host_width << ", \"host_width_estimate\": " << host_width_estimate
            << ", \"placement\": \"" << args.placement << "\", \"link_gbytes_per_second\": " << rates.link * 1e-9
            << ", \"device_update_flop_share\": " << device_share
            << ", \"peak_device_buffers\": " << st.peak_device_buffers << ", \"reps\": " << args.reps
            << ", \"ours_seconds\": " << ours_med << ", \"lapack_seconds\": " << theirs_med
            << ", \"ours_gflops\": " << ours_gf << ", \"lapack_gflops\": " << theirs_gf
            << ", \"ratio\": " << ours_gf / theirs_gf << ", \"residual\": " << res << ", \"zgemm_gflops\": " << zgemm_gf
            << ", \"lawn41_flops\": " << flops << ", \"own_flops\": " << own_flops
            << ", \"ours_own_flops_gflops\": " << own_gf
            << ", \"zgemm_bound_fraction_lawn41_flops\": " << (zgemm_gf > 0 ? ours_gf / zgemm_gf : 0.0)
            << ", \"zgemm_bound_fraction_own_flops\": " << (zgemm_gf > 0 ? own_gf / zgemm_gf : 0.0)
            << ", \"ours_cpu_seconds\": " << (ours_cpu_s.empty() ? 0.0 : median(ours_cpu_s))
            << ", \"own_flops_per_cpu_second_fraction_of_zgemm\": "
            << (zgemm_cpu_gf > 0 ? own_cpu_gf / zgemm_cpu_gf : 0.0);
        if (!phases.empty()) {  // the last repetition's phases (the printout has the medians)
            const TsqrPhases& p = phases.back();
            out << ", \"phases\": {";
            const char* sep = "";
            for (const auto& [name, ph] : {std::pair{"leaf_qr", &p.leaf_qr}, std::pair{"tree_qr", &p.tree_qr},
                                           std::pair{"tree_q", &p.tree_q}, std::pair{"leaf_q", &p.leaf_q}}) {
                out << sep << "\"" << name << "\": {\"seconds\": " << ph->seconds
                    << ", \"cpu_seconds\": " << ph->cpu_seconds << ", \"flops\": " << ph->flops << "}";
                sep = ", ";
            }
            out << ", \"leaf_t_flops\": " << p.leaf_t_flops << "}";
        }
        out << ", \"busy_seconds\": [";
        for (std::size_t w = 0; w < st.busy_seconds.size(); ++w) out << (w ? ", " : "") << st.busy_seconds[w];
        out << "], \"imbalance\": " << imbalance << "}\n";
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    // Under mpirun (OpenMPI sets OMPI_COMM_WORLD_SIZE) every rank takes part; alone, no MPI.
    const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (world != nullptr && std::atoi(world) > 1) {
        mpi::Environment env(&argc, &argv, mpi::ThreadLevel::funneled);
        return mpi::run_guarded([&] {
            Args args = parse(argc, argv);
            if (!gpu_available(args)) throw ResourceError("--device cuda: no GPU visible");
            run_mpi(args, execution_of(args));
        });
    }
    return run_one_process(argc, argv);
}
