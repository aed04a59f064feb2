#pragma once
/// @file operator.hpp
/// The seam between algorithms (KPM, Lanczos) and kernels: an Operator applies the
/// augmented SpMMV of seed 004, Fig. 5 to the rows it owns. The CPU SELL-C-σ kernel,
/// the matrix-free stencils and (later) a CUDA and an MPI-distributed operator are
/// implementations; KPM never knows which one runs.

#include <complex>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "numerics/base/block_vector.hpp"
#include "numerics/base/row_source.hpp"
#include "numerics/base/types.hpp"
#include "runtime/device/device.hpp"

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
    /// Optional accumulation in the same sweep (ChebFD's filter sum Y += g_n c_n v_n):
    /// when `accumulate` is set, also, per entry,
    ///     accumulate := accumulate + acc_old y_old + acc_x x + acc_new y
    /// with y_old the values of y before the sweep and y the new ones; a double block of
    /// x's shape, different from x and y. acc_old != 0 needs beta != 0 (y_old is read only
    /// then). Kernels with Operator::fuses_accumulation(R) do it in their row epilogue
    /// (no pass of its own); for the others apply() runs the same sums in passes around
    /// the sweep.
    BlockVector* accumulate = nullptr;
    double acc_old = 0.0, acc_x = 0.0, acc_new = 0.0;
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

/// Products per float partial sum of a dot lane in the single-precision CPU kernels (the SELL
/// and stencil sweeps and their row epilogues, numerics/cpu): a lane adds at most this many
/// float products (fused multiply-adds) before the run joins the double sums. The float
/// rounding of a dot grows with it; the conversion to double costs 1 / it per vector.
inline constexpr int kSingleDotRun = 8;

