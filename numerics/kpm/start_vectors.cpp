#include "numerics/kpm/start_vectors.hpp"

#include <algorithm>
#include <cmath>

#include "numerics/base/counter_rng.hpp"
#include "runtime/device/device.hpp"

#if defined(TOPOKPM_HAVE_LIBMVEC)
// glibc's libmvec has SIMD sin and cos (within 1 ulp of libm's), but <math.h> declares them
// for OpenMP simd loops only under -ffast-math: declared here. The scalar sines and cosines
// of R x N phases cost more than several sweeps (graphene 2048x2048, R = 16: 1.3e8 of them).
extern "C" {
#pragma omp declare simd notinbranch
double sin(double) noexcept;
#pragma omp declare simd notinbranch
double cos(double) noexcept;
}
#endif

namespace topokpm::numerics {
namespace {

/// Entries per chunk: a multiple of every SIMD width, so that every entry goes through the
/// same vector code (a scalar remainder would differ by an ulp, and a rank's rows must get
/// exactly the serial run's numbers).
constexpr int kChunk = 256;

/// c[t] = cos(p[t]), s[t] = sin(p[t]) for t < kChunk, one SIMD loop (libmvec where linked).
/// Not inlined and no __restrict: otherwise GCC 12 finds no vector type for the loads and
/// falls back to a scalar sincos.
__attribute__((noinline)) void cos_sin(const double* p, double* c, double* s)
{
#pragma omp simd
    for (int t = 0; t < kChunk; ++t) {
        c[t] = std::cos(p[t]);
        s[t] = std::sin(p[t]);
    }
}

}  // namespace

template <class T>
void random_phase_values(T* out, global_index rows, int cols, int valid_cols, std::uint64_t vector_seed,
                         std::int64_t first_vector, global_index num_global_rows, global_index row_begin)
{
    const std::uint64_t stream = vector_stream_seed(vector_seed);
    const int r = cols;
    const double two_pi = 2.0 * M_PI;
    // Entries in chunks of the row-major block (flat index k = i r + c): the phases, then
    // their cosines and sines as one SIMD loop; columns from valid_cols on are zero.
    const global_index total = rows * r;
#pragma omp parallel
    {
        double phase[kChunk], re[kChunk], im[kChunk];
#pragma omp for schedule(static)
        for (global_index k0 = 0; k0 < total; k0 += kChunk) {
            const int len = static_cast<int>(std::min<global_index>(kChunk, total - k0));
            for (int t = 0; t < len; ++t) {
                const global_index i = (k0 + t) / r;
                const int c = static_cast<int>((k0 + t) - i * r);
                const auto j = static_cast<std::uint64_t>(row_begin + i);
                const auto vec = static_cast<std::uint64_t>(first_vector + c);
                phase[t] = two_pi * uniform(stream, vec * static_cast<std::uint64_t>(num_global_rows) + j);
            }
            for (int t = len; t < kChunk; ++t) phase[t] = 0.0;
            cos_sin(phase, re, im);
            using Real = typename T::value_type;  // float: rounded to nearest, as convert_block rounds
            for (int t = 0; t < len; ++t) out[k0 + t] = T(static_cast<Real>(re[t]), static_cast<Real>(im[t]));
            if (valid_cols < r)
                for (int t = 0; t < len; ++t)
                    if (static_cast<int>((k0 + t) % r) >= valid_cols) out[k0 + t] = T(0, 0);
        }
    }
}

template void random_phase_values(complex_double*, global_index, int, int, std::uint64_t, std::int64_t, global_index,
                                  global_index);
template void random_phase_values(complex_single*, global_index, int, int, std::uint64_t, std::int64_t, global_index,
                                  global_index);

void fill_random_phase_vectors(BlockVector& block, std::uint64_t vector_seed,
                               std::int64_t first_vector, global_index num_global_rows,
                               global_index row_begin)
{
    random_phase_values(block.data(), block.num_rows(), block.num_cols(), block.num_cols(), vector_seed, first_vector,
                        num_global_rows, row_begin);
}

template <class T>
void random_phase_values_on(int device, T* out, global_index rows, int cols, int valid_cols,
                            std::uint64_t vector_seed, std::int64_t first_vector, global_index num_global_rows,
                            global_index row_begin)
{
    if (device == device::host_standin) {
        random_phase_values(out, rows, cols, valid_cols, vector_seed, first_vector, num_global_rows, row_begin);
        return;
    }
    device::set_device(device);
    kernels::cuda::random_phase_values(out, rows, cols, valid_cols, vector_seed, first_vector, num_global_rows,
                                       row_begin);
}

template void random_phase_values_on(int, complex_double*, global_index, int, int, std::uint64_t, std::int64_t,
                                     global_index, global_index);
template void random_phase_values_on(int, complex_single*, global_index, int, int, std::uint64_t, std::int64_t,
                                     global_index, global_index);

void fill_unit_vectors(BlockVector& block, global_index first_row)
{
    const global_index n = block.num_rows();
    const int r = block.num_cols();
#pragma omp parallel for schedule(static)
    for (global_index i = 0; i < n; ++i)
        for (int c = 0; c < r; ++c) block(i, c) = complex_type(i == first_row + c ? 1.0 : 0.0, 0.0);
}

}  // namespace topokpm::numerics
