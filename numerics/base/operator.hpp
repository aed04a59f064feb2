#pragma once
/// @file operator.hpp
/// The seam between algorithms (KPM, Lanczos) and kernels: an Operator applies the
/// augmented SpMMV of seed 004, Fig. 5 to the rows it owns. The CPU SELL-C-σ kernel,
/// the matrix-free stencils and (later) a CUDA and an MPI-distributed operator are
/// implementations; KPM never knows which one runs.

#include <complex>
#include <cstddef>
#include <string>
#include <vector>

#include "numerics/base/block_vector.hpp"
#include "numerics/base/block_vector_single.hpp"
#include "numerics/base/types.hpp"

namespace topokpm {

/// y := scale * (A - shift) * x + beta * y, for every column of the blocks, in one sweep.
/// A KPM step is scale = 2/a, shift = b, beta = -1 (v_{k+1} = 2 Ht v_k - v_{k-1});
/// the first step is scale = 1/a, shift = b, beta = 0.
struct AugmentedOps {
    double scale = 1.0;
    double shift = 0.0;
    double beta = 0.0;    ///< 0 means y's old content is ignored (may be uninitialised garbage,
                          ///< but not NaN-propagating: kernels must not multiply it by 0)
    bool want_dots = false;  ///< compute DotSums on the fly (the "augmented" part)
};

/// Column-wise dot products computed during the sweep, from the *input* x and the
/// *new* y: xx[c] = <x_c|x_c>, yx[c] = <y_c|x_c> = sum_i conj(y_ic) x_ic.
struct DotSums {
    std::vector<double> xx;
    std::vector<complex_type> yx;
    void reset(int num_cols)
    {
        xx.assign(num_cols, 0.0);
        yx.assign(num_cols, complex_type(0.0, 0.0));
    }
};

/// What one application costs, for performance reporting (bytes from the
/// minimum-traffic model, see docs/performance.md).
struct OperatorCost {
    double nonzeros = 0;          ///< stored (or stencil) entries applied per column
    double matrix_bytes = 0;      ///< bytes of matrix data read per sweep (0 for matrix-free)
    double storage_bytes = 0;     ///< bytes the operator holds in memory
};

class Operator {
public:
    virtual ~Operator() = default;

    /// Rows = columns of the (square) operator.
    virtual global_index num_rows() const = 0;

    /// The augmented SpMMV. x and y have num_rows() rows and the same number of columns
    /// R >= 1; x and y must not alias. If ops.want_dots, dots is reset and filled.
    virtual void apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops,
                       DotSums* dots) const = 0;

    /// Short human-readable name of the implementation, e.g. "sell-32-256" or "free-ti".
    virtual std::string name() const = 0;

    /// Cost figures of one apply() per column.
    virtual OperatorCost cost() const = 0;

    // ---- Precision (--precision single, docs/performance.md). ----

    /// The precision the operator stores its matrix in and sweeps with. Algorithms that
    /// run many sweeps (the KPM recurrence) keep their vectors in this precision and call
    /// apply_single() when it is Single; apply() always works (a single-precision
    /// operator rounds x to single precision for it).
    virtual Precision precision() const { return Precision::Double; }
    /// The augmented SpMMV on single-precision blocks: the same contract as apply(), with
    /// the row sums in single precision and the dot products accumulated in double.
    /// Only operators whose precision() is Single implement it; the default throws.
    virtual void apply_single(const BlockVectorSingle& x, BlockVectorSingle& y, const AugmentedOps& ops,
                              DotSums* dots) const;

    // ---- Distribution (docs/scaling.md). Serial operators keep these defaults. ----

    /// Rows of the whole matrix; num_rows() is this rank's share of them.
    virtual global_index global_rows() const { return num_rows(); }
    /// Global index of this rank's first row: its rows are [row_begin, row_begin + num_rows).
    virtual global_index row_begin() const { return 0; }
    /// True when apply()'s DotSums are already sums over all ranks (always for a serial
    /// operator); false when they cover this rank's rows only and the algorithm must call
    /// sum_over_ranks on whatever it accumulated from them (KPM: once, at the end).
    virtual bool dots_reduced() const { return true; }
    /// Element-wise sum of `values` over all ranks of the operator, in place. Collective:
    /// every rank calls it with the same count. A no-op for serial operators.
    virtual void sum_over_ranks(double* values, std::size_t count) const
    {
        (void)values;
        (void)count;
    }
};

}  // namespace topokpm
