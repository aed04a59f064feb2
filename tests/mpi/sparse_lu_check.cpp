// Multi-rank check of the sparse LU across ranks (numerics/sparse_direct/distributed_lu), run
// by run_mpi_check.sh under mpiexec with 1-4 ranks ("sparse_lu" mode), on a ti slab with
// disorder and dots (lattice nested dissection and METIS) and a random nonsymmetric matrix:
//  - the gathered factor is an LU of P (A - zI) P^T to rounding: |A - L U| <= gamma_n |L| |U|
//    entrywise (Higham, Thm 9.3: LU without interchanges in any summation order, every entry
//    of L U an inner product of length <= n; gamma_n = n u / (1 - n u), u = eps / 2), and so is
//    one rank's (the same bound: both are the same recurrence, only the order of the partial
//    sums inside each GEMM may differ); the number of replaced pivots equals one rank's;
//  - the refined solution equals one rank's to rounding: each has componentwise backward
//    error w (reported), so |x - x_exact| <= w |(A - zI)^-1| (|A - zI| |x| + |b|) to first
//    order (Higham, Thm 7.4 / 7.2), and the two differ by at most the sum of the two bounds
//    (doubled for the first-order term), with |(A - zI)^-1| from dense zgesv;
//  - every rank returns the same x, bit for bit (the refinement runs on replicated data);
//  - a zero pivot with static pivoting disabled ({pivot_scale} = 0) makes every rank throw
//    NumericalError (no hang).
// Prints "sparse lu check on P ranks: ok".
#include <mpi.h>

#include <complex>
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/sparse_direct/distributed_lu.hpp"
#include "runtime/base/error.hpp"
#include "runtime/mpi/communicator.hpp"
#include "runtime/mpi/environment.hpp"
#include "tests/mpi/check.hpp"

using namespace topokpm;
using namespace topokpm::sparse_direct;
namespace mpi = topokpm::mpi;

