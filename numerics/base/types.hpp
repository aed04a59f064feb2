#pragma once
/// @file types.hpp
/// Scalar and index types shared by every layer (GHOST's lidx/gidx).

#include <complex>
#include <cstdint>
#include <utility>
#include <vector>

namespace topokpm {

using complex_double = std::complex<double>;  ///< all matrices and vectors (models.md: complex double)
using complex_single = std::complex<float>;   ///< --precision single: matrix and vectors (issue 4)
using complex_type = complex_double;          ///< the default value type
using local_index = std::int32_t;           ///< row/column index inside one rank's storage
using global_index = std::int64_t;          ///< canonical global row (models.md §2, §3)
/// Rows as [begin, end) runs of global indices, in a stated order (Operator::row_runs()).
using RowRuns = std::vector<std::pair<global_index, global_index>>;

/// Arithmetic of the KPM vectors and the stored matrix. Dot products (and so the moments)
/// are accumulated in double in both (docs/performance.md, "Single precision").
enum class Precision { Double, Single };

/// The Precision of a value type: precision_of<complex_double> = Double, <complex_single> = Single.
template <class T>
inline constexpr Precision precision_of = Precision::Double;
template <>
inline constexpr Precision precision_of<complex_single> = Precision::Single;
template <>
inline constexpr Precision precision_of<float> = Precision::Single;  ///< real-valued single matrix

/// A stored matrix value type V: complex_double, complex_single, or, for Hamiltonians whose
/// entries are all real (graphene), double or float. `real` is its scalar, `vector` the
/// value type of the (always complex, models.md) vectors it multiplies.
template <class V>
struct ValueTraits {
    using real = V;
    using vector = std::complex<V>;
    static constexpr bool is_complex = false;
};
template <class T>
struct ValueTraits<std::complex<T>> {
    using real = T;
    using vector = std::complex<T>;
    static constexpr bool is_complex = true;
};

}  // namespace topokpm
