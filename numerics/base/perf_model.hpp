#pragma once
/// @file perf_model.hpp
/// The KPM performance model of seed 004 (section III): flops and minimum memory traffic
/// of one augmented SpMMV sweep, and the roofline bound they imply.
///
/// Per row and block column: 8 flops per stored complex entry (one complex multiply-add),
/// plus 34 for the shift, scale, axpby and the two on-the-fly dots (seed 004 Eq. (5):
/// ceil(7*2/2) + ceil(9*6/2)). Minimum traffic per sweep: the matrix once (16-byte value +
/// 4-byte column per entry for SELL/CRS; the potential only for matrix-free), and per row
/// and column x read, y read and y written (3 x 16 bytes). For 13 entries per row this is
/// B_min(R) = (260/R + 48) / 138 bytes/flop.

namespace topokpm::perf {

/// Flops of one augmented sweep over `num_cols` block columns.
inline double sweep_flops(double nonzeros, double rows, int num_cols)
{
    return (8.0 * nonzeros + 34.0 * rows) * num_cols;
}

/// Minimum bytes moved by one augmented sweep over `num_cols` block columns, with vector
/// values of `value_bytes` bytes (16 complex double, 8 complex float).
inline double sweep_bytes(double matrix_bytes, double rows, int num_cols, double value_bytes = 16.0)
{
    return matrix_bytes + 3.0 * value_bytes * rows * num_cols;
}

/// Roofline P* = min(peak, bandwidth / balance) in Gflop/s (peak <= 0: no compute cap).
inline double roofline_gflops(double bandwidth_gb_s, double balance_bytes_per_flop, double peak_gflops = 0.0)
{
    const double mem = bandwidth_gb_s / balance_bytes_per_flop;
    return peak_gflops > 0.0 && peak_gflops < mem ? peak_gflops : mem;
}

}  // namespace topokpm::perf