namespace {

using topokpm::testing::mpi_check::expect;
using topokpm::testing::mpi_check::verdict;

constexpr double kU = std::numeric_limits<double>::epsilon() / 2;
using cvec = std::vector<complex_double>;


/// Dense P (A - zI) P^T, column major.
cvec dense_permuted(const CsrMatrix& a, const std::vector<global_index>& perm, complex_double z)
{
    const global_index n = a.n;
    std::vector<global_index> iperm(n);
    for (global_index p = 0; p < n; ++p) iperm[perm[p]] = p;
    cvec d(static_cast<std::size_t>(n * n), 0.0);
    for (global_index i = 0; i < n; ++i)
        for (global_index q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) d[iperm[i] + iperm[a.cols[q]] * n] += a.values[q];
    for (global_index p = 0; p < n; ++p) d[p + p * n] -= z;
    return d;
}

/// Dense L (unit lower) and U from panels in SparseLU::factor_values()'s layout.
void dense_factors(const SparseLU& lu, const cvec& f, cvec& l, cvec& u)
{
    const global_index n = lu.size();
    l.assign(static_cast<std::size_t>(n * n), 0.0);
    u.assign(l.size(), 0.0);
    std::size_t off = 0;
    const auto& sb = lu.supernode_begin();
    for (std::size_t s = 0; s + 1 < sb.size(); ++s) {
        const global_index b = sb[s], nc = sb[s + 1] - b;
        const auto& rows = lu.supernode_rows(static_cast<global_index>(s));
        const global_index m = static_cast<global_index>(rows.size()), ld = nc + m;
        for (global_index j = 0; j < nc; ++j) {
            for (global_index i = 0; i < nc; ++i) {
                const complex_double v = f[off + i + j * ld];
                if (i > j) l[(b + i) + (b + j) * n] = v;
                else u[(b + i) + (b + j) * n] = v;
            }
            l[(b + j) + (b + j) * n] = 1.0;
            for (global_index r = 0; r < m; ++r) l[rows[r] + (b + j) * n] = f[off + nc + r + j * ld];
        }
        off += static_cast<std::size_t>(ld * nc);
        for (global_index c = 0; c < m; ++c)
            for (global_index i = 0; i < nc; ++i) u[(b + i) + rows[c] * n] = f[off + i + c * nc];
        off += static_cast<std::size_t>(nc * m);
    }
}

/// max_ij |A - L U|_ij / (gamma_n (|L| |U|)_ij): <= 1 for a factor correct to rounding.
double factor_error_ratio(const SparseLU& lu, const cvec& f, const cvec& a)
{
    const global_index n = lu.size();
    cvec l, u;
    dense_factors(lu, f, l, u);
    const double gamma = n * kU / (1 - n * kU);
    double worst = 0.0;
    for (global_index j = 0; j < n; ++j)
        for (global_index i = 0; i < n; ++i) {
            complex_double lu_ij = 0.0;
            double abs_ij = 0.0;
            for (global_index k = 0; k <= std::min(i, j); ++k) {
                const complex_double p = l[i + k * n] * u[k + j * n];
                lu_ij += p;
                abs_ij += std::abs(l[i + k * n]) * std::abs(u[k + j * n]);
            }
            const double d = std::abs(a[i + j * n] - lu_ij);
            if (d > 0.0) worst = std::max(worst, abs_ij > 0.0 ? d / (gamma * abs_ij) : INFINITY);
        }
    return worst;
}

void check_case(const std::string& label, const CsrMatrix& a, const AnalyseOptions& ao, complex_double z,
                const FactorOptions& fo = {})
{
    const global_index n = a.n;
    SparseLU serial(a, ao);
    const FactorReport fs = serial.factorize(z, fo);
    SparseLU analysis(a, ao);
    DistributedLU dist(analysis, MPI_COMM_WORLD);
    const FactorReport fd = dist.factorize(z, fo);
    expect(fd.tiny_pivots == fs.tiny_pivots, label + ": tiny pivots " + std::to_string(fd.tiny_pivots) + " vs one rank's " +
                                                 std::to_string(fs.tiny_pivots));
    const cvec gathered = dist.gather_factors(0);

    // Right-hand sides: 3 pseudo-random columns, the same on every rank.
    const int nrhs = 3;
    cvec b(static_cast<std::size_t>(n * nrhs));
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> g(-1.0, 1.0);
    for (auto& e : b) e = {g(rng), g(rng)};
    cvec xs(b.size()), xd(b.size());
    const SolveReport ss = serial.solve(b.data(), xs.data(), nrhs);
    const SolveReport sd = dist.solve(b.data(), xd.data(), nrhs);

    // Every rank the same x, bit for bit.
    cvec x0 = xd;
    mpi::check(MPI_Bcast(x0.data(), static_cast<int>(x0.size()), MPI_C_DOUBLE_COMPLEX, 0, MPI_COMM_WORLD), "MPI_Bcast");
    const int same = std::memcmp(x0.data(), xd.data(), sizeof(complex_double) * xd.size()) == 0;
    expect(mpi::allreduce_sum(1 - same) == 0, label + ": ranks returned different solutions");
    if (mpi::rank() != 0) return;

    const cvec ad = dense_permuted(a, serial.perm(), z);
    const double rd = factor_error_ratio(serial, gathered, ad), rs = factor_error_ratio(serial, cvec(serial.factor_values().begin(), serial.factor_values().end()), ad);
    double fdiff = 0.0, fmax = 0.0;
    bool bitwise = gathered.size() == serial.factor_values().size();
    for (std::size_t e = 0; bitwise && e < gathered.size(); ++e) {
        fdiff = std::max(fdiff, std::abs(gathered[e] - serial.factor_values()[e]));
        fmax = std::max(fmax, std::abs(serial.factor_values()[e]));
    }
    if (bitwise)
        bitwise = std::memcmp(gathered.data(), serial.factor_values().data(), sizeof(complex_double) * gathered.size()) == 0;
    // With pivots replaced the factor is that of a nearby matrix: the bound is for A itself only without.
    if (fs.tiny_pivots == 0) {
        expect(rd <= 1.0, label + ": |A - LU| / (gamma_n |L||U|) = " + std::to_string(rd) + " > 1 (across ranks)");
        expect(rs <= 1.0, label + ": |A - LU| / (gamma_n |L||U|) = " + std::to_string(rs) + " > 1 (one rank)");
    }

    // |A^-1| by zgesv on the original-order dense A - zI.
    cvec dense(static_cast<std::size_t>(n * n), 0.0), inv(dense.size(), 0.0);
    for (global_index i = 0; i < n; ++i) {
        for (global_index q = a.row_ptr[i]; q < a.row_ptr[i + 1]; ++q) dense[i + a.cols[q] * n] += a.values[q];
        dense[i + i * n] -= z;
        inv[i + i * n] = 1.0;
    }
    cvec dcopy = dense;
    std::vector<lapack_int> ipiv(n);
    expect(LAPACKE_zgesv(LAPACK_COL_MAJOR, static_cast<lapack_int>(n), static_cast<lapack_int>(n), dcopy.data(),
                         static_cast<lapack_int>(n), ipiv.data(), inv.data(), static_cast<lapack_int>(n)) == 0,
           label + ": zgesv");
    double worst = 0.0;
    for (int c = 0; c < nrhs; ++c) {
        std::vector<double> t(n, 0.0);  // |A| |x| + |b|
        for (global_index j = 0; j < n; ++j)
            for (global_index i = 0; i < n; ++i) t[i] += std::abs(dense[i + j * n]) * std::abs(xs[j + c * n]);
        for (global_index i = 0; i < n; ++i) t[i] += std::abs(b[i + c * n]);
        for (global_index i = 0; i < n; ++i) {
            double bound = 0.0;
            for (global_index j = 0; j < n; ++j) bound += std::abs(inv[i + j * n]) * t[j];
            bound *= 2.0 * (ss.backward_error + sd.backward_error);
            const double d = std::abs(xd[i + c * n] - xs[i + c * n]);
            if (d > 0.0) worst = std::max(worst, bound > 0.0 ? d / bound : INFINITY);
        }
    }
    expect(worst <= 1.0, label + ": |x - x_one_rank| exceeds its rounding bound by " + std::to_string(worst));
    std::printf("%s: n %lld, %zu supernodes, tiny pivots %lld, factor %s one rank's (max |diff| %.2e of max %.2e), "
                "|A-LU|/(gamma_n|L||U|) %.3f (one rank %.3f), backward error %.1e (one rank %.1e), "
                "|x diff|/bound %.3f\n",
                label.c_str(), static_cast<long long>(n), serial.supernode_begin().size() - 1,
                static_cast<long long>(fd.tiny_pivots), bitwise ? "bitwise equal to" : "differs by rounding from", fdiff,
                fmax, rd, rs, sd.backward_error, ss.backward_error, worst);
}

hamiltonians::ModelParams ti_params(int nx, int ny, int nz)
{
    hamiltonians::ModelParams p;
    p.name = "ti";
    p.nx = nx; p.ny = ny; p.nz = nz;
    p.boundary = "ppo";
    p.disorder = 1.0;
    p.disorder_seed = 3;
    p.dot_potential = 0.4;
    p.dot_radius = 1.0;
    p.dot_period = 2;
    return p;
}

CsrMatrix random_matrix(global_index n, double density, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0), p(0.0, 1.0);
    CsrMatrix a;
    a.n = n;
    a.row_ptr.assign(n + 1, 0);
    for (global_index i = 0; i < n; ++i) {
        for (global_index j = 0; j < n; ++j)
            if (i == j || p(rng) < density) {
                a.cols.push_back(j);
                a.values.emplace_back(u(rng) + (i == j ? 4.0 : 0.0), u(rng));
            }
        a.row_ptr[i + 1] = a.nnz();
    }
    return a;
}

