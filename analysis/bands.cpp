#include "analysis/bands.hpp"

#include "numerics/base/dense_eigen.hpp"

namespace topokpm::analysis {

std::vector<double> hermitian_eigenvalues(std::vector<complex_type> a, int n)
{
    return numerics::hermitian_eigenvalues(a, n, 'L');
}

}  // namespace topokpm::analysis
