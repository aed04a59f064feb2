// sparse-direct-bench: the supernodal sparse LU of numerics/sparse_direct on ti slabs (or
// graphene) shifted by z = sigma + i eta: analyse, factor and solve times (median of --reps),
// fill nnz(L+U), Gflop/s of the factorization (SparseLU::factor_flops() / factor time),
// tiny pivots, backward error after refinement; with UMFPACK found at configure time, UMFPACK
// (its default ordering, AMD/COLAMD) on the same matrix in the same run. docs/sparse_direct.md.
//
//   sparse-direct-bench [--model ti|graphene] [--lattice 12x12x8,16x16x8] [--boundary ppo]
//                       [--shift 0.1] [--eta 0] [--disorder 1] [--ordering metis|nd|both]
//                       [--site-size B] [--reps 3]
//
// --site-size: rows per site for METIS and the symbolic phase; default 4 for ti (the four
// orbitals share their neighbours) and 1 for graphene (a cell holds two atoms with different
// neighbours: grouping them triples the fill of 128x128). The lattice ordering always groups
// a site's (ti) or cell's (graphene) rows.
//
// Threads: the BLAS calls follow OMP_NUM_THREADS (OpenBLAS-openmp); the rest is serial.
// Not a test: the numbers depend on the machine and on its load.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/sparse_direct/sparse_lu.hpp"
#include "topokpm/config.hpp"

#ifdef TOPOKPM_BENCH_UMFPACK
#include <umfpack.h>
#endif

using namespace topokpm;
using sparse_direct::CsrMatrix;

namespace {

double now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v)
{
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

#ifdef TOPOKPM_BENCH_UMFPACK
// UMFPACK (zl: 64-bit indices, packed complex values) on A - z I in compressed columns.
void run_umfpack(const CsrMatrix& a, complex_double z, const std::vector<complex_double>& b, int reps)
{
    const SuiteSparse_long n = a.n;
    std::vector<SuiteSparse_long> cp(n + 1, 0), ri(a.nnz());
    std::vector<double> vals(2 * a.nnz());
    for (SuiteSparse_long i = 0; i < n; ++i)
        for (global_index q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) ++cp[a.cols[q] + 1];
    for (SuiteSparse_long j = 0; j < n; ++j) cp[j + 1] += cp[j];
    std::vector<SuiteSparse_long> fill(cp.begin(), cp.end() - 1);
    for (SuiteSparse_long i = 0; i < n; ++i)
        for (global_index q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) {
            const SuiteSparse_long dst = fill[a.cols[q]]++;
            ri[dst] = i;
            const complex_double v = a.values[q] - (a.cols[q] == i ? z : complex_double(0.0));
            vals[2 * dst] = v.real();
            vals[2 * dst + 1] = v.imag();
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
            return;
        }
        double t1 = now();
        if (umfpack_zl_numeric(cp.data(), ri.data(), vals.data(), nullptr, sym, &num, control, info) != UMFPACK_OK) {
            std::printf("  umfpack: numeric failed (status %g)\n", info[UMFPACK_STATUS]);
            umfpack_zl_free_symbolic(&sym);
            return;
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
    // nnz(L+U) with the diagonal once, as SparseLU::factor_nonzeros() (UMFPACK counts it in both)
    std::printf("  %-14s analyse %8.3f s  factor %8.3f s  solve %7.4f s  nnz(L+U) %11lld\n", "umfpack", median(ts),
                median(tf), median(tsol), static_cast<long long>(lnz + unz - n));
}
#endif

}  // namespace

int main(int argc, char** argv)
{
    std::string model_name = "ti", lattices = "10x10x8,14x14x8,18x18x8", boundary = "ppo", ordering = "both";
    double sigma = 0.1, eta = 0.0, disorder = 1.0;
    int reps = 3, site_size = 0;
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
        else { std::fprintf(stderr, "unknown argument %s (see the file comment)\n", arg.c_str()); return 2; }
    }
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each line as soon as it is measured
    const char* threads = std::getenv("OMP_NUM_THREADS");
    std::printf("sparse-direct-bench: model %s, z = %g + %gi, disorder %g, reps %d, OMP_NUM_THREADS=%s\n",
                model_name.c_str(), sigma, eta, disorder, reps, threads ? threads : "(unset)");
    const complex_double z(sigma, eta);
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
        const CsrMatrix a = sparse_direct::csr_from_rows(*model);
        const int orbitals = model->orbitals_per_site();
        const std::string bc = model->params().boundary;
        std::printf("%s %s (%s): n = %lld, nnz = %lld\n", model_name.c_str(), lat.c_str(), bc.c_str(),
                    static_cast<long long>(a.n), static_cast<long long>(a.nnz()));
        std::mt19937_64 rng(1);
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        std::vector<complex_double> b(a.n), x(a.n);
        for (auto& v : b) v = {u(rng), u(rng)};

        std::vector<std::pair<std::string, sparse_direct::AnalyseOptions>> variants;
        if (ordering == "metis" || ordering == "both") {
            sparse_direct::AnalyseOptions o;
            o.site_size = site_size > 0 ? site_size : (model_name == "ti" ? orbitals : 1);
            variants.emplace_back("ours/metis", o);
        }
        if (ordering == "nd" || ordering == "both") {
            sparse_direct::AnalyseOptions o;
            o.ordering = sparse_direct::Ordering::LatticeNestedDissection;
            sparse_direct::LatticeGeometry g;
            g.nx = p.nx; g.ny = p.ny; g.nz = p.nz; g.orbitals = orbitals;
            for (int d = 0; d < static_cast<int>(bc.size()) && d < 3; ++d) g.periodic[d] = bc[d] == 'p';
            o.lattice = g;
            variants.emplace_back("ours/lattice-nd", o);
        }
        for (const auto& [name, opt] : variants) {
            std::vector<double> ta, tf, tsol;
            double flops = 0.0, berr = 0.0;
            long long fill = 0, tiny = 0, supernodes = 0;
            int steps = 0;
            for (int r = 0; r < reps; ++r) {
                double t0 = now();
                sparse_direct::SparseLU lu(a, opt);
                double t1 = now();
                const auto fr = lu.factorize(z);
                double t2 = now();
                const auto sr = lu.solve(b.data(), x.data(), 1);
                double t3 = now();
                ta.push_back(t1 - t0);
                tf.push_back(t2 - t1);
                tsol.push_back(t3 - t2);
                flops = lu.factor_flops();
                fill = lu.factor_nonzeros();
                tiny = fr.tiny_pivots;
                berr = sr.backward_error;
                steps = sr.refinement_steps;
                supernodes = static_cast<long long>(lu.supernode_begin().size()) - 1;
            }
            std::printf("  %-14s analyse %8.3f s  factor %8.3f s  solve %7.4f s  nnz(L+U) %11lld  %6.2f Gflop/s"
                        "  supernodes %lld  tiny pivots %lld  berr %.1e (%d refinement steps)  factors %.0f MiB\n",
                        name.c_str(), median(ta), median(tf), median(tsol), fill, flops / median(tf) * 1e-9, supernodes,
                        tiny, berr, steps, 16.0 * static_cast<double>(fill) / (1 << 20));
        }
#ifdef TOPOKPM_BENCH_UMFPACK
        run_umfpack(a, z, b, reps);
#else
        std::printf("  umfpack: not found at configure time (libsuitesparse-dev)\n");
#endif
    }
    return 0;
}