int run()
{
    const auto model = hamiltonians::make_model(ti_params(6, 6, 3));
    const CsrMatrix h = csr_from_rows(*model);
    AnalyseOptions nd;
    nd.ordering = Ordering::LatticeNestedDissection;
    nd.lattice = LatticeGeometry{6, 6, 3, 4, {true, true, false}};
    AnalyseOptions metis;
    metis.site_size = 4;
    AnalyseOptions small = metis;  // many small supernodes: every rank owns many, updates cross ranks
    small.relax_columns = 4;
    small.max_supernode = 8;
    check_case("ti 6x6x3 nd, z = 0.05 + 0.01i", h, nd, {0.05, 0.01});
    check_case("ti 6x6x3 metis, z = 0.1 (indefinite)", h, metis, 0.1);
    check_case("ti 6x6x3 metis small supernodes, z = -1.3", h, small, -1.3);
    FactorOptions coarse;
    coarse.pivot_scale = 0.3;  // many pivots replaced: the count must match one rank's
    check_case("ti 6x6x3 nd, pivot_scale 0.3", h, nd, 0.1, coarse);
    AnalyseOptions natural;
    natural.ordering = Ordering::Natural;
    check_case("random 150, 3 % dense, natural", random_matrix(150, 0.03, 11), natural, 0.0);
    check_case("random 150, 3 % dense, metis", random_matrix(150, 0.03, 12), AnalyseOptions{}, {0.3, -0.2});

    // A zero pivot with static pivoting disabled: NumericalError on every rank.
    CsrMatrix zero = random_matrix(60, 0.05, 13);
    for (global_index q = zero.row_ptr[30]; q < zero.row_ptr[31]; ++q)
        if (zero.cols[q] == 30) zero.values[q] = 0.0;
    for (global_index i = 0; i < 60; ++i)  // row and column 30 otherwise zero before it is eliminated: pivot exactly 0
        for (global_index q = zero.row_ptr[i]; q < zero.row_ptr[i + 1]; ++q)
            if ((i == 30) != (zero.cols[q] == 30)) zero.values[q] = 0.0;
    SparseLU za(zero, natural);
    DistributedLU zd(za, MPI_COMM_WORLD);
    FactorOptions strict;
    strict.pivot_scale = 0.0;
    bool threw = false;
    try {
        zd.factorize(0.0, strict);
    } catch (const NumericalError&) {
        threw = true;
    }
    expect(threw, "zero pivot with {pivot_scale} = 0 did not throw NumericalError on this rank");

    return verdict("sparse lu check");
}

}  // namespace

int main(int argc, char** argv)
{
    return topokpm::testing::mpi_check::run_check(argc, argv, topokpm::mpi::ThreadLevel::funneled, run);
}