/// The relative rounding that a DotSums entry of a sweep in `precision` may carry beyond that
/// of the double summation: (kSingleDotRun + 1) eps_f of sum |y||x| in single (the float runs
/// above), 0 in double. Algorithms size their tolerances from it (KPM's moment bound).
constexpr double dot_rounding_bound(Precision precision)
{
    return precision == Precision::Single ? (kSingleDotRun + 1) * double(std::numeric_limits<float>::epsilon()) : 0.0;
}

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

    /// The augmented SpMMV, for T = complex_double or complex_single:
    ///     y := scale (A - shift) x + beta y        (beta == 0: y's old values are never read)
    /// and, if ops.want_dots, dots->xx[c] = <x_c|x_c>, dots->yx[c] = <y_c|x_c> (new y),
    /// accumulated in double for both T. x and y have num_rows() rows and the same number of
    /// columns R >= 1 and are different blocks; dots is reset and filled (ignored without
    /// want_dots). Checks the operands once, then runs the implementation's kernel:
    /// blocks in the operator's own precision() go straight to it; double blocks on a
    /// single-precision operator are rounded to float for one single sweep and y is widened
    /// back (Lanczos bounds, tests); single blocks on a double operator throw InputError.
    /// @throws DimensionMismatch  shapes differ, R < 1, x and y are one block, or want_dots
    ///                            without a DotSums
    /// With ops.accumulate (double blocks only) the accumulation of AugmentedOps as well.
    /// @throws DimensionMismatch  as above, or an accumulate block of another shape, equal
    ///                            to x or y, on complex-float blocks, or acc_old != 0 with beta == 0
    template <class T>
    void apply(const BasicBlockVector<T>& x, BasicBlockVector<T>& y, const AugmentedOps& ops, DotSums* dots) const
    {
        check_operands(x.num_rows(), x.num_cols(), y.num_rows(), y.num_cols(), &x == &y, ops, dots);
        if (ops.accumulate != nullptr) {
            if constexpr (std::is_same_v<T, complex_double>) {
                check_accumulate(x, y, ops);
                if (!fuses_accumulation(x.num_cols())) return apply_then_accumulate(x, y, ops, ops.want_dots ? dots : nullptr);
            } else {
                refuse_accumulate("complex-float blocks");
            }
        }
        do_apply(x, y, ops, ops.want_dots ? dots : nullptr);
    }

    /// True when this operator's kernel for double blocks of width R does AugmentedOps'
    /// accumulation in its row epilogue (no extra pass over memory); false (the default):
    /// apply() runs acc += acc_old y_old + acc_x x before the sweep and acc += acc_new y
    /// after it, one pass each (only the passes with a non-zero coefficient).
    virtual bool fuses_accumulation(int num_cols) const
    {
        (void)num_cols;
        return false;
    }

    /// Two augmented SpMMVs in one pass over memory (temporal blocking), T = complex_double
    /// or complex_single:
    ///     y := scale (A - shift) x + beta y      first:  xx = <x|x>, yx = <y|x>  (new y)
    ///     x := scale (A - shift) y + beta x      second: xx = <y|y>, yx = <x|y>  (new x, new y)
    /// (without AugmentedOps' accumulation)
    /// i.e. apply(x, y, ops, first) followed by apply(y, x, ops, second) (two KPM steps with
    /// the roles of the blocks exchanged), equal to them to rounding (the order of the dot
    /// sums, and of the terms of a few rows, may differ). Runs the operator's fused kernel when
    /// fused_steps(R) == 2, else exactly those two apply() calls. dots as in apply().
    /// @throws DimensionMismatch  as apply()
    template <class T>
    void apply_two_steps(BasicBlockVector<T>& x, BasicBlockVector<T>& y, const AugmentedOps& ops, DotSums* first,
                         DotSums* second) const
    {
        check_operands(x.num_rows(), x.num_cols(), y.num_rows(), y.num_cols(), &x == &y, ops, first);
        check_operands(x.num_rows(), x.num_cols(), y.num_rows(), y.num_cols(), &x == &y, ops, second);
        if (ops.accumulate != nullptr) refuse_accumulate("apply_two_steps");
        if (fused_steps(x.num_cols()) < 2) {
            do_apply(x, y, ops, ops.want_dots ? first : nullptr);
            do_apply(y, x, ops, ops.want_dots ? second : nullptr);
            return;
        }
        do_apply_two_steps(x, y, ops, ops.want_dots ? first : nullptr, ops.want_dots ? second : nullptr);
    }

    /// Steps per pass over memory that apply_two_steps() makes for blocks of width R in this
    /// operator's precision(): 2 when it has a fused kernel for them (the CPU stencil on 2-D
    /// lattices: R = 1 in the shifted-load form, R = 2, 4, 8, 16, 32 in strips, both precisions), 1
    /// otherwise (the default; an MPI-distributed operator keeps 1: its halo exchange is one
    /// step deep).
    virtual int fused_steps(int num_cols) const
    {
        (void)num_cols;
        return 1;
    }

    /// Strip-mining: calls visit(first, w) for the column strips [first, first + w) of a block
    /// of num_cols >= 0 columns, in order. The widths are those with compile-time specialised
    /// kernels (greedy, widest first: R = 12 runs as 8 + 4), so an algorithm that applies the
    /// operator to strips of a wide block never runs a generic-width kernel.
    template <class Visit>
    void for_each_strip(int num_cols, Visit&& visit) const
    {
        int first = 0;
        for (const int w : strip_widths(num_cols)) {
            visit(first, w);
            first += w;
        }
    }

    /// Short human-readable name of the implementation, e.g. "sell-32-256" or "free-ti".
    virtual std::string name() const = 0;

    /// Cost figures of one apply() per column.
    virtual OperatorCost cost() const = 0;

    /// The precision the operator stores its matrix in and sweeps with (`--precision`).
    /// Algorithms that run many sweeps (the KPM recurrence) keep their vectors in this
    /// precision; dot products are double in both (docs/performance.md, "Single precision").
    virtual Precision precision() const { return Precision::Double; }

    /// Where the blocks this operator sweeps live: device::no_device (the host arrays; every
    /// CPU operator), device::host_standin, or a CUDA device index. Algorithms make their
    /// blocks there (BasicBlockVector::zeros_on), so that a run on a device does not fault in
    /// host copies it never reads.
    virtual int blocks_device() const { return device::no_device; }

    // ---- Distribution (docs/scaling.md). Serial operators keep these defaults. ----

    /// Rows of the whole matrix; num_rows() is this rank's share of them.
    virtual global_index global_rows() const { return num_rows(); }
    /// Global index of this rank's first row: its rows are [row_begin, row_begin + num_rows)
    /// when they are one run of the canonical order (a 1-D split; see row_runs()).
    virtual global_index row_begin() const { return 0; }
    /// This rank's rows as [begin, end) runs of the canonical order (models.md §2/§3), in
    /// the order of the local rows (ascending, disjoint): local row i is the i-th row of
    /// the concatenated runs. One run [row_begin, row_begin + num_rows) unless a 2-D
    /// decomposition gave the rank a tile. Start vectors and checkpoints use it.
    virtual RowRuns row_runs() const { return {{row_begin(), row_begin() + num_rows()}}; }
    /// This rank's index among the operator's num_ranks() ranks, which own consecutive row
    /// ranges in rank order (a serial operator: rank 0 of 1).
    virtual int rank() const { return 0; }
    virtual int num_ranks() const { return 1; }
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

