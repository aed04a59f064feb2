#include "numerics/base/dense_eigen.hpp"

#include <lapacke.h>

#include <algorithm>

#include "runtime/base/error.hpp"

namespace topokpm::numerics {

namespace {
/// Complex entries of slack behind every array LAPACK reads (8 KiB; the fault was at
/// 3.5 KiB past the end).
constexpr size_t kPadding = 512;
}  // namespace

std::vector<double> hermitian_eigenvalues(const std::vector<complex_type>& a, int n, char uplo)
{
    TOPOKPM_REQUIRE(n >= 1 && a.size() == static_cast<size_t>(n) * n, "a ", n, " x ", n, " matrix with ",
                    a.size(), " entries");
    TOPOKPM_REQUIRE(uplo == 'L' || uplo == 'U', "uplo 'L' or 'U', got '", uplo, "'");
    std::vector<complex_type> m(a.size() + kPadding);
    std::copy(a.begin(), a.end(), m.begin());
    std::vector<double> w(static_cast<size_t>(n) + kPadding);
    std::vector<double> rwork(static_cast<size_t>(std::max(1, 3 * n - 2)) + kPadding);
    auto* mp = reinterpret_cast<lapack_complex_double*>(m.data());

    complex_type query;
    lapack_int info = LAPACKE_zheev_work(LAPACK_COL_MAJOR, 'N', uplo, n, mp, n, w.data(),
                                         reinterpret_cast<lapack_complex_double*>(&query), -1, rwork.data());
    if (info == 0) {
        const lapack_int lwork = std::max<lapack_int>(static_cast<lapack_int>(query.real()), 2 * n);
        std::vector<complex_type> work(static_cast<size_t>(lwork) + kPadding);
        info = LAPACKE_zheev_work(LAPACK_COL_MAJOR, 'N', uplo, n, mp, n, w.data(),
                                  reinterpret_cast<lapack_complex_double*>(work.data()), lwork, rwork.data());
    }
    if (info != 0)
        throw NumericalError(detail::concat("LAPACK zheev failed (info = ", info, ") on a ", n, " x ", n,
                                            " Hermitian matrix"));
    w.resize(static_cast<size_t>(n));
    return w;
}

}  // namespace topokpm::numerics
