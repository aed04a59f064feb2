#pragma once
/// @file block_vector_single.hpp
/// The single-precision block of `--precision single`: R vectors of length N as complex
/// floats, row-major like BlockVector (element (i, c) at data[i * R + c]). Host memory only:
/// the CPU SELL kernel is the one single-precision operator so far.
///
/// Conversions: double -> single rounds to nearest (what a single run does with its start
/// vectors); single -> double is exact, so a checkpoint written as double and read back
/// into single gives the same bits.

#include <cstddef>
#include <memory>
#include <utility>

#include "numerics/base/block_vector.hpp"
#include "numerics/base/types.hpp"

namespace topokpm {

class BlockVectorSingle {
public:
    BlockVectorSingle() = default;
    /// N rows, R columns, zero-initialised by the OpenMP threads in the static row split
    /// the kernels use (first touch: on a multi-socket node each page then lives on the
    /// socket of the thread that sweeps its rows).
    BlockVectorSingle(global_index num_rows, int num_cols);
    BlockVectorSingle(BlockVectorSingle&&) noexcept = default;
    BlockVectorSingle& operator=(BlockVectorSingle&&) noexcept = default;

    global_index num_rows() const { return num_rows_; }
    int num_cols() const { return num_cols_; }
    // std::complex<float> is layout-compatible with float[2] ([complex.numbers]).
    complex_single* data() { return reinterpret_cast<complex_single*>(data_.get()); }
    const complex_single* data() const { return reinterpret_cast<const complex_single*>(data_.get()); }
    complex_single& operator()(global_index i, int c) { return data()[index(i, c)]; }
    const complex_single& operator()(global_index i, int c) const { return data()[index(i, c)]; }
    std::size_t size() const { return static_cast<std::size_t>(num_rows_) * static_cast<std::size_t>(num_cols_); }
    std::size_t bytes() const { return size() * sizeof(complex_single); }
    void swap(BlockVectorSingle& other) noexcept
    {
        std::swap(num_rows_, other.num_rows_);
        std::swap(num_cols_, other.num_cols_);
        data_.swap(other.data_);
    }

private:
    std::size_t index(global_index i, int c) const
    {
        return static_cast<std::size_t>(i) * static_cast<std::size_t>(num_cols_) + static_cast<std::size_t>(c);
    }
    global_index num_rows_ = 0;
    int num_cols_ = 0;
    std::unique_ptr<float[]> data_;  // new float[] leaves the pages untouched until the parallel zeroing
};

/// Rounds every value of `in` to single precision.
BlockVectorSingle to_single(const BlockVector& in);
/// The exact double-precision copy of `in`.
BlockVector to_double(const BlockVectorSingle& in);

}  // namespace topokpm
