#include "numerics/base/dense_eigen.hpp"

#include <lapacke.h>

#include <algorithm>

#include "runtime/base/error.hpp"

namespace topokpm::numerics {

namespace {
/// Complex entries of slack behind every array LAPACK reads (8 KiB; the fault was at
/// 3.5 KiB past the end).
constexpr size_t kPadding = 512;
/// `a` checked (n x n, uplo 'L' or 'U') and copied with kPadding entries of slack.
std::vector<complex_type> padded_copy(const std::vector<complex_type>& a, int n, char uplo)
{
    TOPOKPM_REQUIRE(n >= 1 && a.size() == static_cast<size_t>(n) * n, "a ", n, " x ", n, " matrix with ",
                    a.size(), " entries");
    TOPOKPM_REQUIRE(uplo == 'L' || uplo == 'U', "uplo 'L' or 'U', got '", uplo, "'");
    std::vector<complex_type> m(a.size() + kPadding);
    std::copy(a.begin(), a.end(), m.begin());
    return m;
}

}  // namespace

std::vector<double> hermitian_eigenvalues(const std::vector<complex_type>& a, int n, char uplo)
{
    std::vector<complex_type> m = padded_copy(a, n, uplo);
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

HermitianEigensystem hermitian_eigensystem(const std::vector<complex_type>& a, int n, char uplo)
{
    std::vector<complex_type> m = padded_copy(a, n, uplo);
    std::vector<double> w(static_cast<size_t>(n) + kPadding);
    auto* mp = reinterpret_cast<lapack_complex_double*>(m.data());
    complex_type work_query;
    double rwork_query = 0;
    lapack_int iwork_query = 0;
    lapack_int info = LAPACKE_zheevd_work(LAPACK_COL_MAJOR, 'V', uplo, n, mp, n, w.data(),
                                          reinterpret_cast<lapack_complex_double*>(&work_query), -1,
                                          &rwork_query, -1, &iwork_query, -1);
    if (info == 0) {
        const lapack_int lwork = std::max<lapack_int>(static_cast<lapack_int>(work_query.real()), 2 * n + n * n);
        const lapack_int lrwork = std::max<lapack_int>(static_cast<lapack_int>(rwork_query), 1 + 5 * n + 2 * n * n);
        const lapack_int liwork = std::max<lapack_int>(iwork_query, 3 + 5 * n);
        std::vector<complex_type> work(static_cast<size_t>(lwork) + kPadding);
        std::vector<double> rwork(static_cast<size_t>(lrwork) + kPadding);
        std::vector<lapack_int> iwork(static_cast<size_t>(liwork) + kPadding);
        info = LAPACKE_zheevd_work(LAPACK_COL_MAJOR, 'V', uplo, n, mp, n, w.data(),
                                   reinterpret_cast<lapack_complex_double*>(work.data()), lwork, rwork.data(), lrwork,
                                   iwork.data(), liwork);
    }
    if (info != 0)
        throw NumericalError(detail::concat("LAPACK zheevd failed (info = ", info, ") on a ", n, " x ", n,
                                            " Hermitian matrix"));
    HermitianEigensystem out;
    out.values.assign(w.begin(), w.begin() + n);
    out.vectors.assign(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(a.size()));
    return out;
}

}  // namespace topokpm::numerics
