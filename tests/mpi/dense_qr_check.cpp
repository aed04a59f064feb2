// Multi-rank check of the 2-D block-cyclic tile QR (numerics/dense/block_cyclic_qr),
// run by run_mpi_check.sh under mpiexec with 1-4 ranks ("dense_qr" mode), n = 230 in
// 40 x 40 tiles (6 x 6, the last 30 wide), ib 16:
//  - the gathered R and reflectors equal, bit for bit, the same factorization on one
//    process (MPI_COMM_SELF): the reduction tree is fixed by the tile indices and D, so
//    every tile gets the same kernels on the same bytes in the same order for any grid
//    (complex double and float, D = 2 and 3, 2 workers + host-memory device, window 5);
//  - with D = 1 the tree is the flat one of qr(): equal bit for bit to qr() on B x B tiles;
//  - backward stability of the formed Q (apply_q 'N' to I) and of Q^H A (apply_q 'C'):
//    ||A - Q R||_F <= rel ||A||_F, ||Q^H A - R||_F <= rel ||A||_F, ||Q^H Q - I||_F <= sqrt(n) rel,
//    also for a rank-40 matrix with exactly zero columns (finite, same bounds);
//  - a tall 310 x 230 matrix (8 x 6 tiles, m >= n): the same checks, Q m x m, Q^H A = [R; 0].
// Tolerance (Higham Thm 19.4 / Lemma 19.3, as in dense_factor_test): a product of r
// reflectors of length <= l perturbs each column by <= r gamma_l relative to its norm;
// step k applies at most (mt - k) + D - 1 <= mt + D tree nodes to a column, each with
// <= B reflectors of length <= 2B (GEQRT: <= B, TSQRT/TTQRT: B + 1), over nt steps:
// r <= nt B (mt + D), l = 2B, and complex arithmetic's constant 4:
// rel = 4 nt B (mt + D) gamma_{2B}.
// Prints "dense qr check on P ranks: ok".
#include <mpi.h>

#include <complex>
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <cblas.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "numerics/dense/block_cyclic.hpp"
#include "numerics/dense/qr.hpp"
#include "runtime/base/error.hpp"
#include "runtime/mpi/environment.hpp"
#include "tests/mpi/check.hpp"

using namespace topokpm;
using namespace topokpm::numerics::dense;
namespace mpi = topokpm::mpi;

namespace {

using topokpm::testing::mpi_check::expect;
using topokpm::testing::mpi_check::verdict;

constexpr int b = 40, ib = 16;

std::vector<complex_double> gaussian(int rows, int cols, unsigned seed)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0.0, std::sqrt(0.5));
    std::vector<complex_double> x(std::size_t(rows) * cols);
    for (auto& e : x) e = {g(rng), g(rng)};
    return x;
}

double frob(const std::vector<complex_double>& x)
{
    double s = 0;
    for (const auto& e : x) s += std::norm(e);
    return std::sqrt(s);
}

/// Factors the m x n `a` on the grid of `comm`; returns the gathered R + reflectors on
/// rank 0 and, when asked, Q (apply_q 'N' to the m x m I) and Q^H A (apply_q 'C' to A).
template <class T>
std::vector<T> factor(const std::vector<T>& a, int m, int n, int domains, const DenseExecution& ex, MPI_Comm comm,
                      std::vector<T>* q = nullptr, std::vector<T>* qha = nullptr)
{
    const ProcessGrid grid = ProcessGrid::of(comm);
    BlockCyclicMatrix<T> x(m, n, b, grid);
    x.from_global(a.data(), m);
    const auto f = block_cyclic_qr(std::move(x), ex, comm, domains);
    if (q != nullptr) {
        std::vector<T> eye(std::size_t(m) * m, T(0));
        for (int d = 0; d < m; ++d) eye[std::size_t(d) * m + d] = T(1);
        BlockCyclicMatrix<T> c(m, m, b, grid);
        c.from_global(eye.data(), m);
        block_cyclic_apply_q(f, 'N', c, ex, comm);
        *q = c.gather(0, comm);
    }
    if (qha != nullptr) {
        BlockCyclicMatrix<T> c(m, n, b, grid);
        c.from_global(a.data(), m);
        block_cyclic_apply_q(f, 'C', c, ex, comm);
        *qha = c.gather(0, comm);
    }
    return f.a.gather(0, comm);
}

template <class T>
bool same_bits(const std::vector<T>& x, const std::vector<T>& y)
{
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), sizeof(T) * x.size()) == 0;
}

template <class T>
std::vector<complex_double> widen(const std::vector<T>& x)
{
    return {x.begin(), x.end()};
}

