// eigs-bench: the k lowest (or highest) eigenpairs of one model matrix by ours (kpm-eigs'
// extremal default: block Chebyshev-filtered subspace iteration, numerics/eigs/
// chebyshev_extremal.hpp; "lanczos": our thick-restart Lanczos), and, when found at configure time, by ARPACK (znaupd/zneupd,
// implicitly restarted Arnoldi on the complex Hermitian matrix, 'SR'/'LR') and SLEPc
// (Krylov-Schur, EPS_HEP) in the same process on the same operator: every solver applies H
// through the same Operator (kind free = kpm-eigs' default ti-stencil-cpu, or sell), so the
// comparison is of the eigensolvers. The same k and the same tolerance: ours
// ||H v - lambda v|| <= tol max|E| (models.md §6); ARPACK ||r|| <= tol' |theta| with
// tol' = tol max|E| / max|theta| <= the same absolute bound; SLEPc EPS_CONV_ABS with the
// absolute tolerance. Residuals of every solver's vectors are measured afterwards with the
// same apply (numerics::measured_pairs). Reports the wall time of each solve (median of
// --reps), matvecs, pairs found, the largest residual and the ratio ours / theirs.
//
//   eigs-bench [--model ti] [--lattice 40x40x40] [--extremal lowest:10] [--tolerance 1e-10]
//              [--kind free|sell] [--solvers ours,lanczos,arpack,slepc] [--ncv 0] [--reps 1]
//              [--basis 0] [--block 0] [--json FILE]
//
// --ncv: ARPACK's and SLEPc's basis; 0 = max(2 k + 1, 20) (ARPACK's guideline; SLEPc's
// default is alike). --basis: our Lanczos's, --block: ours (0 = automatic). Threads: OMP_NUM_THREADS for our
// kernels and the shared apply; the BLAS inside ARPACK and SLEPc is OpenBLAS's own setting.
// Not a test: the numbers depend on the machine and its load. docs/eigs.md.
//
// Interior (--window Emin:Emax): every pair in the window by our ChebFD ("chebfd"), and the
// same number of pairs nearest the window's centre by SLEPc Krylov-Schur with shift-invert
// ("slepc-si": STSINVERT, KSPPREONLY + PCLU of the assembled AIJ matrix H - sigma, LU by
// --lu mumps|petsc; SLEPc's convergence test EPS_CONV_ABS on the transformed problem, the
// residuals re-measured with our apply like every solver's). Model options for it:
// --dot-potential V --dot-radius R --dot-period P --dot-depth D --disorder W.
#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "analysis/reconstruct.hpp"
#include "numerics/eigs/chebfd.hpp"
#include "numerics/eigs/chebyshev_extremal.hpp"
#include "numerics/eigs/eigenpairs.hpp"
#include "numerics/eigs/thick_restart_lanczos.hpp"
#include "numerics/lanczos/lanczos.hpp"
#include "numerics/spmmv/operator_factory.hpp"
#include "runtime/base/error.hpp"

#ifdef TOPOKPM_BENCH_ARPACK
extern "C" {
// arpack-ng's C bindings (arpack/arpack.h, LP64: a_int = int), declared with std::complex
// (layout- and ABI-compatible with double _Complex).
void znaupd_c(int* ido, const char* bmat, int n, const char* which, int nev, double tol, std::complex<double>* resid,
              int ncv, std::complex<double>* v, int ldv, int* iparam, int* ipntr, std::complex<double>* workd,
              std::complex<double>* workl, int lworkl, double* rwork, int* info);
void zneupd_c(int rvec, const char* howmny, const int* select, std::complex<double>* d, std::complex<double>* z,
              int ldz, std::complex<double> sigma, std::complex<double>* workev, const char* bmat, int n,
              const char* which, int nev, double tol, std::complex<double>* resid, int ncv, std::complex<double>* v,
              int ldv, int* iparam, int* ipntr, std::complex<double>* workd, std::complex<double>* workl, int lworkl,
              double* rwork, int* info);
}
#endif
#ifdef TOPOKPM_BENCH_SLEPC
#include <slepceps.h>
#endif

using namespace topokpm;
using numerics::EigenPairs;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

