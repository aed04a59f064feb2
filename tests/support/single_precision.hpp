#pragma once
/// @file single_precision.hpp
/// Checks shared by the --precision single tests (sell_single_test, cpu_stencil_single_test):
/// the dot products of a single sweep against a long-double sum with the *double* bound, and
/// the rounding bound of single-precision KPM moments (derivation in docs/performance.md,
/// "Single precision", and at the moment tests).

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <memory>
#include <string>

#include "numerics/base/operator.hpp"
#include "numerics/sparse/sell_matrix.hpp"
#include "numerics/spmmv/sell_operator.hpp"

namespace topokpm::testing {

/// The complex-float block of the single-precision tests.
using SingleBlock = BasicBlockVector<complex_single>;

/// The single-precision SELL operator over `m`'s values rounded to complex float.
inline std::unique_ptr<Operator> single_sell_operator(const numerics::SellMatrix& m)
{
    return numerics::make_sell_operator(
        std::make_shared<const numerics::BasicSellMatrix<complex_single>>(numerics::convert_values<complex_single>(m)));
}
/// The same with the tiled sweep order of `lattice`.
inline std::unique_ptr<Operator> single_sell_operator(const numerics::SellMatrix& m,
                                                      const numerics::LatticeRowOrder& lattice,
                                                      const numerics::TileOptions& options = {})
{
    return numerics::make_sell_operator(
        std::make_shared<const numerics::BasicSellMatrix<complex_single>>(numerics::convert_values<complex_single>(m)),
        lattice, options);
}

inline constexpr double kEpsSingle = std::numeric_limits<float>::epsilon();   ///< 2 u_f = 2^-23
inline constexpr double kEpsDouble = std::numeric_limits<double>::epsilon();  ///< 2 u_d = 2^-52

/// Accumulates <x|x> and <y|x> of one column in long double from the stored float values of
/// x and the new y, and checks a sweep's DotSums against them with the double-precision
/// bound 2 (N + 2) eps_d Σ|y||x| (Σ|x|^2 for <x|x>): dots summed in double pass, a float
/// accumulation (error ~ N eps_f) fails. Kernels that sum short runs of products in float
/// first (the stencil's R = 1 float form, numerics/spmmv/stencil_kernels.hpp) pass their run
/// length and get the float rounding of one run on top.
class SingleDotReference {
public:
    void add(complex_single x, complex_single y)
    {
        const std::complex<long double> xl(x.real(), x.imag()), yl(y.real(), y.imag());
        xx_ += std::norm(xl);
        yx_ += std::conj(yl) * xl;
        abs_xx_ += std::norm(x);
        abs_yx_ += std::abs(y) * std::abs(x);
        ++rows_;
    }
    /// float_run > 0: the kernel may sum up to float_run products per lane in float (fused
    /// multiply-adds, one rounding each) and add two such sums in float before the double
    /// sum: (float_run + 1) u_f more per real lane sum, twice that for a complex |error|.
    void expect_matches(const DotSums& dots, int column, const std::string& what, int float_run = 0) const
    {
        const double n = static_cast<double>(rows_);
        const double lanes = float_run > 0 ? (float_run + 1) * kEpsSingle : 0.0;
        EXPECT_LE(std::abs(dots.xx[column] - static_cast<double>(xx_)), (2 * (n + 2) * kEpsDouble + lanes) * abs_xx_)
            << what << " xx " << column;
        const std::complex<long double> got(dots.yx[column].real(), dots.yx[column].imag());
        EXPECT_LE(static_cast<double>(std::abs(got - yx_)), (2 * (n + 2) * kEpsDouble + lanes) * abs_yx_)
            << what << " yx " << column;
    }

private:
    long double xx_ = 0;
    std::complex<long double> yx_ = 0;
    double abs_xx_ = 0, abs_yx_ = 0;
    long rows_ = 0;
};

/// The random-walk rounding bound on |mu_n(single) - mu_n(double)| for a KPM run scaled into
/// [-1 + e/2, 1 - e/2] with Gershgorin bounds (||Ht||_inf <= 1) and at most `max_row`
/// entries per row: 4 kappa c eps_f sqrt(n/2 + 1), kappa = 1 / sqrt(1 - (1 - e/2)^2) the norm
/// of U_k(Ht) on the scaled spectrum, c = (m + 3)(2 ||Ht|| + 1) the rounding of one sweep.
inline double single_moment_bound(int n, int max_row, double epsilon)
{
    const double kappa = 1.0 / std::sqrt(1.0 - (1.0 - epsilon / 2) * (1.0 - epsilon / 2));
    const double c = (max_row + 3) * (2.0 * 1.0 + 1.0);
    return 4 * kappa * c * kEpsSingle * std::sqrt(n / 2.0 + 1.0);
}

}  // namespace topokpm::testing
