// BlockVectorSingle: parallel first-touch allocation and the precision conversions.
#include "numerics/base/block_vector_single.hpp"

#include <cstdint>

#include "runtime/base/error.hpp"

namespace topokpm {

BlockVectorSingle::BlockVectorSingle(global_index num_rows, int num_cols)
    : num_rows_(num_rows), num_cols_(num_cols)
{
    TOPOKPM_REQUIRE(num_rows >= 0 && num_cols >= 0, "block of ", num_rows, " x ", num_cols);
    const std::int64_t floats = 2 * static_cast<std::int64_t>(size());
    data_.reset(new float[static_cast<std::size_t>(floats)]);  // default-initialised: not touched yet
    float* p = data_.get();
    const std::int64_t per_row = 2 * static_cast<std::int64_t>(num_cols);
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < num_rows; ++i)
        for (std::int64_t j = 0; j < per_row; ++j) p[i * per_row + j] = 0.0f;
}

BlockVectorSingle to_single(const BlockVector& in)
{
    BlockVectorSingle out(in.num_rows(), in.num_cols());
    const complex_type* src = in.data();
    complex_single* dst = out.data();
    const std::int64_t n = static_cast<std::int64_t>(in.size());
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i)
        dst[i] = complex_single(static_cast<float>(src[i].real()), static_cast<float>(src[i].imag()));
    return out;
}

BlockVector to_double(const BlockVectorSingle& in)
{
    BlockVector out(in.num_rows(), in.num_cols());
    const complex_single* src = in.data();
    complex_type* dst = out.data();
    const std::int64_t n = static_cast<std::int64_t>(in.size());
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) dst[i] = complex_type(src[i].real(), src[i].imag());
    return out;
}

}  // namespace topokpm
