// sparse-lu-bench: the supernodal sparse LU of numerics/sparse_direct on ti slabs, graphene
// or a Matrix Market file, shifted by z = sigma + i eta: analyse, factor and solve times
// (medians of --reps), fill nnz(L+U), Gflop/s of the factorization (SparseLU::factor_flops() /
// factor time), tiny pivots, backward error after refinement, factor memory; the HALO split
// (--halo); and, in the same run on the same matrix, the peers found at configure time:
// UMFPACK (libsuitesparse-dev), MUMPS (libmumps-dev) and SuperLU_DIST (libsuperlu-dist-dev),
// each with its default ordering. docs/sparse_direct.md.
//
//   sparse-lu-bench [--model ti|graphene] [--lattice 20x20x20[,...]] [--boundary ppp]
//                   [--shift 0.1] [--eta 0] [--disorder 1] [--ordering metis|nd|both]
//                   [--site-size B] [--reps 3] [--matrix-market FILE] [--json FILE]
//                   [--halo model,0,0.5,1] [--device host-memory|cuda] [--gpu N]
//                   [--no-peers] [--analyse-only]
//                   [--max-supernode C] [--relax-columns C] [--parallel-chunk C]
//
// --site-size: rows per site for METIS and the symbolic phase; default 4 for ti (the four
// orbitals share their neighbours), 1 for graphene and Matrix Market files. The lattice
// ordering (nd) always groups a site's (ti) or cell's (graphene) rows.
// --halo: HALO factorizations (HaloOptions), one per entry: "model" (boundary chosen by the
// model) or an accelerator share of the update flops in [0, 1]; each reports its time and its
// speed-up over the all-host factorization (the plain path, same analysis, same run) and the
// split statistics (n_g, bytes moved, lazy reduction time).
// --device: the accelerator of --halo: host-memory (default; the dataflow runtime's host-memory
// device, a CPU worker) or cuda (GPU --gpu, default 0; fails with the reason without one).
// --max-supernode, --relax-columns, --parallel-chunk: AnalyseOptions of ours (default: its
// defaults), for tuning the supernode sizes and the threads' pieces.
// --analyse-only: the analysis only (fill, factor memory, flops), e.g. to find the largest
// lattice whose factors fit a memory budget.
// --json FILE: one object per matrix (an array when several) with n, nnz, fill_nnz,
// analyse_s, factor_s, solve_s, residual (componentwise backward error after refinement),
// tiny_pivots, ... , halo [...] and peers {"umfpack": {...}, "mumps": {...}, "superlu_dist": {...}}.
//
// Threads: our BLAS calls follow OMP_NUM_THREADS (OpenBLAS-openmp), the rest is serial; the
// HALO runs use one host and one accelerator worker with one BLAS thread each. MUMPS and
// SuperLU_DIST run on one MPI rank (the bench calls MPI_Init when either is built).
// Not a test: the numbers depend on the machine and on its load (printed).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "hamiltonians/model.hpp"
#include "numerics/sparse_direct/sparse_lu.hpp"
#include "topokpm/config.hpp"

#ifdef TOPOKPM_BENCH_UMFPACK
#include <umfpack.h>
#endif
#if defined(TOPOKPM_BENCH_MUMPS) || defined(TOPOKPM_BENCH_SUPERLU_DIST)
#include <mpi.h>
#endif
#ifdef TOPOKPM_BENCH_MUMPS
#include <zmumps_c.h>
#endif
#ifdef TOPOKPM_BENCH_SUPERLU_DIST
#include <superlu_zdefs.h>
#endif

using namespace topokpm;
using sparse_direct::CsrMatrix;