/// CPU seconds of the process (all threads): on a shared host a fairer figure than wall time.
double cpu_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Args {
    std::string model = "ti", lattice = "40x40x40", extremal = "lowest:10", kind = "free";
    std::string solvers = "ours,arpack,slepc", json;
    double tolerance = 1e-10;
    int ncv = 0, reps = 1, basis = 0, block = 0;
    std::string window, lu = "mumps";  // interior mode
    hamiltonians::ModelParams model_params;  // dots and disorder (name and lattice from above)
};

struct Result {
    std::string solver;
    bool available = false;
    std::string note;
    std::vector<double> seconds;
    std::vector<double> cpu_seconds;
    std::int64_t matvecs = 0;
    int pairs = 0;
    double worst_residual = 0.0;
    std::vector<double> values;
};

/// y = H x for one vector through the shared operator.
struct Apply {
    const Operator& op;
    BlockVector x, y;
    std::int64_t count = 0;
    explicit Apply(const Operator& o) : op(o), x(o.num_rows(), 1), y(o.num_rows(), 1) {}
    void operator()(const complex_double* in, complex_double* out)
    {
        const global_index n = op.num_rows();
        for (global_index i = 0; i < n; ++i) x(i, 0) = in[i];
        op.apply(x, y, AugmentedOps{1.0, 0.0, 0.0, false}, nullptr);
        for (global_index i = 0; i < n; ++i) out[i] = y(i, 0);
        ++count;
    }
};

/// Runs `solve` reps times, recording each run's wall and CPU seconds, and keeps the last
/// run's pairs (every solver is timed by this one loop).
template <class Solve>
void time_runs(Result& r, int reps, Solve solve)
{
    for (int rep = 0; rep < reps; ++rep) {
        const double t0 = now(), c0 = cpu_now();
        const EigenPairs p = solve(rep);
        r.seconds.push_back(now() - t0);
        r.cpu_seconds.push_back(cpu_now() - c0);
        r.pairs = static_cast<int>(p.values.size());
        r.values = p.values;
        r.worst_residual = p.residuals.empty() ? 0.0 : *std::max_element(p.residuals.begin(), p.residuals.end());
    }
}

#ifdef TOPOKPM_BENCH_ARPACK
/// ARPACK's 'SR' / 'LR' eigenpairs; the vectors' pairs measured with the same operator.
EigenPairs run_arpack(const Operator& op, bool lowest, int nev, int ncv, double tol_rel, std::int64_t& matvecs)
{
    const int n = static_cast<int>(op.num_rows());
    const char* which = lowest ? "SR" : "LR";
    std::vector<std::complex<double>> resid(n), v(static_cast<std::size_t>(n) * ncv), workd(3 * static_cast<std::size_t>(n));
    const int lworkl = 3 * ncv * ncv + 5 * ncv;
    std::vector<std::complex<double>> workl(lworkl);
    std::vector<double> rwork(ncv);
    int iparam[11] = {1, 0, 100000, 1, 0, 0, 1, 0, 0, 0, 0};
    int ipntr[14] = {0};
    int ido = 0, info = 0;
    Apply apply(op);
    for (;;) {
        znaupd_c(&ido, "I", n, which, nev, tol_rel, resid.data(), ncv, v.data(), n, iparam, ipntr, workd.data(),
                 workl.data(), lworkl, rwork.data(), &info);
        if (ido != -1 && ido != 1) break;
        apply(workd.data() + ipntr[0] - 1, workd.data() + ipntr[1] - 1);
    }
    if (info < 0) throw NumericalError(topokpm::detail::concat("ARPACK znaupd info = ", info));
    std::vector<int> select(ncv);
    std::vector<std::complex<double>> d(nev + 1), z(static_cast<std::size_t>(n) * nev), workev(2 * ncv);
    zneupd_c(1, "A", select.data(), d.data(), z.data(), n, std::complex<double>(0.0), workev.data(), "I", n, which, nev,
             tol_rel, resid.data(), ncv, v.data(), n, iparam, ipntr, workd.data(), workl.data(), lworkl, rwork.data(),
             &info);
    if (info != 0) throw NumericalError(topokpm::detail::concat("ARPACK zneupd info = ", info));
    const int found = iparam[4];
    matvecs = apply.count;
    z.resize(static_cast<std::size_t>(n) * found);
    return numerics::measured_pairs(op, z, found);
}
#endif