protected:
    /// The kernel behind apply(), called with checked operands and dots == nullptr unless
    /// ops.want_dots. Every operator implements the double one.
    virtual void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const = 0;
    /// The single-precision kernel: implemented by operators whose precision() is Single;
    /// the default throws InputError (no single-precision kernel).
    virtual void do_apply(const BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                          const AugmentedOps& ops, DotSums* dots) const;
    /// The fused kernel behind apply_two_steps(), called only when fused_steps(R) == 2 for
    /// blocks of the operator's precision(); the defaults throw (a bug: fused_steps() lied).
    virtual void do_apply_two_steps(BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* first,
                                    DotSums* second) const;
    virtual void do_apply_two_steps(BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                                    const AugmentedOps& ops, DotSums* first, DotSums* second) const;
    /// For a single-precision operator's double do_apply(): x (and y when beta != 0)
    /// rounded to float, one single sweep, y widened back (exactly).
    void apply_in_single(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const;

private:
    /// The widths of for_each_strip (numerics/spmmv/width_registry.hpp, strip_widths).
    static std::vector<int> strip_widths(int num_cols);
    void check_operands(global_index x_rows, int x_cols, global_index y_rows, int y_cols, bool same_block,
                        const AugmentedOps& ops, const DotSums* dots) const;
    void check_accumulate(const BlockVector& x, const BlockVector& y, const AugmentedOps& ops) const;
    [[noreturn]] void refuse_accumulate(const char* where) const;
    /// The accumulation of an operator without fuses_accumulation(R): passes around do_apply.
    void apply_then_accumulate(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const;
};

/// An operator whose kernel sweeps blocks of one value type T (complex_double or
/// complex_single, precision() = precision_of<T>): the two do_apply overloads routed by
/// precision once, for every such operator (the CPU SELL/CRS and the CUDA ones):
/// blocks of T go to apply_blocks(); double blocks on a single operator through
/// apply_in_single (rounded, one single sweep, widened back); single blocks on a double
/// operator are refused (Operator::do_apply's InputError).
template <class T>
class TypedOperator : public Operator {
public:
    Precision precision() const override { return precision_of<T>; }

protected:
    /// The kernel on blocks of T, operands checked by Operator::apply.
    virtual void apply_blocks(const BasicBlockVector<T>& x, BasicBlockVector<T>& y, const AugmentedOps& ops,
                              DotSums* dots) const = 0;

    void do_apply(const BlockVector& x, BlockVector& y, const AugmentedOps& ops, DotSums* dots) const override
    {
        if constexpr (std::is_same_v<T, complex_double>) apply_blocks(x, y, ops, dots);
        else apply_in_single(x, y, ops, dots);
    }
    void do_apply(const BasicBlockVector<complex_single>& x, BasicBlockVector<complex_single>& y,
                  const AugmentedOps& ops, DotSums* dots) const override
    {
        if constexpr (std::is_same_v<T, complex_single>) apply_blocks(x, y, ops, dots);
        else Operator::do_apply(x, y, ops, dots);  // throws: no single kernel in a double operator
    }
};

}  // namespace topokpm
