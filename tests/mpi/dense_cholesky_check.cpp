// Multi-rank check of the 2-D block-cyclic tile Cholesky (numerics/dense/block_cyclic),
// run by run_mpi_check.sh under mpiexec with 1-4 ranks ("dense" mode):
//  - the gathered factor equals, bit for bit, cholesky() on one process with the same
//    B x B tiles (same kernels on the same bytes in the same order), for complex double
//    and float, a ragged last tile, with and without a host-memory device and with
//    2 workers; and it factors A to rounding (||A - L L^H||_F <= 4 gamma_{n+1} trace(A),
//    Higham Thm 10.3, as in dense_factor_test);
//  - a matrix that is not positive definite makes every rank throw NumericalError
//    naming the same failing column (no hang, no rank left behind).
// Prints "dense check on P ranks: ok".
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
#include "numerics/dense/cholesky.hpp"
#include "runtime/base/error.hpp"
#include "runtime/mpi/environment.hpp"
#include "tests/mpi/check.hpp"

using namespace topokpm;
using namespace topokpm::numerics::dense;
namespace mpi = topokpm::mpi;

namespace {

using topokpm::testing::mpi_check::expect;
using topokpm::testing::mpi_check::verdict;

/// A = X X^H / n + I (every rank builds the same matrix from the same seed).
std::vector<complex_double> random_hpd(int n, unsigned seed)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g(0.0, std::sqrt(0.5));
    std::vector<complex_double> x(std::size_t(n) * n), a(x.size());
    for (auto& e : x) e = {g(rng), g(rng)};
    const complex_double alpha(1.0 / n), beta(0.0);
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasConjTrans, n, n, n, &alpha, x.data(), n, x.data(), n, &beta,
                a.data(), n);
    for (int d = 0; d < n; ++d) a[std::size_t(d) * n + d] += 1.0;
    return a;
}

template <class T>
void check_factor(const std::vector<complex_double>& a64, int n, int b, const DenseExecution& ex, const char* label)
{
    const std::vector<T> a(a64.begin(), a64.end());
    const ProcessGrid grid = ProcessGrid::of(MPI_COMM_WORLD);
    BlockCyclicMatrix<T> m(n, b, grid);
    m.from_global(a.data(), n);
    block_cyclic_cholesky(m, ex, MPI_COMM_WORLD);
    const std::vector<T> ours = m.gather(0, MPI_COMM_WORLD);
    if (mpi::rank() != 0) return;
    TileMatrix<T> ref(n, n, b, b);
    ref.from_column_major(a.data(), n);
    DenseExecution one;
    cholesky(ref, one);
    std::vector<T> l(std::size_t(n) * n);
    ref.to_column_major(l.data(), n);
    bool equal = true;
    for (int c = 0; c < n && equal; ++c)
        equal = std::memcmp(&ours[std::size_t(c) * n + c], &l[std::size_t(c) * n + c], sizeof(T) * (n - c)) == 0;
    expect(equal, std::string(label) + ": factor differs from one process");
    // Residual of the gathered factor in double.
    std::vector<complex_double> ld(std::size_t(n) * n, 0.0), llh(ld.size());
    for (int c = 0; c < n; ++c)
        for (int r = c; r < n; ++r) ld[std::size_t(c) * n + r] = ours[std::size_t(c) * n + r];
    const complex_double one_c(1), zero(0);
    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasConjTrans, n, n, n, &one_c, ld.data(), n, ld.data(), n, &zero,
                llh.data(), n);
    double diff = 0, trace = 0;
    for (std::size_t e = 0; e < llh.size(); ++e) diff += std::norm(complex_double(a[e]) - llh[e]);
    for (int d = 0; d < n; ++d) trace += a64[std::size_t(d) * n + d].real();
    const double u = std::numeric_limits<typename T::value_type>::epsilon() / 2;
    expect(std::sqrt(diff) <= 4 * (n + 1) * u / (1 - (n + 1) * u) * trace, std::string(label) + ": residual");
}

int run()
{
    const int n = 230, b = 40;  // 6 x 6 tiles, the last one 30 wide
    const auto a = random_hpd(n, 31);
    DenseExecution ex;
    check_factor<complex_double>(a, n, b, ex, "double, 1 worker");
    check_factor<complex_single>(a, n, b, ex, "float, 1 worker");
    DenseExecution device;
    device.host_workers = 2;
    device.device_workers = 1;
    device.window = 5;
    check_factor<complex_double>(a, n, b, device, "double, 2 workers + device, window 5");
    // Not positive definite at column 97 (tile 2, owned by different ranks as P varies).
    auto bad = a;
    bad[std::size_t(97) * n + 97] = -50.0;
    std::string message;
    try {
        BlockCyclicMatrix<complex_double> m(n, b, ProcessGrid::of(MPI_COMM_WORLD));
        m.from_global(bad.data(), n);
        block_cyclic_cholesky(m, ex, MPI_COMM_WORLD);
    } catch (const NumericalError& e) {
        message = e.what();
    }
    expect(message.find("column 97,") != std::string::npos, "not-HPD error names column 97, got '" + message + "'");
    return verdict("dense check");
}

}  // namespace

int main(int argc, char** argv)
{
    return topokpm::testing::mpi_check::run_check(argc, argv, topokpm::mpi::ThreadLevel::funneled, run);
}