#ifdef TOPOKPM_BENCH_SLEPC
PetscErrorCode shell_mult(Mat a, Vec x, Vec y)
{
    Apply* apply = nullptr;
    PetscCall(MatShellGetContext(a, &apply));
    const PetscScalar* in = nullptr;
    PetscScalar* out = nullptr;
    PetscCall(VecGetArrayRead(x, &in));
    PetscCall(VecGetArray(y, &out));
    (*apply)(reinterpret_cast<const complex_double*>(in), reinterpret_cast<complex_double*>(out));
    PetscCall(VecRestoreArrayRead(x, &in));
    PetscCall(VecRestoreArray(y, &out));
    return 0;
}

void check(PetscErrorCode e, const char* what)
{
    if (e != 0) throw NumericalError(topokpm::detail::concat("SLEPc ", what, " failed, error ", int(e)));
}

/// The first min(nconv, nev) converged eigenvectors of a solved EPS (n local rows each,
/// column-major), then EPS and matrix destroyed.
std::vector<complex_double> converged_vectors(EPS& eps, Mat& a, PetscInt nconv, int nev, int n)
{
    const int found = static_cast<int>(std::min<PetscInt>(nconv, nev));
    std::vector<complex_double> z(static_cast<std::size_t>(n) * found);
    Vec xr;
    check(MatCreateVecs(a, &xr, nullptr), "MatCreateVecs");
    for (int i = 0; i < found; ++i) {
        PetscScalar kr;
        check(EPSGetEigenpair(eps, i, &kr, nullptr, xr, nullptr), "EPSGetEigenpair");
        const PetscScalar* p = nullptr;
        check(VecGetArrayRead(xr, &p), "VecGetArrayRead");
        std::copy_n(reinterpret_cast<const complex_double*>(p), n, z.begin() + static_cast<std::ptrdiff_t>(i) * n);
        check(VecRestoreArrayRead(xr, &p), "VecRestoreArrayRead");
    }
    check(VecDestroy(&xr), "VecDestroy");
    check(EPSDestroy(&eps), "EPSDestroy");
    check(MatDestroy(&a), "MatDestroy");
    return z;
}

/// SLEPc Krylov-Schur on a shell matrix applying the same operator.
EigenPairs run_slepc(const Operator& op, bool lowest, int nev, int ncv, double tol_abs, std::int64_t& matvecs)
{
    const PetscInt n = static_cast<PetscInt>(op.num_rows());
    Apply apply(op);
    Mat a;
    EPS eps;
    check(MatCreateShell(PETSC_COMM_SELF, n, n, n, n, &apply, &a), "MatCreateShell");
    check(MatShellSetOperation(a, MATOP_MULT, reinterpret_cast<void (*)(void)>(shell_mult)), "MatShellSetOperation");
    check(EPSCreate(PETSC_COMM_SELF, &eps), "EPSCreate");
    check(EPSSetOperators(eps, a, nullptr), "EPSSetOperators");
    check(EPSSetProblemType(eps, EPS_HEP), "EPSSetProblemType");
    check(EPSSetType(eps, EPSKRYLOVSCHUR), "EPSSetType");
    check(EPSSetWhichEigenpairs(eps, lowest ? EPS_SMALLEST_REAL : EPS_LARGEST_REAL), "EPSSetWhichEigenpairs");
    check(EPSSetDimensions(eps, nev, ncv, PETSC_DEFAULT), "EPSSetDimensions");
    check(EPSSetTolerances(eps, tol_abs, 100000), "EPSSetTolerances");
    check(EPSSetConvergenceTest(eps, EPS_CONV_ABS), "EPSSetConvergenceTest");
    check(EPSSolve(eps), "EPSSolve");
    PetscInt nconv = 0;
    check(EPSGetConverged(eps, &nconv), "EPSGetConverged");
    const std::vector<complex_double> z = converged_vectors(eps, a, nconv, nev, n);
    const int found = static_cast<int>(z.size() / std::max<std::size_t>(n, 1));
    matvecs = apply.count;
    return numerics::measured_pairs(op, z, found);
}

