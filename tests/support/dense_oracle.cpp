#include "tests/support/dense_oracle.hpp"

#include "numerics/base/dense_eigen.hpp"

#include <stdexcept>
#include <string>

namespace topokpm::testing {

std::vector<complex_type> dense_matrix(const RowSource& source)
{
    const global_index n = source.num_rows();
    std::vector<complex_type> a(static_cast<size_t>(n * n));
    std::vector<global_index> cols(source.max_row_length());
    std::vector<complex_type> vals(source.max_row_length());
    for (global_index i = 0; i < n; ++i) {
        const int len = source.row(i, cols.data(), vals.data());
        for (int k = 0; k < len; ++k) a[static_cast<size_t>(i + cols[k] * n)] += vals[k];
    }
    return a;
}

std::vector<double> dense_eigenvalues(std::vector<complex_type> a, int n)
{
    return numerics::hermitian_eigenvalues(a, n, 'U');  // LAPACK zheev, padded workspaces
}

std::vector<double> dense_eigenvalues(const RowSource& source)
{
    return dense_eigenvalues(dense_matrix(source), static_cast<int>(source.num_rows()));
}

std::vector<double> exact_moments(const std::vector<double>& eigenvalues, int num_moments,
                                  double scale_a, double scale_b)
{
    std::vector<long double> sum(num_moments, 0.0L);
    for (double e : eigenvalues) {
        const long double x = (static_cast<long double>(e) - scale_b) / scale_a;
        long double t0 = 1.0L, t1 = x;
        for (int k = 0; k < num_moments; ++k) {
            sum[k] += t0;
            const long double t2 = 2.0L * x * t1 - t0;
            t0 = t1;
            t1 = t2;
        }
    }
    std::vector<double> mu(num_moments);
    for (int k = 0; k < num_moments; ++k)
        mu[k] = static_cast<double>(sum[k] / static_cast<long double>(eigenvalues.size()));
    return mu;
}

}  // namespace topokpm::testing