namespace {

double now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds of the process (all threads, user + system): CPU / wall over a phase is the
// number of cores a solver kept busy (threads it really used).
double cpu_seconds()
{
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double median(std::vector<double> v)
{
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::vector<std::string> split(const std::string& s, char sep)
{
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, sep);) out.push_back(item);
    return out;
}

std::string load_average()
{
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    in >> a >> b >> c;
    return a + " " + b + " " + c;
}

// A flat JSON object builder (numbers, strings, nested objects/arrays as raw text).
class Json {
public:
    Json& num(const std::string& key, double v)
    {
        char buf[64];
        if (std::isfinite(v)) std::snprintf(buf, sizeof buf, "%.10g", v);
        else std::snprintf(buf, sizeof buf, "null");
        return raw(key, buf);
    }
    Json& str(const std::string& key, const std::string& v) { return raw(key, "\"" + v + "\""); }
    Json& raw(const std::string& key, const std::string& v)
    {
        text_ += (text_.empty() ? "" : ", ") + ("\"" + key + "\": ") + v;
        return *this;
    }
    std::string text() const { return "{" + text_ + "}"; }

private:
    std::string text_;
};

std::string json_array(const std::vector<std::string>& items)
{
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
    return out + "]";
}

// Entries of A - z I in compressed columns (1-based when `one_based`), values packed (re, im).
struct Triplets {
    std::vector<long long> rows, cols;  // coordinate form, 0-based
    std::vector<complex_double> values;
};

Triplets shifted_triplets(const CsrMatrix& a, complex_double z)
{
    Triplets t;
    std::vector<char> has_diag(a.n, 0);
    for (global_index i = 0; i < a.n; ++i)
        for (global_index q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) {
            t.rows.push_back(i);
            t.cols.push_back(a.cols[q]);
            t.values.push_back(a.values[q] - (a.cols[q] == i ? z : complex_double(0.0)));
            if (a.cols[q] == i) has_diag[i] = 1;
        }
    for (global_index i = 0; i < a.n; ++i)
        if (!has_diag[i] && z != complex_double(0.0)) {
            t.rows.push_back(i);
            t.cols.push_back(i);
            t.values.push_back(-z);
        }
    return t;
}

// max_i |b - (A - zI) x|_i / (|A - zI| |x| + |b|)_i: the componentwise backward error of x.
[[maybe_unused]] double backward_error(const CsrMatrix& a, complex_double z, const std::vector<complex_double>& x,
                      const std::vector<complex_double>& b)
{
    const Triplets t = shifted_triplets(a, z);
    std::vector<complex_double> r(b);
    std::vector<double> scale(b.size());
    for (std::size_t i = 0; i < b.size(); ++i) scale[i] = std::abs(b[i]);
    for (std::size_t e = 0; e < t.values.size(); ++e) {
        r[t.rows[e]] -= t.values[e] * x[t.cols[e]];
        scale[t.rows[e]] += std::abs(t.values[e]) * std::abs(x[t.cols[e]]);
    }
    double w = 0.0;
    for (std::size_t i = 0; i < b.size(); ++i)
        if (std::abs(r[i]) > 0.0) w = std::max(w, scale[i] > 0.0 ? std::abs(r[i]) / scale[i] : INFINITY);
    return w;
}

struct PeerResult {
    double analyse_s = 0.0, factor_s = 0.0, solve_s = 0.0, fill_nnz = 0.0, residual = 0.0;
    double cpu_per_wall = 0.0;  // over all its reps (analyse + factor + solve), set by the caller
    std::string json() const
    {
        return Json().num("analyse_s", analyse_s).num("factor_s", factor_s).num("solve_s", solve_s)
            .num("fill_nnz", fill_nnz).num("residual", residual).num("cpu_per_wall", cpu_per_wall).text();
    }
    void print(const char* name) const
    {
        std::printf("  %-14s analyse %8.3f s  factor %8.3f s  solve %7.4f s  nnz(L+U) %11.0f  berr %.1e  cpu/wall %.2f\n",
                    name, analyse_s, factor_s, solve_s, fill_nnz, residual, cpu_per_wall);
    }
};

#ifdef TOPOKPM_BENCH_UMFPACK
// UMFPACK (zl: 64-bit indices, packed complex values) on A - z I in compressed columns.
bool run_umfpack(const CsrMatrix& a, complex_double z, const std::vector<complex_double>& b, int reps, PeerResult& out)
{
    const Triplets t = shifted_triplets(a, z);
    const SuiteSparse_long n = a.n, nz = static_cast<SuiteSparse_long>(t.values.size());
    std::vector<SuiteSparse_long> cp(n + 1, 0), ri(nz);
    std::vector<double> vals(2 * nz);
    for (SuiteSparse_long e = 0; e < nz; ++e) ++cp[t.cols[e] + 1];
    for (SuiteSparse_long j = 0; j < n; ++j) cp[j + 1] += cp[j];
    std::vector<SuiteSparse_long> fill(cp.begin(), cp.end() - 1);
    for (SuiteSparse_long e = 0; e < nz; ++e) {  // rows ascend within a column: t is row-major
        const SuiteSparse_long dst = fill[t.cols[e]]++;
        ri[dst] = t.rows[e];
        vals[2 * dst] = t.values[e].real();
        vals[2 * dst + 1] = t.values[e].imag();
    }
    // the appended diagonals broke the row order of their columns: sort each column
    for (SuiteSparse_long j = 0; j < n; ++j) {
        std::vector<std::pair<SuiteSparse_long, complex_double>> col;
        for (SuiteSparse_long q = cp[j]; q < cp[j + 1]; ++q) col.emplace_back(ri[q], complex_double(vals[2 * q], vals[2 * q + 1]));
        std::sort(col.begin(), col.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        for (SuiteSparse_long q = cp[j]; q < cp[j + 1]; ++q) {
            ri[q] = col[q - cp[j]].first;
            vals[2 * q] = col[q - cp[j]].second.real();
            vals[2 * q + 1] = col[q - cp[j]].second.imag();
        }
    }
    double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
    umfpack_zl_defaults(control);
    std::vector<double> ts, tf, tsol;
    std::vector<complex_double> x(n);
    SuiteSparse_long lnz = 0, unz = 0, nr, nc, nzud;
    for (int r = 0; r < reps; ++r) {
        void *sym = nullptr, *num = nullptr;
        double t0 = now();
        if (umfpack_zl_symbolic(n, n, cp.data(), ri.data(), vals.data(), nullptr, &sym, control, info) != UMFPACK_OK) {
            std::printf("  umfpack: symbolic failed (status %g)\n", info[UMFPACK_STATUS]);
            return false;
        }
        double t1 = now();
        if (umfpack_zl_numeric(cp.data(), ri.data(), vals.data(), nullptr, sym, &num, control, info) != UMFPACK_OK) {
            std::printf("  umfpack: numeric failed (status %g)\n", info[UMFPACK_STATUS]);
            umfpack_zl_free_symbolic(&sym);
            return false;
        }
        double t2 = now();
        umfpack_zl_solve(UMFPACK_A, cp.data(), ri.data(), vals.data(), nullptr,
                         reinterpret_cast<double*>(x.data()), nullptr, reinterpret_cast<const double*>(b.data()),
                         nullptr, num, control, info);
        double t3 = now();
        ts.push_back(t1 - t0);
        tf.push_back(t2 - t1);
        tsol.push_back(t3 - t2);
        umfpack_zl_get_lunz(&lnz, &unz, &nr, &nc, &nzud, num);
        umfpack_zl_free_symbolic(&sym);
        umfpack_zl_free_numeric(&num);
    }
    out.analyse_s = median(ts);
    out.factor_s = median(tf);
    out.solve_s = median(tsol);
    out.fill_nnz = static_cast<double>(lnz + unz - n);  // diagonal once, as SparseLU::factor_nonzeros()
    out.residual = backward_error(a, z, x, b);
    return true;
}
#endif

#ifdef TOPOKPM_BENCH_MUMPS
// MUMPS (complex double, unsymmetric, host works, one MPI rank, its default ordering and
// iterative-refinement settings) on A - z I in coordinate form.
bool run_mumps(const CsrMatrix& a, complex_double z, const std::vector<complex_double>& b, int reps, PeerResult& out)
{
    const Triplets t = shifted_triplets(a, z);
    std::vector<MUMPS_INT> irn(t.values.size()), jcn(t.values.size());
    std::vector<ZMUMPS_COMPLEX> vals(t.values.size());
    for (std::size_t e = 0; e < t.values.size(); ++e) {
        irn[e] = static_cast<MUMPS_INT>(t.rows[e] + 1);
        jcn[e] = static_cast<MUMPS_INT>(t.cols[e] + 1);
        vals[e] = {t.values[e].real(), t.values[e].imag()};
    }
    std::vector<double> ts, tf, tsol;
    std::vector<complex_double> x(b);
    for (int r = 0; r < reps; ++r) {
        ZMUMPS_STRUC_C id{};
        id.comm_fortran = static_cast<MUMPS_INT>(MPI_Comm_c2f(MPI_COMM_WORLD));
        id.par = 1;
        id.sym = 0;
        id.job = -1;
        zmumps_c(&id);
        id.icntl[0] = -1;  // no error, diagnostic, global-information output
        id.icntl[1] = -1;
        id.icntl[2] = -1;
        id.icntl[3] = 0;
        id.n = static_cast<MUMPS_INT>(a.n);
        id.nnz = static_cast<MUMPS_INT8>(vals.size());
        id.irn = irn.data();
        id.jcn = jcn.data();
        id.a = vals.data();
        std::vector<complex_double> rhs(b);
        id.rhs = reinterpret_cast<ZMUMPS_COMPLEX*>(rhs.data());
        double t0 = now();
        id.job = 1;
        zmumps_c(&id);
        double t1 = now();
        if (id.infog[0] >= 0) { id.job = 2; zmumps_c(&id); }
        double t2 = now();
        if (id.infog[0] >= 0) { id.job = 3; zmumps_c(&id); }
        double t3 = now();
        const int status = id.infog[0];
        // INFOG(29): entries in the factors (negative: millions)
        const double entries = id.infog[28] >= 0 ? id.infog[28] : -1e6 * id.infog[28];
        id.job = -2;
        zmumps_c(&id);
        if (status < 0) {
            std::printf("  mumps: failed (INFOG(1) = %d)\n", status);
            return false;
        }
        ts.push_back(t1 - t0);
        tf.push_back(t2 - t1);
        tsol.push_back(t3 - t2);
        out.fill_nnz = entries;
        x = rhs;
    }
    out.analyse_s = median(ts);
    out.factor_s = median(tf);
    out.solve_s = median(tsol);
    out.residual = backward_error(a, z, x, b);
    return true;
}
#endif

#ifdef TOPOKPM_BENCH_SUPERLU_DIST
// SuperLU_DIST (pzgssvx on a 1 x 1 process grid, its default options: equilibration, MC64
// row permutation, METIS/MMD column ordering, static pivoting, iterative refinement).
bool run_superlu_dist(const CsrMatrix& a, complex_double z, const std::vector<complex_double>& b, int reps,
                      PeerResult& out)
{
    const Triplets t = shifted_triplets(a, z);  // row-major; the appended diagonals follow
    const int_t n = static_cast<int_t>(a.n), nz = static_cast<int_t>(t.values.size());
    gridinfo_t grid;
    superlu_gridinit(MPI_COMM_WORLD, 1, 1, &grid);
    std::vector<double> ts, tf, tsol;
    std::vector<complex_double> x(b);
    bool ok = true;
    for (int r = 0; r < reps && ok; ++r) {
        // CSR with sorted columns per row, in SuperLU's allocations (the matrix owns them)
        int_t* rowptr = intMalloc_dist(n + 1);
        int_t* colind = intMalloc_dist(nz);
        doublecomplex* nzval = doublecomplexMalloc_dist(nz);
        std::vector<std::vector<std::pair<int_t, complex_double>>> rows(static_cast<std::size_t>(n));
        for (std::size_t e = 0; e < t.values.size(); ++e) rows[t.rows[e]].emplace_back(static_cast<int_t>(t.cols[e]), t.values[e]);
        rowptr[0] = 0;
        for (int_t i = 0; i < n; ++i) {
            auto& row = rows[i];
            std::sort(row.begin(), row.end(), [](const auto& p, const auto& q) { return p.first < q.first; });
            rowptr[i + 1] = rowptr[i] + static_cast<int_t>(row.size());
            for (std::size_t k = 0; k < row.size(); ++k) {
                colind[rowptr[i] + k] = row[k].first;
                nzval[rowptr[i] + k] = {row[k].second.real(), row[k].second.imag()};
            }
        }
        SuperMatrix A;
        zCreate_CompRowLoc_Matrix_dist(&A, n, n, nz, n, 0, nzval, colind, rowptr, SLU_NR_loc, SLU_Z, SLU_GE);
        superlu_dist_options_t options;
        set_default_options_dist(&options);
        options.PrintStat = NO;
        zScalePermstruct_t perm;
        zLUstruct_t lu;
        zSOLVEstruct_t solve;
        SuperLUStat_t stat;
        zScalePermstructInit(n, n, &perm);
        zLUstructInit(n, &lu);
        PStatInit(&stat);
        std::vector<complex_double> rhs(b);
        double berr = 0.0;
        int info = 0;
        const double t0 = now();
        pzgssvx(&options, &A, &perm, reinterpret_cast<doublecomplex*>(rhs.data()), n, 1, &grid, &lu, &solve, &berr,
                &stat, &info);
        const double total = now() - t0;
        if (info != 0) {
            std::printf("  superlu_dist: pzgssvx info = %d\n", info);
            ok = false;
        } else {
            const double fact = stat.utime[FACT], sol = stat.utime[SOLVE] + stat.utime[REFINE];
            tf.push_back(fact);
            tsol.push_back(sol);
            ts.push_back(total - fact - sol);  // equilibration, orderings, symbolic, distribution
            x = rhs;
            out.fill_nnz = NAN;  // pzgssvx does not return nnz(L+U) (it prints it with PrintStat)
        }
        PStatFree(&stat);
        zDestroy_LU(n, &grid, &lu);
        zScalePermstructFree(&perm);
        zLUstructFree(&lu);
        if (options.SolveInitialized) zSolveFinalize(&options, &solve);
        Destroy_CompRowLoc_Matrix_dist(&A);
    }
    superlu_gridexit(&grid);
    if (!ok) return false;
    out.analyse_s = median(ts);
    out.factor_s = median(tf);
    out.solve_s = median(tsol);
    out.residual = backward_error(a, z, x, b);
    return true;
}
#endif

// Matrix Market `coordinate` real/complex, general/symmetric/hermitian, 1-based.
CsrMatrix read_matrix_market(const std::string& path)
{
    std::ifstream in(path);
    if (!in) { std::fprintf(stderr, "cannot open %s\n", path.c_str()); std::exit(2); }
    std::string line;
    std::getline(in, line);
    std::string lower = line;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find("coordinate") == std::string::npos) { std::fprintf(stderr, "%s: not a coordinate Matrix Market file\n", path.c_str()); std::exit(2); }
    const bool complex_values = lower.find("complex") != std::string::npos;
    const bool hermitian = lower.find("hermitian") != std::string::npos;
    const bool symmetric = lower.find("symmetric") != std::string::npos;
    while (std::getline(in, line) && (line.empty() || line[0] == '%')) {}
    long long nr = 0, nc = 0, nnz = 0;
    std::istringstream(line) >> nr >> nc >> nnz;
    if (nr != nc || nr <= 0) { std::fprintf(stderr, "%s: %lld x %lld is not square\n", path.c_str(), nr, nc); std::exit(2); }
    std::vector<std::map<global_index, complex_double>> rows(static_cast<std::size_t>(nr));
    for (long long e = 0; e < nnz; ++e) {
        long long i, j;
        double re = 0.0, im = 0.0;
        in >> i >> j >> re;
        if (complex_values) in >> im;
        const complex_double v(re, im);
        rows[i - 1][j - 1] += v;
        if (i != j && hermitian) rows[j - 1][i - 1] += std::conj(v);
        else if (i != j && symmetric) rows[j - 1][i - 1] += v;
    }
    CsrMatrix a;
    a.n = nr;
    a.row_ptr.assign(nr + 1, 0);
    for (long long i = 0; i < nr; ++i) {
        for (const auto& [j, v] : rows[i]) {
            a.cols.push_back(j);
            a.values.push_back(v);
        }
        a.row_ptr[i + 1] = a.nnz();
    }
    return a;
}

struct Problem {
    std::string label;
    CsrMatrix a;
    std::vector<std::pair<std::string, sparse_direct::AnalyseOptions>> variants;
};

}  // namespace