/// SLEPc Krylov-Schur with shift-invert on the assembled matrix: the nev eigenpairs
/// nearest sigma; `solves` counts the applications of (H - sigma)^-1, `factor_seconds`
/// the setup (assembly excluded: EPSSetUp, i.e. the ordering and LU factorization).
EigenPairs run_slepc_sinvert(const Operator& op, const RowSource& rows, double sigma, int nev, int ncv, double tol_abs,
                             const std::string& lu, std::int64_t& solves, double& factor_seconds)
{
    const PetscInt n = static_cast<PetscInt>(rows.num_rows());
    const int width = rows.max_row_length();
    Mat a;
    check(MatCreateSeqAIJ(PETSC_COMM_SELF, n, n, width, nullptr, &a), "MatCreateSeqAIJ");
    std::vector<global_index> cols(width);
    std::vector<complex_type> vals(width);
    std::vector<PetscInt> pcols(width);
    for (PetscInt r = 0; r < n; ++r) {
        const int len = rows.row(r, cols.data(), vals.data());
        for (int j = 0; j < len; ++j) pcols[j] = static_cast<PetscInt>(cols[j]);
        check(MatSetValues(a, 1, &r, len, pcols.data(), reinterpret_cast<const PetscScalar*>(vals.data()), INSERT_VALUES),
              "MatSetValues");
    }
    check(MatAssemblyBegin(a, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
    check(MatAssemblyEnd(a, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
    EPS eps;
    ST st;
    KSP ksp;
    PC pc;
    check(EPSCreate(PETSC_COMM_SELF, &eps), "EPSCreate");
    check(EPSSetOperators(eps, a, nullptr), "EPSSetOperators");
    check(EPSSetProblemType(eps, EPS_HEP), "EPSSetProblemType");
    check(EPSSetType(eps, EPSKRYLOVSCHUR), "EPSSetType");
    check(EPSSetTarget(eps, sigma), "EPSSetTarget");
    check(EPSSetWhichEigenpairs(eps, EPS_TARGET_MAGNITUDE), "EPSSetWhichEigenpairs");
    check(EPSGetST(eps, &st), "EPSGetST");
    check(STSetType(st, STSINVERT), "STSetType");
    check(STGetKSP(st, &ksp), "STGetKSP");
    check(KSPSetType(ksp, KSPPREONLY), "KSPSetType");
    check(KSPGetPC(ksp, &pc), "KSPGetPC");
    check(PCSetType(pc, PCLU), "PCSetType");
    check(PCFactorSetMatSolverType(pc, lu == "petsc" ? MATSOLVERPETSC : MATSOLVERMUMPS), "PCFactorSetMatSolverType");
    check(EPSSetDimensions(eps, nev, ncv, PETSC_DEFAULT), "EPSSetDimensions");
    check(EPSSetTolerances(eps, tol_abs, 100000), "EPSSetTolerances");
    check(EPSSetConvergenceTest(eps, EPS_CONV_ABS), "EPSSetConvergenceTest");
    const double t0 = now();
    check(EPSSetUp(eps), "EPSSetUp");
    factor_seconds = now() - t0;
    check(EPSSolve(eps), "EPSSolve");
    PetscInt nconv = 0, its = 0;
    check(EPSGetConverged(eps, &nconv), "EPSGetConverged");
    check(KSPGetTotalIterations(ksp, &its), "KSPGetTotalIterations");
    solves = its;
    const std::vector<complex_double> z = converged_vectors(eps, a, nconv, nev, n);
    const int found = static_cast<int>(z.size() / std::max<std::size_t>(n, 1));
    return numerics::measured_pairs(op, z, found);
}
#endif

std::string json_numbers(const std::vector<double>& v)
{
    std::ostringstream s;
    s << "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.12g", v[i]);
        s << (i ? ", " : "") << buf;
    }
    return s.str() + "]";
}

}  // namespace

int main(int argc, char** argv)
{
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string key = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "eigs-bench: %s needs a value\n", key.c_str());
            return 2;
        }
        const std::string v = argv[++i];
        if (key == "--model") a.model = v;
        else if (key == "--lattice") a.lattice = v;
        else if (key == "--extremal") a.extremal = v;
        else if (key == "--tolerance") a.tolerance = std::stod(v);
        else if (key == "--kind") a.kind = v;
        else if (key == "--solvers") a.solvers = v;
        else if (key == "--ncv") a.ncv = std::stoi(v);
        else if (key == "--reps") a.reps = std::stoi(v);
        else if (key == "--basis") a.basis = std::stoi(v);
        else if (key == "--block") a.block = std::stoi(v);
        else if (key == "--json") a.json = v;
        else if (key == "--window") a.window = v;
        else if (key == "--lu") a.lu = v;
        else if (key == "--dot-potential") a.model_params.dot_potential = std::stod(v);
        else if (key == "--dot-radius") a.model_params.dot_radius = std::stod(v);
        else if (key == "--dot-period") a.model_params.dot_period = std::stoi(v);
        else if (key == "--dot-depth") a.model_params.dot_depth = std::stoi(v);
        else if (key == "--disorder") a.model_params.disorder = std::stod(v);
        else {
            std::fprintf(stderr, "eigs-bench: unknown option %s\n", key.c_str());
            return 2;
        }
    }
