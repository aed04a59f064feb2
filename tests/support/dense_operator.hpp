#pragma once
/// @file dense_operator.hpp
/// An Operator over a dense matrix with plain loops: the oracle for algorithm tests
/// (KPM, Lanczos) that must not depend on the optimized kernels.

#include <vector>

#include "numerics/base/counter_rng.hpp"
#include "numerics/base/operator.hpp"
#include "numerics/base/row_source.hpp"
#include "numerics/kpm/kpm.hpp"
#include "tests/support/dense_oracle.hpp"

namespace topokpm::testing {

class DenseOperator : public Operator {
public:
    /// a: column-major n x n.
    DenseOperator(std::vector<complex_type> a, global_index n) : a_(std::move(a)), n_(n) {}

    global_index num_rows() const override { return n_; }
    std::string name() const override { return "dense-test"; }
    OperatorCost cost() const override { return {double(n_ * n_), 16.0 * n_ * n_, 16.0 * n_ * n_}; }

protected:
    void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override
    {
        const int r = x.num_cols();
        if (dots) dots->reset(r);
        for (global_index i = 0; i < n_; ++i)
            for (int c = 0; c < r; ++c) {
                complex_type acc = 0.0;
                for (global_index j = 0; j < n_; ++j) acc += a_[i + j * n_] * x(j, c);
                const complex_type v = ops.scale * (acc - ops.shift * x(i, c));
                y(i, c) = ops.beta == 0.0 ? v : v + ops.beta * y(i, c);
                if (dots) {
                    dots->xx[c] += std::norm(x(i, c));
                    dots->yx[c] += std::conj(y(i, c)) * x(i, c);
                }
            }
    }

public:

private:
    std::vector<complex_type> a_;
    global_index n_;
};

/// A small random sparse-ish Hermitian matrix as a RowSource (entries from the counter
/// generator with the given seed; about `fill` of the off-diagonal pairs non-zero).
class RandomHermitianSource : public RowSource {
public:
    RandomHermitianSource(global_index n, double fill, std::uint64_t seed) : n_(n), fill_(fill), seed_(seed) {}
    global_index num_rows() const override { return n_; }
    int max_row_length() const override { return static_cast<int>(n_); }
    int row(global_index i, global_index* cols, complex_type* values) const override
    {
        int len = 0;
        for (global_index j = 0; j < n_; ++j) {
            const complex_type v = entry(i, j);
            if (i == j || v != complex_type(0.0)) {
                cols[len] = j;
                values[len++] = v;
            }
        }
        return len;
    }

private:
    complex_type entry(global_index i, global_index j) const
    {
        if (i == j) return {2.0 * uniform(seed_, std::uint64_t(i * n_ + i)) - 1.0, 0.0};
        const global_index lo = std::min(i, j), hi = std::max(i, j);
        const std::uint64_t c = std::uint64_t(lo * n_ + hi) * 3;
        if (uniform(seed_, c) >= fill_) return 0.0;
        const complex_type v(uniform(seed_, c + 1) - 0.5, uniform(seed_, c + 2) - 0.5);
        return i < j ? v : std::conj(v);
    }
    global_index n_;
    double fill_;
    std::uint64_t seed_;
};

/// A small random Hermitian system with its LAPACK eigenvalues, a dense operator and a KPM
/// scaling that contains the spectrum with 0.1 to spare: the fixture of the KPM tests.
struct SmallDenseSystem {
    RandomHermitianSource source;
    std::vector<double> eigenvalues;
    DenseOperator op;
    numerics::KpmScaling scaling;
    explicit SmallDenseSystem(global_index n, std::uint64_t seed = 7)
        : source(n, 0.3, seed), eigenvalues(dense_eigenvalues(source)), op(dense_matrix(source), n),
          scaling(numerics::kpm_scaling({eigenvalues.front() - 0.1, eigenvalues.back() + 0.1}, 0.01))
    {}
};

}  // namespace topokpm::testing
