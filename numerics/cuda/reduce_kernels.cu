// Second-stage dot reduction (CUB BlockReduce over the per-block partials, fixed order),
// the dot workspace, strip-mining widths, and the unfused BLAS-1 kernels of the naive KPM
// stage used by the benchmark.

#include <cub/block/block_reduce.cuh>

#include "numerics/cuda/augmented_common.cuh"
#include "numerics/cuda/sweep_driver.cuh"

namespace topokpm::numerics::kernels::cuda {

namespace {

using detail::block_threads;

__global__ void __launch_bounds__(block_threads)
    reduce_partials_kernel(const double* __restrict__ partials, int grid, int w, double* __restrict__ results,
                           int num_cols, int c0)
{
    using BlockReduce = cub::BlockReduce<double, block_threads>;
    __shared__ typename BlockReduce::TempStorage storage;
    const int c = blockIdx.x, q = blockIdx.y;
    double sum = 0.0;
    for (int b = threadIdx.x; b < grid; b += block_threads)
        sum += partials[(static_cast<std::int64_t>(q) * grid + b) * w + c];
    const double total = BlockReduce(storage).Sum(sum);
    if (threadIdx.x == 0) results[q * num_cols + c0 + c] = total;
}

__global__ void axpby_shifted_kernel(std::int64_t n, double scale, double shift, double beta,
                                     const double2* __restrict__ t, const double2* __restrict__ x,
                                     double2* __restrict__ y)
{
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const double2 ti = t[i], xi = x[i];
        double yr = scale * (ti.x - shift * xi.x), yi = scale * (ti.y - shift * xi.y);
        if (beta != 0.0) {
            const double2 old = y[i];
            yr += beta * old.x;
            yi += beta * old.y;
        }
        y[i] = make_double2(yr, yi);
    }
}

/// <a_c|b_c> per column, partials as in the augmented kernels (slot q = 0 unused).
template <int W>
__global__ void __launch_bounds__(block_threads)
    column_dots_kernel(int num_rows, const double2* __restrict__ a, const double2* __restrict__ b, int ld, int c0,
                       double* __restrict__ partials)
{
    constexpr int rows_per_tile = block_threads / W;
    const int c = threadIdx.x % W, local = threadIdx.x / W;
    const int num_tiles = (num_rows + rows_per_tile - 1) / rows_per_tile;
    detail::DotAccumulator d;
    detail::for_each_tile(num_tiles, 1, [&](int tile) {
        const int row = tile * rows_per_tile + local;
        if (row >= num_rows) return;
        const std::int64_t i = static_cast<std::int64_t>(row) * ld + c0 + c;
        const double2 ai = a[i], bi = b[i];
        d.yx_re += ai.x * bi.x + ai.y * bi.y;
        d.yx_im += ai.x * bi.y - ai.y * bi.x;
    });
    detail::reduce_dots_to_partials<W>(d, partials);
}

template <int W>
int launch_column_dots(int num_rows, const complex_type* a, const complex_type* b, int ld, int c0,
                       DotWorkspace& workspace)
{
    auto kernel = column_dots_kernel<W>;
    const int grid = detail::grid_for(num_rows, W, detail::resident_grid(kernel));
    double* partials = workspace.partials(3 * static_cast<std::size_t>(grid) * W);
    kernel<<<grid, block_threads>>>(num_rows, reinterpret_cast<const double2*>(a),
                                    reinterpret_cast<const double2*>(b), ld, c0, partials);
    return grid;
}

}  // namespace

namespace detail {
void launch_reduce_partials(const double* partials, int grid, int w, double* results, int num_cols, int c0)
{
    reduce_partials_kernel<<<dim3(w, 3), block_threads>>>(partials, grid, w, results, num_cols, c0);
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
}
}  // namespace detail

double* DotWorkspace::partials(std::size_t doubles)
{
    if (doubles * sizeof(double) > partials_.bytes())
        partials_ = device::DeviceBuffer(doubles * sizeof(double), device_, "dot-product partials");
    return static_cast<double*>(partials_.data());
}

double* DotWorkspace::results(std::size_t doubles)
{
    if (doubles * sizeof(double) > results_.bytes())
        results_ = device::DeviceBuffer(doubles * sizeof(double), device_, "dot-product results");
    return static_cast<double*>(results_.data());
}


void axpby_shifted(std::int64_t n, double scale, double shift, double beta, const complex_type* t,
                   const complex_type* x, complex_type* y)
{
    const int grid = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 65536));
    axpby_shifted_kernel<<<std::max(grid, 1), 256>>>(n, scale, shift, beta, reinterpret_cast<const double2*>(t),
                                                     reinterpret_cast<const double2*>(x),
                                                     reinterpret_cast<double2*>(y));
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
}

std::vector<complex_type> column_dots(std::int64_t num_rows, int num_cols, const complex_type* a,
                                      const complex_type* b, DotWorkspace& workspace)
{
    AugmentedOps ops;
    ops.want_dots = true;
    DotSums sums;
    detail::run_strips(num_cols, ops, workspace, &sums, [&](auto width, const detail::SweepScalars& s, auto) {
        return launch_column_dots<decltype(width)::value>(static_cast<int>(num_rows), a, b, s.ld, s.c0, workspace);
    });
    return sums.yx;
}

}  // namespace topokpm::numerics::kernels::cuda