int main(int argc, char** argv)
{
    std::string model_name = "ti", lattices = "20x20x20", boundary = "ppp", ordering = "metis", matrix_market,
                json_path, halo_list, halo_device = "host-memory";
    double sigma = 0.1, eta = 0.0, disorder = 1.0;
    int reps = 3, site_size = 0;
    bool peers = true, analyse_only = false;
    int max_supernode = 0, relax_columns = -1, parallel_chunk = 0;  // 0 / -1: AnalyseOptions' defaults
    int gpu = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", arg.c_str()); std::exit(2); }
            return argv[++i];
        };
        if (arg == "--model") model_name = value();
        else if (arg == "--lattice") lattices = value();
        else if (arg == "--boundary") boundary = value();
        else if (arg == "--shift") sigma = std::stod(value());
        else if (arg == "--eta") eta = std::stod(value());
        else if (arg == "--disorder") disorder = std::stod(value());
        else if (arg == "--ordering") ordering = value();
        else if (arg == "--reps") reps = std::max(1, std::stoi(value()));
        else if (arg == "--site-size") site_size = std::stoi(value());
        else if (arg == "--matrix-market") matrix_market = value();
        else if (arg == "--json") json_path = value();
        else if (arg == "--halo") halo_list = value();
        else if (arg == "--device") halo_device = value();
        else if (arg == "--gpu") gpu = std::stoi(value());
        else if (arg == "--no-peers") peers = false;
        else if (arg == "--analyse-only") analyse_only = true;
        else if (arg == "--max-supernode") max_supernode = std::stoi(value());
        else if (arg == "--relax-columns") relax_columns = std::stoi(value());
        else if (arg == "--parallel-chunk") parallel_chunk = std::stoi(value());
        else { std::fprintf(stderr, "unknown argument %s (see the file comment)\n", arg.c_str()); return 2; }
    }
    if (halo_device != "host-memory" && halo_device != "cuda") {
        std::fprintf(stderr, "--device must be host-memory or cuda, got %s\n", halo_device.c_str());
        return 2;
    }
    const sparse_direct::Accelerator accelerator =
        halo_device == "cuda" ? sparse_direct::Accelerator::cuda : sparse_direct::Accelerator::host_memory;
