#pragma once
/// @file columns.hpp
/// The column-major block of this rank's rows that the eigensolvers (thick-restart Lanczos,
/// ChebFD, shift-invert) orthonormalize and project with BLAS: column c of an n x cols
/// block starts at data + c n (n = this rank's rows, within the BLAS int range).

#include <cstddef>
#include <vector>

#include "numerics/base/types.hpp"

namespace topokpm::numerics {

struct Columns {
    std::vector<complex_double> data;
    int n = 0;
    int cols = 0;
    Columns() = default;
    /// n x k zeros.
    Columns(int rows, int k) : data(static_cast<std::size_t>(rows) * k, complex_double(0.0, 0.0)), n(rows), cols(k) {}
    complex_double* col(int c) { return data.data() + static_cast<std::size_t>(c) * n; }
    const complex_double* col(int c) const { return data.data() + static_cast<std::size_t>(c) * n; }
};

}  // namespace topokpm::numerics
