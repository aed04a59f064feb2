#include "analysis/bands.hpp"

#include <lapacke.h>

#include "runtime/base/error.hpp"

namespace topokpm::analysis {

std::vector<double> hermitian_eigenvalues(std::vector<complex_type> a, int n)
{
    TOPOKPM_REQUIRE(n >= 1 && a.size() == static_cast<size_t>(n) * n, "a ", n, " x ", n, " matrix with ",
                    a.size(), " entries");
    std::vector<double> w(n);
    const lapack_int info = LAPACKE_zheev(LAPACK_COL_MAJOR, 'N', 'L', n,
                                          reinterpret_cast<lapack_complex_double*>(a.data()), n, w.data());
    if (info != 0)
        throw NumericalError(detail::concat("LAPACK zheev failed (info = ", info, ") on a ", n, " x ", n,
                                            " Bloch Hamiltonian"));
    return w;
}

}  // namespace topokpm::analysis