#if defined(TOPOKPM_BENCH_MUMPS) || defined(TOPOKPM_BENCH_SUPERLU_DIST)
    MPI_Init(&argc, &argv);
#endif
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each line as soon as it is measured
    const char* threads = std::getenv("OMP_NUM_THREADS");
    std::printf("sparse-lu-bench: z = %g + %gi, reps %d, OMP_NUM_THREADS=%s, load average %s\n", sigma, eta, reps,
                threads ? threads : "(unset)", load_average().c_str());
    const complex_double z(sigma, eta);

    std::vector<Problem> problems;
    if (!matrix_market.empty()) {
        Problem pr;
        pr.label = matrix_market;
        pr.a = read_matrix_market(matrix_market);
        sparse_direct::AnalyseOptions o;
        o.site_size = site_size > 0 ? site_size : 1;
        pr.variants.emplace_back("metis", o);
        problems.push_back(std::move(pr));
    } else {
        for (const std::string& lat : split(lattices, ',')) {
            const auto ext = split(lat, 'x');
            hamiltonians::ModelParams p;
            p.name = model_name;
            p.nx = std::stoi(ext.at(0));
            p.ny = std::stoi(ext.at(1));
            p.nz = ext.size() > 2 ? std::stoi(ext[2]) : 1;
            p.boundary = boundary;
            p.disorder = disorder;
            const auto model = hamiltonians::make_model(p);
            Problem pr;
            pr.a = sparse_direct::csr_from_rows(*model);
            const int orbitals = model->orbitals_per_site();
            const std::string bc = model->params().boundary;
            pr.label = model_name + " " + lat + " " + bc + " disorder " + std::to_string(disorder);
            if (ordering == "metis" || ordering == "both") {
                sparse_direct::AnalyseOptions o;
                o.site_size = site_size > 0 ? site_size : (model_name == "ti" ? orbitals : 1);
                pr.variants.emplace_back("metis", o);
            }
            if (ordering == "nd" || ordering == "both") {
                sparse_direct::AnalyseOptions o;
                o.ordering = sparse_direct::Ordering::LatticeNestedDissection;
                sparse_direct::LatticeGeometry g;
                g.nx = p.nx; g.ny = p.ny; g.nz = p.nz; g.orbitals = orbitals;
                for (int d = 0; d < static_cast<int>(bc.size()) && d < 3; ++d) g.periodic[d] = bc[d] == 'p';
                o.lattice = g;
                pr.variants.emplace_back("lattice-nd", o);
            }
            problems.push_back(std::move(pr));
        }
    }

    for (Problem& pr : problems)
        for (auto& variant : pr.variants) {
            if (max_supernode > 0) variant.second.max_supernode = max_supernode;
            if (relax_columns >= 0) variant.second.relax_columns = relax_columns;
            if (parallel_chunk > 0) variant.second.parallel_chunk = parallel_chunk;
        }
    std::vector<std::string> json_objects;
    for (const Problem& pr : problems) {
        const CsrMatrix& a = pr.a;
        std::printf("%s: n = %lld, nnz = %lld\n", pr.label.c_str(), static_cast<long long>(a.n),
                    static_cast<long long>(a.nnz()));
        std::mt19937_64 rng(1);
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        std::vector<complex_double> b(a.n), x(a.n);
        for (auto& v : b) v = {u(rng), u(rng)};

        Json top;
        top.str("matrix", pr.label).num("n", static_cast<double>(a.n)).num("nnz", static_cast<double>(a.nnz()))
            .num("shift", sigma).num("eta", eta).num("reps", reps).str("load_average", load_average());
        if (analyse_only) {  // memory and flops of the factorization, known before any numeric work
            for (const auto& [name, opt] : pr.variants) {
                const double t0 = now();
                const sparse_direct::SparseLU lu(a, opt);
                std::printf("  ours/%-9s analyse %8.3f s  nnz(L+U) %11lld  factor memory %.2f GiB  factor flops %.3g\n",
                            name.c_str(), now() - t0, static_cast<long long>(lu.factor_nonzeros()),
                            lu.factor_memory_bytes() / (1 << 30), lu.factor_flops());
            }
            continue;
        }
        std::vector<std::string> variant_json;
        double best_factor = INFINITY;
        for (const auto& [name, opt] : pr.variants) {
            std::vector<double> ta, tf, tsol;
            double factor_cpu = 0.0, factor_wall = 0.0;
            double flops = 0.0, berr = 0.0, rnorm = 0.0, memory = 0.0;
            long long fill = 0, tiny = 0, supernodes = 0;
            int steps = 0;
            std::unique_ptr<sparse_direct::SparseLU> kept;
            for (int r = 0; r < reps; ++r) {
                double t0 = now();
                auto lu = std::make_unique<sparse_direct::SparseLU>(a, opt);
                double t1 = now();
                const double c1 = cpu_seconds();
                const auto fr = lu->factorize(z);
                double t2 = now();
                factor_cpu += cpu_seconds() - c1;
                factor_wall += t2 - t1;
                const auto sr = lu->solve(b.data(), x.data(), 1);
                double t3 = now();
                ta.push_back(t1 - t0);
                tf.push_back(t2 - t1);
                tsol.push_back(t3 - t2);
                flops = lu->factor_flops();
                fill = lu->factor_nonzeros();
                memory = lu->factor_memory_bytes();
                tiny = fr.tiny_pivots;
                berr = sr.backward_error;
                rnorm = sr.residual_norm;
                steps = sr.refinement_steps;
                supernodes = static_cast<long long>(lu->supernode_begin().size()) - 1;
                if (r + 1 == reps) kept = std::move(lu);
            }
            std::printf("  ours/%-9s analyse %8.3f s  factor %8.3f s  solve %7.4f s  nnz(L+U) %11lld  %6.2f Gflop/s"
                        "  supernodes %lld  tiny pivots %lld  berr %.1e (%d refinement steps)  factors %.0f MiB"
                        "  factor cpu/wall %.2f\n",
                        name.c_str(), median(ta), median(tf), median(tsol), fill, flops / median(tf) * 1e-9, supernodes,
                        tiny, berr, steps, memory / (1 << 20), factor_cpu / factor_wall);
            Json v;
            v.str("ordering", name).num("fill_nnz", static_cast<double>(fill)).num("analyse_s", median(ta))
                .num("factor_s", median(tf)).num("solve_s", median(tsol)).num("factor_gflops", flops / median(tf) * 1e-9)
                .num("residual", berr).num("residual_norm", rnorm).num("refinement_steps", steps)
                .num("tiny_pivots", static_cast<double>(tiny)).num("supernodes", static_cast<double>(supernodes))
                .num("factor_memory_bytes", memory).num("factor_cpu_per_wall", factor_cpu / factor_wall);

            // HALO: the --device accelerator at the requested splits, against the all-host
            // factorization on the same analysis in the same run.
            std::vector<std::string> halo_json;
            if (!halo_list.empty()) {
                std::vector<double> base;
                for (int r = 0; r < reps; ++r) base.push_back(kept->factorize(z).seconds);
                {   // untimed: the first HALO factorization of an analysis measures the rates
                    sparse_direct::FactorOptions warm;
                    warm.halo.accelerator = accelerator;
                    warm.halo.gpu = gpu;
                    warm.halo.device_share = 0.0;
                    try {
                        kept->factorize(z, warm);
                    } catch (const std::exception& e) {  // e.g. --device cuda without a GPU: say why
                        std::fprintf(stderr, "sparse-lu-bench: --device %s: %s\n", halo_device.c_str(), e.what());
                        return 1;
                    }
                }
                std::printf("    halo baseline: all-host, no accelerator, factor %8.3f s; accelerator %s\n", median(base),
                            halo_device.c_str());
                for (const std::string& spec : split(halo_list, ',')) {
                    sparse_direct::FactorOptions fo;
                    fo.halo.accelerator = accelerator;
                    fo.halo.gpu = gpu;
                    fo.halo.device_share = spec == "model" ? -1.0 : std::stod(spec);
                    std::vector<double> th;
                    sparse_direct::FactorReport fr;
                    for (int r = 0; r < reps; ++r) {
                        fr = kept->factorize(z, fo);
                        th.push_back(fr.seconds);
                    }
                    const auto sr = kept->solve(b.data(), x.data(), 1);
                    const auto& h = fr.halo;
                    std::printf("    halo %-6s factor %8.3f s (%.2fx all-host)  boundary supernode %lld/%lld  "
                                "accelerator share %.3f  steps %lld: split %lld, accelerator-only %lld, mean n_g/m %.3f  "
                                "to accelerator %.1f MiB (+ shadow filled there %.1f)  back %.1f MiB  lazy reduction %.3f s  "
                                "busy host %.2f s accel %.2f s  predicted %.2f s  zgemm host %.1f accel %.1f Gflop/s  "
                                "berr %.1e\n",
                                spec.c_str(), median(th), median(base) / median(th),
                                static_cast<long long>(h.boundary_supernode), supernodes, h.device_flop_share,
                                static_cast<long long>(h.steps), static_cast<long long>(h.steps_split),
                                static_cast<long long>(h.steps_device_only), h.mean_ng_fraction,
                                h.bytes_to_device / (1 << 20), h.shadow_init_bytes / (1 << 20), h.bytes_to_host / (1 << 20),
                                h.lazy_reduction_seconds, h.host_busy_seconds, h.device_busy_seconds, h.predicted_seconds,
                                h.host_gemm_gflops, h.device_gemm_gflops, sr.backward_error);
                    halo_json.push_back(
                        Json().str("split", spec).str("device", halo_device).num("factor_s", median(th))
                            .num("all_host_factor_s", median(base)).num("speedup_over_all_host", median(base) / median(th))
                            .num("boundary_supernode", static_cast<double>(h.boundary_supernode))
                            .num("device_flop_share", h.device_flop_share).num("steps", static_cast<double>(h.steps))
                            .num("steps_split", static_cast<double>(h.steps_split))
                            .num("steps_device_only", static_cast<double>(h.steps_device_only))
                            .num("mean_ng_fraction", h.mean_ng_fraction).num("bytes_to_device", h.bytes_to_device)
                            .num("shadow_init_bytes", h.shadow_init_bytes).num("bytes_to_host", h.bytes_to_host)
                            .num("lazy_reduction_s", h.lazy_reduction_seconds).num("host_busy_s", h.host_busy_seconds)
                            .num("device_busy_s", h.device_busy_seconds).num("predicted_s", h.predicted_seconds)
                            .num("host_gemm_gflops", h.host_gemm_gflops).num("device_gemm_gflops", h.device_gemm_gflops)
                            .num("host_scatter_gb_s", h.host_scatter_gb_s).num("device_scatter_gb_s", h.device_scatter_gb_s)
                            .num("copy_gb_s", h.copy_gb_s).num("residual", sr.backward_error)
                            .text());
                }
            }
            v.raw("halo", json_array(halo_json));
            variant_json.push_back(v.text());
            if (median(tf) < best_factor) {  // the top-level fields: the fastest ordering
                best_factor = median(tf);
                top.str("ordering", name).num("fill_nnz", static_cast<double>(fill)).num("analyse_s", median(ta))
                    .num("factor_s", median(tf)).num("solve_s", median(tsol))
                    .num("factor_gflops", flops / median(tf) * 1e-9).num("residual", berr)
                    .num("tiny_pivots", static_cast<double>(tiny)).num("factor_memory_bytes", memory)
                    .raw("halo", json_array(halo_json));
            }
        }
        top.raw("variants", json_array(variant_json));

        Json peer_json;
        if (peers) {
            const auto timed = [](auto&& run, PeerResult& r) {
                const double w0 = now(), c0 = cpu_seconds();
                const bool ok = run(r);
                r.cpu_per_wall = (cpu_seconds() - c0) / (now() - w0);
                return ok;
            };
            (void)timed;
#ifdef TOPOKPM_BENCH_UMFPACK
            if (PeerResult r; timed([&](PeerResult& o) { return run_umfpack(a, z, b, reps, o); }, r)) {
                r.print("umfpack");
                peer_json.raw("umfpack", r.json());
            }
#else
            std::printf("  umfpack: not found at configure time (libsuitesparse-dev)\n");
#endif
#ifdef TOPOKPM_BENCH_MUMPS
            if (PeerResult r; timed([&](PeerResult& o) { return run_mumps(a, z, b, reps, o); }, r)) {
                r.print("mumps");
                peer_json.raw("mumps", r.json());
            }
#else
            std::printf("  mumps: not found at configure time (libmumps-dev)\n");
#endif
#ifdef TOPOKPM_BENCH_SUPERLU_DIST
            if (PeerResult r; timed([&](PeerResult& o) { return run_superlu_dist(a, z, b, reps, o); }, r)) {
                r.print("superlu_dist");
                peer_json.raw("superlu_dist", r.json());
            }
#else
            std::printf("  superlu_dist: not found at configure time (libsuperlu-dist-dev)\n");
#endif
        }
        top.raw("peers", peer_json.text());
        json_objects.push_back(top.text());
    }
    if (!json_path.empty()) {
        std::ofstream out(json_path);
        out << (json_objects.size() == 1 ? json_objects[0] : json_array(json_objects)) << "\n";
        if (!out) { std::fprintf(stderr, "cannot write %s\n", json_path.c_str()); return 3; }
        std::printf("wrote %s\n", json_path.c_str());
    }
#if defined(TOPOKPM_BENCH_MUMPS) || defined(TOPOKPM_BENCH_SUPERLU_DIST)
    MPI_Finalize();
#endif
    return 0;
}