/// Residual, Q^H A and orthogonality bounds on rank 0 (see the file comment).
/// A m x n, Q m x m, [R; 0] m x n (R the upper triangle of the factor's first n rows).
template <class T>
void check_backward(const std::vector<T>& a, int m, int n, const std::vector<T>& rv, const std::vector<T>& q,
                    const std::vector<T>& qha, int domains, const std::string& label)
{
    const double u = std::numeric_limits<typename T::value_type>::epsilon() / 2;
    const int mt = (m + b - 1) / b, nt = (n + b - 1) / b, l = 2 * b;
    const double rel = 4.0 * nt * b * (mt + domains) * (l * u / (1 - l * u));
    const auto ad = widen(a), qd = widen(q);
    std::vector<complex_double> r(std::size_t(m) * n, 0.0), qr(r.size()), qhq(std::size_t(m) * m);
    bool finite = true;
    for (int c = 0; c < n; ++c)
        for (int i = 0; i <= c; ++i) {
            r[std::size_t(c) * m + i] = rv[std::size_t(c) * m + i];
            finite = finite && std::isfinite(std::abs(r[std::size_t(c) * m + i]));
        }
    expect(finite, label + ": R finite");
    const complex_double one(1), zero(0);
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, m, &one, qd.data(), m, r.data(), m, &zero, qr.data(),
                m);
    cblas_zgemm(CblasColMajor, CblasConjTrans, CblasNoTrans, m, m, m, &one, qd.data(), m, qd.data(), m, &zero,
                qhq.data(), m);
    std::vector<complex_double> diff(r.size()), rdiff(r.size());
    for (std::size_t e = 0; e < r.size(); ++e) {
        diff[e] = ad[e] - qr[e];
        rdiff[e] = complex_double(qha[e]) - r[e];
    }
    for (int d = 0; d < m; ++d) qhq[std::size_t(d) * m + d] -= 1.0;
    const double na = frob(ad);
    std::printf("%s: ||A-QR||/||A|| %.2e  ||Q^H A-R||/||A|| %.2e  ||Q^H Q-I|| %.2e  (bound %.2e, %.2e)\n",
                label.c_str(), frob(diff) / na, frob(rdiff) / na, frob(qhq), rel, std::sqrt(double(m)) * rel);
    expect(frob(diff) <= rel * na, label + ": ||A - QR|| = " + std::to_string(frob(diff) / na) + " ||A||");
    expect(frob(rdiff) <= rel * na, label + ": ||Q^H A - R|| = " + std::to_string(frob(rdiff) / na) + " ||A||");
    expect(frob(qhq) <= std::sqrt(double(m)) * rel, label + ": ||Q^H Q - I|| = " + std::to_string(frob(qhq)));
}

template <class T>
void check(const std::vector<complex_double>& a64, int m, int n, int domains, const DenseExecution& ex,
           const std::string& label)
{
    const std::vector<T> a(a64.begin(), a64.end());
    std::vector<T> q, qha;
    const auto ours = factor(a, m, n, domains, ex, MPI_COMM_WORLD, &q, &qha);
    if (mpi::rank() != 0) return;
    DenseExecution one;
    one.inner_block = ex.inner_block;
    const auto one_rank = factor(a, m, n, domains, one, MPI_COMM_SELF);
    expect(same_bits(ours, one_rank), label + ": R and reflectors differ from one rank");
    check_backward(a, m, n, ours, q, qha, domains, label);
}

/// D = 1 is the flat tree of qr() on B x B tiles: bit for bit.
void check_flat_tree(const std::vector<complex_double>& a, int m, int n, const DenseExecution& ex,
                     const std::string& label)
{
    const auto ours = factor(a, m, n, 1, ex, MPI_COMM_WORLD);
    if (mpi::rank() != 0) return;
    TileMatrix<complex_double> t(m, n, b, b);
    t.from_column_major(a.data(), m);
    const auto f = qr(std::move(t), ex);
    std::vector<complex_double> serial(std::size_t(m) * n);
    f.a.to_column_major(serial.data(), m);
    expect(same_bits(ours, serial), label + ": D 1 differs from qr() on one process");
}

int run()
{
    const int n = 230;
    const auto a = gaussian(n, n, 17);
    DenseExecution ex;
    ex.inner_block = ib;
    check<complex_double>(a, n, n, 2, ex, "double, D 2");
    check<complex_single>(a, n, n, 2, ex, "float, D 2");
    DenseExecution device = ex;
    device.host_workers = 2;
    device.device_workers = 1;
    device.window = 5;
    check<complex_double>(a, n, n, 3, device, "double, D 3, 2 workers + device, window 5");
    // Rank 40 with two zero columns (one inside the first 40): Householder QR needs no
    // pivoting to stay backward stable; a zero column gives tau = 0, not a NaN.
    auto low = gaussian(n, 40, 18), right = gaussian(40, n, 19), deficient = std::vector<complex_double>(a.size());
    const complex_double one(1), zero(0);
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, 40, &one, low.data(), n, right.data(), 40, &zero,
                deficient.data(), n);
    for (int c : {3, 100})
        for (int r = 0; r < n; ++r) deficient[std::size_t(c) * n + r] = 0.0;
    check<complex_double>(deficient, n, n, 2, ex, "double, rank 40 with zero columns, D 2");
    check_flat_tree(a, n, n, ex, "square");
    // Tall: 310 x 230 (8 x 6 tiles, the last tile row 30 high): more tile rows than steps.
    const int m = 310;
    const auto tall = gaussian(m, n, 20);
    check<complex_double>(tall, m, n, 2, ex, "tall 310 x 230, double, D 2");
    check<complex_single>(tall, m, n, 3, device, "tall 310 x 230, float, D 3, 2 workers + device, window 5");
    check_flat_tree(tall, m, n, ex, "tall 310 x 230");
    return verdict("dense qr check");
}

}  // namespace

int main(int argc, char** argv)
{
    return topokpm::testing::mpi_check::run_check(argc, argv, topokpm::mpi::ThreadLevel::funneled, run);
}