#ifdef TOPOKPM_BENCH_SLEPC
    // PETSc wants argc/argv for its own options; it gets none of ours.
    int petsc_argc = 1;
    char** petsc_argv = argv;
    if (SlepcInitialize(&petsc_argc, &petsc_argv, nullptr, nullptr) != 0) return 1;
#endif
    try {
        hamiltonians::ModelParams p = a.model_params;
        p.name = a.model;
        int dims[3] = {1, 1, 1};
        if (std::sscanf(a.lattice.c_str(), "%dx%dx%d", &dims[0], &dims[1], &dims[2]) < 2)
            throw InputError("--lattice " + a.lattice + ": must be NXxNY[xNZ]");
        p.nx = dims[0];
        p.ny = dims[1];
        p.nz = dims[2];
        const bool interior = !a.window.empty();
        if (interior && a.solvers == "ours,arpack,slepc") a.solvers = "chebfd,slepc-si";
        const auto colon = a.extremal.find(':');
        if (colon == std::string::npos) throw InputError("--extremal " + a.extremal + ": must be lowest:k or highest:k");
        const bool lowest = a.extremal.substr(0, colon) == "lowest";
        const int k = std::stoi(a.extremal.substr(colon + 1));
        const auto model = hamiltonians::make_model(p);
        numerics::OperatorSpec spec;
        spec.kind = a.kind == "sell" ? numerics::OperatorKind::Sell : numerics::OperatorKind::Free;
        const numerics::BuiltOperator built = numerics::make_operator(spec, hamiltonians::operator_source(*model));
        const Operator& op = *built.op;
        const global_index n = op.global_rows();
        // The tolerance's energy scale as kpm-eigs: max |E| from the Lanczos bound estimate.
        const numerics::LanczosBounds lb = numerics::lanczos_bounds(op, 200, 1, 0.005);
        const double scale = std::max(std::abs(lb.lowest_ritz), std::abs(lb.highest_ritz));
        const double tol_abs = a.tolerance * scale;
        [[maybe_unused]] const int ncv = a.ncv > 0 ? a.ncv : std::max(2 * k + 1, 20);
        const char* threads = std::getenv("OMP_NUM_THREADS");
        std::printf("eigs-bench: %s %s, N = %lld, operator %s, %s, tolerance %.3g t (%.1e x max|E| = %.4f), reps %d, "
                    "OMP_NUM_THREADS=%s\n",
                    a.model.c_str(), a.lattice.c_str(), static_cast<long long>(n), op.name().c_str(), a.extremal.c_str(),
                    tol_abs, a.tolerance, scale, a.reps, threads ? threads : "(unset)");

        std::vector<Result> results;
        auto wants = [&](const std::string& s) { return ("," + a.solvers + ",").find("," + s + ",") != std::string::npos; };
        if (interior) {
            double lo = 0.0, hi = 0.0;
            if (std::sscanf(a.window.c_str(), "%lf:%lf", &lo, &hi) != 2 || !(lo < hi))
                throw InputError("--window " + a.window + ": must be Emin:Emax with Emin < Emax");
            [[maybe_unused]] int count = k;  // slepc-si: ChebFD's count when it ran, else the k of --extremal
            if (wants("chebfd")) {
                Result r;
                r.solver = "chebfd";
                r.available = true;
                numerics::ChebFdOptions o;
                o.window_min = lo;
                o.window_max = hi;
                o.tolerance = tol_abs;
                o.bounds = lb.bounds;
                o.damping = [](int m) { return analysis::damping_factors(analysis::DampingKernel::Jackson, m, 4.0); };
                numerics::ChebFdStats st;
                time_runs(r, a.reps, [&](int) {
                    EigenPairs got = numerics::chebfd_eigenpairs(op, o, &st);
                    r.matvecs = got.matvecs;
                    return got;
                });
                r.note = topokpm::detail::concat("degree ", st.filter_degree, ", space ", st.search_size, ", SpMMV ",
                                                 int(100.0 * st.seconds_spmmv() / st.seconds_total), " %");
                count = r.pairs;
                results.push_back(r);
            }
            if (wants("slepc-si")) {
                Result r;
                r.solver = "slepc-si";
#ifdef TOPOKPM_BENCH_SLEPC
                r.available = true;
                const int nev = std::max(count, 1), ncv_si = a.ncv > 0 ? a.ncv : 2 * nev + 16;
                double factor_s = 0.0;
                // The centre moved by 1e-3 of the half-width: a centre on an eigenvalue (the ti
                // slab's E = 0 zero modes) makes H - sigma singular and the LU's solves garbage.
                const double sigma = 0.5 * (lo + hi) + 0.5e-3 * (hi - lo);
                time_runs(r, a.reps, [&](int) {
                    return run_slepc_sinvert(op, *hamiltonians::operator_source(*model).rows, sigma, nev, ncv_si,
                                             tol_abs, a.lu, r.matvecs, factor_s);
                });
                r.note = topokpm::detail::concat("Krylov-Schur + STSINVERT at ", sigma, ", LU ", a.lu, " (setup ", factor_s, " s), nev ",
                                                 nev, ", ncv ", ncv_si, "; matvecs = solves");
#else
                r.note = "not built (libslepc-complex3.18-dev not found at configure time)";
#endif
                results.push_back(r);
            }
        }
        if (wants("ours")) {
            Result r;
            r.solver = "ours";
            r.available = true;
            numerics::ChebyshevExtremalOptions o;
            o.end = lowest ? numerics::SpectrumEnd::Lowest : numerics::SpectrumEnd::Highest;
            o.count = k;
            o.tolerance = tol_abs;
            o.block = a.block;
            r.note = "Chebyshev subspace iteration";
            time_runs(r, a.reps, [&](int rep) {
                EigenPairs got = numerics::chebyshev_extremal(op, o);
                r.matvecs = got.matvecs;
                r.note += rep ? "" : topokpm::detail::concat(", block ", got.block, ", ", got.restarts, " passes");
                return got;
            });
            results.push_back(r);
        }
        if (wants("lanczos")) {
            Result r;
            r.solver = "lanczos";
            r.available = true;
            numerics::ThickRestartOptions o;
            o.end = lowest ? numerics::SpectrumEnd::Lowest : numerics::SpectrumEnd::Highest;
            o.count = k;
            o.tolerance = tol_abs;
            o.basis_size = a.basis;
            r.note = topokpm::detail::concat("thick-restart Lanczos, basis ",
                                             a.basis > 0 ? a.basis : std::max(2 * k + 20, 40));
            time_runs(r, a.reps, [&](int rep) {
                EigenPairs got = numerics::thick_restart_lanczos(op, o);
                r.matvecs = got.matvecs;
                r.note += rep ? "" : topokpm::detail::concat(", ", got.restarts, " restarts, ", got.searches, " searches");
                return got;
            });
            results.push_back(r);
        }
        if (wants("arpack")) {
            Result r;
            r.solver = "arpack";
#ifdef TOPOKPM_BENCH_ARPACK
            r.available = true;
            // ARPACK's test: ||r|| <= tol' |theta|; tol' = tol_abs / max|theta| bounds it by tol_abs.
            const double tol_rel = tol_abs / scale;
            r.note = topokpm::detail::concat("znaupd ", lowest ? "SR" : "LR", ", ncv ", ncv, ", tol ", tol_rel);
            time_runs(r, a.reps, [&](int) { return run_arpack(op, lowest, k, ncv, tol_rel, r.matvecs); });
#else
            r.note = "not built (libarpack2-dev not found at configure time)";
#endif
            results.push_back(r);
        }
        if (wants("slepc")) {
            Result r;
            r.solver = "slepc";
#ifdef TOPOKPM_BENCH_SLEPC
            r.available = true;
            r.note = topokpm::detail::concat("Krylov-Schur EPS_HEP, ncv ", ncv, ", EPS_CONV_ABS");
            time_runs(r, a.reps, [&](int) { return run_slepc(op, lowest, k, ncv, tol_abs, r.matvecs); });
#else
            r.note = "not built (libslepc-complex3.18-dev not found at configure time)";
#endif
            results.push_back(r);
        }

        const bool have_ours = !results.empty() && (results[0].solver == "ours" || results[0].solver == "chebfd");
        const double ours = have_ours ? median(results[0].seconds) : 0.0;
        const double ours_cpu = have_ours ? median(results[0].cpu_seconds) : 0.0;
        std::printf("%-8s %10s %10s %9s %6s %12s %10s %10s  %s\n", "solver", "median s", "cpu s", "matvecs", "pairs",
                    "max resid", "ours/this", "cpu ratio", "notes");
        for (const Result& r : results) {
            if (!r.available) {
                std::printf("%-8s %s\n", r.solver.c_str(), r.note.c_str());
                continue;
            }
            const double t = median(r.seconds), c = median(r.cpu_seconds);
            std::printf("%-8s %10.3f %10.3f %9lld %6d %12.3e %10.3f %10.3f  %s\n", r.solver.c_str(), t, c,
                        static_cast<long long>(r.matvecs), r.pairs, r.worst_residual, ours > 0 && t > 0 ? ours / t : 0.0,
                        ours_cpu > 0 && c > 0 ? ours_cpu / c : 0.0, r.note.c_str());
        }
        for (const Result& r : results)
            if (r.available) {
                std::printf("%-8s values:", r.solver.c_str());
                for (double v : r.values) std::printf(" %.10f", v);
                std::printf("\n");
            }
        if (!a.json.empty()) {
            std::ofstream out(a.json);
            if (!out) throw IoError("cannot write " + a.json);
            out << "{\"model\": \"" << a.model << "\", \"lattice\": \"" << a.lattice << "\", \"rows\": " << n
                << ", \"extremal\": \"" << a.extremal << "\", \"tolerance_abs\": " << tol_abs
                << ", \"omp_num_threads\": \"" << (threads ? threads : "") << "\", \"solvers\": [";
            for (std::size_t i = 0; i < results.size(); ++i) {
                const Result& r = results[i];
                const double t = r.available ? median(r.seconds) : 0.0;
                out << (i ? ", " : "") << "{\"solver\": \"" << r.solver << "\", \"available\": "
                    << (r.available ? "true" : "false") << ", \"note\": \"" << r.note << "\"";
                if (r.available)
                    out << ", \"median_s\": " << t << ", \"seconds\": " << json_numbers(r.seconds)
                        << ", \"median_cpu_s\": " << median(r.cpu_seconds) << ", \"cpu_seconds\": " << json_numbers(r.cpu_seconds)
                        << ", \"matvecs\": " << r.matvecs << ", \"pairs\": " << r.pairs
                        << ", \"max_residual\": " << r.worst_residual << ", \"ratio_ours_over_this\": "
                        << (ours > 0 && t > 0 ? ours / t : 0.0) << ", \"values\": " << json_numbers(r.values);
                out << "}";
            }
            out << "]}\n";
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "eigs-bench: %s\n", e.what());
#ifdef TOPOKPM_BENCH_SLEPC
        SlepcFinalize();
#endif
        return 1;
    }
#ifdef TOPOKPM_BENCH_SLEPC
    SlepcFinalize();
#endif
    return 0;
}
