// cuda-spmmv-bench: the GPU augmented SpMMV against the memory roofline and cuSPARSE.
//
//   cuda-spmmv-bench [--lattice 200x200x40] [--reps 20] [--device 0] [--only-spmmv]
//
// 1. Device bandwidth: cudaMemcpy device-to-device and a triad kernel (bytes read + written).
// 2. The ti model (models.md §2, default 200x200x40 = 6.4 M rows, ~13 nnz/row), for
//    R = 1, 2, 4, 8, 16, 32: one KPM sweep y = 2/a (H - b) x - y with both dots, stored
//    SELL-32-256 and matrix-free. Gflop/s and GB/s from the minimum-traffic model
//    (matrix nnz (16 + 4) bytes + 48 bytes per row and vector; 8 nnz + 34 N flops per
//    vector), the roofline P* = b / B_min(R) with b the measured copy bandwidth.
// 3. cuSPARSE SpMM (CSR, row-major dense blocks) on the same matrix: the vendor baseline.
//    It computes only Y = A X (no shift, scale, axpby or dots); compared per column.
// 4. The KPM stage ladder (seed 004 Fig. 11): naive (SpMV, then axpby and two dot kernels),
//    augmented SpMV (R = 1, fused), augmented SpMMV (R = 32), as time per moment and vector.
// Timing: CUDA events around each call, after a warm-up, median of the repetitions.

#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hamiltonians/model.hpp"
#include "numerics/spmmv/sell_kernels.hpp"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "numerics/kpm/start_vectors.hpp"
#include "numerics/spmmv/cuda_operator.hpp"
#include "runtime/base/timer.hpp"
#include "runtime/device/cuda_check.hpp"
#include "runtime/device/device.hpp"

using namespace topokpm;

namespace {

#define CUSPARSE_CHECK(call)                                                                           \
    do {                                                                                               \
        const cusparseStatus_t st_ = (call);                                                           \
        if (st_ != CUSPARSE_STATUS_SUCCESS)                                                            \
            throw CudaError(detail::concat(#call, " returned ", int(st_), " (", cusparseGetErrorString(st_), ")")); \
    } while (0)

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Median seconds of `reps` calls of f, CUDA events around each call, after a warm-up of at
/// least 3 calls and 50 ms: a GPU idling at a low SM clock (345 MHz seen on the H200) takes
/// some milliseconds of load to reach its boost clock, longer than one call of a
/// sub-millisecond kernel (the table's first row, SELL R = 1, read 0.82 and 0.72 of the copy
/// bandwidth in two runs on 2026-11-28 with a single warm-up call).
template <class F>
double time_median(int reps, F&& f)
{
    cudaEvent_t start, stop;
    TOPOKPM_CUDA_CHECK(cudaEventCreate(&start));
    TOPOKPM_CUDA_CHECK(cudaEventCreate(&stop));
    const auto warm_start = std::chrono::steady_clock::now();
    for (int i = 0; i < 3 || std::chrono::steady_clock::now() - warm_start < std::chrono::milliseconds(50); ++i) {
        f();
        TOPOKPM_CUDA_CHECK(cudaDeviceSynchronize());
    }
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        TOPOKPM_CUDA_CHECK(cudaEventRecord(start));
        f();
        TOPOKPM_CUDA_CHECK(cudaEventRecord(stop));
        TOPOKPM_CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0.f;
        TOPOKPM_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        t.push_back(ms * 1e-3);
    }
    TOPOKPM_CUDA_CHECK(cudaEventDestroy(start));
    TOPOKPM_CUDA_CHECK(cudaEventDestroy(stop));
    return median(t);
}

// a = b + s c over doubles, 16-byte accesses: 24 bytes moved per element.
__global__ void triad_kernel(std::int64_t n2, double2* __restrict__ a, const double2* __restrict__ b,
                             const double2* __restrict__ c, double s)
{
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n2;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const double2 bi = b[i], ci = c[i];
        a[i] = make_double2(bi.x + s * ci.x, bi.y + s * ci.y);
    }
}

__global__ void fill_kernel(std::int64_t n, double* p, double v)
{
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
        p[i] = v + 1e-9 * static_cast<double>(i % 1000);
}

struct Bandwidth {
    double copy_gb_s = 0, triad_gb_s = 0;
};

Bandwidth measure_bandwidth(int device, int reps)
{
    const std::size_t bytes = std::size_t(1) << 30;  // 1 GiB per array: far beyond the 50 MB L2
    device::DeviceBuffer a(bytes, device, "stream a"), b(bytes, device, "stream b"), c(bytes, device, "stream c");
    const std::int64_t n = static_cast<std::int64_t>(bytes / sizeof(double));
    fill_kernel<<<1024, 256>>>(n, static_cast<double*>(b.data()), 1.0);
    fill_kernel<<<1024, 256>>>(n, static_cast<double*>(c.data()), 2.0);
    TOPOKPM_CUDA_CHECK(cudaDeviceSynchronize());
    Bandwidth bw;
    const double t_copy = time_median(reps, [&] { device::copy_device_to_device(a.data(), b.data(), bytes); });
    bw.copy_gb_s = 2.0 * bytes / t_copy * 1e-9;
    int sms = 0;
    TOPOKPM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const double t_triad = time_median(reps, [&] {
        triad_kernel<<<sms * 8, 256>>>(n / 2, static_cast<double2*>(a.data()), static_cast<const double2*>(b.data()),
                                       static_cast<const double2*>(c.data()), 0.5);
    });
    TOPOKPM_CUDA_CHECK(cudaGetLastError());
    bw.triad_gb_s = 3.0 * bytes / t_triad * 1e-9;
    return bw;
}

/// CSR of the model (cuSPARSE input), built from the rows in parallel.
struct Csr {
    std::vector<int> row_ptr, cols;
    std::vector<complex_type> vals;
};

Csr build_csr(const hamiltonians::Model& model)
{
    const global_index n = model.num_rows();
    Csr csr;
    csr.row_ptr.assign(static_cast<size_t>(n) + 1, 0);
    const int maxlen = model.max_row_length();
#pragma omp parallel
    {
        std::vector<global_index> c(maxlen);
        std::vector<complex_type> v(maxlen);
#pragma omp for schedule(static)
        for (global_index i = 0; i < n; ++i) csr.row_ptr[i + 1] = model.row(i, c.data(), v.data());
    }
    for (global_index i = 0; i < n; ++i) csr.row_ptr[i + 1] += csr.row_ptr[i];
    csr.cols.resize(csr.row_ptr[n]);
    csr.vals.resize(csr.row_ptr[n]);
#pragma omp parallel
    {
        std::vector<global_index> c(maxlen);
#pragma omp for schedule(static)
        for (global_index i = 0; i < n; ++i) {
            const int len = model.row(i, c.data(), csr.vals.data() + csr.row_ptr[i]);
            for (int k = 0; k < len; ++k) csr.cols[csr.row_ptr[i] + k] = static_cast<int>(c[k]);
        }
    }
    return csr;
}

struct Options {
    std::string lattice = "200x200x40";
    int reps = 20;
    int device = 0;
    bool only_spmmv = false;  ///< skip cuSPARSE and the ladder (tuning runs)
};

Options parse(int argc, char** argv)
{
    Options o;
    for (int i = 1; i < argc; i += 2) {
        const std::string key = argv[i];
        if (key == "--only-spmmv") {
            o.only_spmmv = true;
            --i;
            continue;
        }
        if (i + 1 >= argc) throw InputError("option " + key + " needs a value");
        if (key == "--lattice") o.lattice = argv[i + 1];
        else if (key == "--reps") o.reps = std::atoi(argv[i + 1]);
        else if (key == "--device") o.device = std::atoi(argv[i + 1]);
        else throw InputError("unknown option " + key + " (use --lattice NxxNyxNz, --reps N, --device D)");
    }
    return o;
}

}  // namespace

int main(int argc, char** argv)
try {
    const Options opt = parse(argc, argv);
    std::string why;
    if (device::visible_device_count(&why) == 0) {
        std::printf("cuda-spmmv-bench: no CUDA device visible (%s)\n", why.c_str());
        return 0;
    }
    device::set_device(opt.device);
    const device::DeviceProperties prop = device::device_properties(opt.device);
    std::printf("# cuda-spmmv-bench on %s, datasheet peak %.0f GB/s, L2 %.0f MB\n", device::describe(opt.device).c_str(),
                prop.peak_bandwidth_gb_s, prop.l2_cache_bytes / 1e6);

    // 1. bandwidth
    const Bandwidth bw = measure_bandwidth(opt.device, opt.reps);
    const double b = bw.copy_gb_s;
    std::printf("\n## Device bandwidth (1 GiB arrays, median of %d)\n\n", opt.reps);
    std::printf("| kernel | GB/s (read + write) |\n|---|---|\n| cudaMemcpy D2D | %.0f |\n| triad a = b + s c | %.0f |\n",
                bw.copy_gb_s, bw.triad_gb_s);
    std::printf("\nRoofline below uses b = %.0f GB/s (the copy).\n", b);

    // 2. model and operators
    hamiltonians::ModelParams p;
    p.name = "ti";
    {
        int d[3] = {0, 0, 0};
        if (std::sscanf(opt.lattice.c_str(), "%dx%dx%d", &d[0], &d[1], &d[2]) != 3)
            throw InputError("--lattice " + opt.lattice + ": expected NxxNyxNz");
        p.nx = d[0];
        p.ny = d[1];
        p.nz = d[2];
    }
    p.disorder = 0.5;  // realistic values, not zeros
    const auto model = hamiltonians::make_model(p);
    const global_index n = model->num_rows();
    double t0 = wall_seconds();
    auto sell = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, {32, 256}));
    const double t_build = wall_seconds() - t0;
    const double nnz = static_cast<double>(sell->num_nonzeros());
    t0 = wall_seconds();
    const auto op_sell = numerics::make_cuda_sell_operator(sell, opt.device);
    const auto op_free = numerics::make_cuda_stencil_operator(model->block_stencil(), opt.device);
    const double t_upload = wall_seconds() - t0;
    std::printf("\n## ti %s: N = %lld rows, nnz = %.0f (%.2f per row), SELL-32-256 beta = %.4f "
                "(host build %.1f s, operators made in %.1f s)\n",
                opt.lattice.c_str(), static_cast<long long>(n), nnz, nnz / n, sell->fill_efficiency(), t_build,
                t_upload);

    const double a_scale = 7.0;  // a KPM-like scaling; the values do not change the traffic
    const AugmentedOps step{2.0 / a_scale, 0.1, -1.0, true};
    const int widths[] = {1, 2, 4, 8, 16, 32};
    std::printf("\n## Augmented SpMMV, one KPM sweep (y = 2/a (H - b) x - y, both dots), median of %d\n\n",
                opt.reps);
    std::printf("| operator | R | ms/sweep | Gflop/s | GB/s | B_min (B/flop) | P* = b/B_min (Gflop/s) | P/P* |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    double t_sell_r1 = 0, t_sell_r32 = 0, t_free_r1 = 0, t_free_r32 = 0;
    for (const int r : widths) {
        BlockVector x(n, r), y(n, r);
        numerics::fill_random_phase_vectors(x, 1, 0, n);
        numerics::fill_random_phase_vectors(y, 2, 0, n);
        for (const Operator* op : {op_sell.get(), op_free.get()}) {
            DotSums dots;
            const double t = time_median(opt.reps, [&] { op->apply(x, y, step, &dots); });
            const double flops = (8.0 * nnz + 34.0 * n) * r;
            const double matrix_bytes = op == op_sell.get() ? 20.0 * nnz : op->cost().matrix_bytes;
            const double bytes = matrix_bytes + 48.0 * n * r;
            const double bmin = bytes / flops;
            const double pstar = b / bmin;
            std::printf("| %s | %d | %.3f | %.0f | %.0f | %.3f | %.0f | %.2f |\n", op->name().c_str(), r, t * 1e3,
                        flops / t * 1e-9, bytes / t * 1e-9, bmin, pstar, flops / t * 1e-9 / pstar);
            const bool is_sell = op == op_sell.get();
            if (r == 1) (is_sell ? t_sell_r1 : t_free_r1) = t;
            if (r == 32) (is_sell ? t_sell_r32 : t_free_r32) = t;
        }
        std::fflush(stdout);
    }

    if (opt.only_spmmv) return 0;

    // 3. cuSPARSE SpMM, Y = A X, row-major blocks.
    const Csr csr = build_csr(*model);
    device::DeviceBuffer d_ptr(csr.row_ptr.size() * sizeof(int), opt.device, "CSR row pointers");
    device::DeviceBuffer d_col(csr.cols.size() * sizeof(int), opt.device, "CSR columns");
    device::DeviceBuffer d_val(csr.vals.size() * sizeof(complex_type), opt.device, "CSR values");
    d_ptr.upload(csr.row_ptr.data(), d_ptr.bytes());
    d_col.upload(csr.cols.data(), d_col.bytes());
    d_val.upload(csr.vals.data(), d_val.bytes());
    cusparseHandle_t handle;
    CUSPARSE_CHECK(cusparseCreate(&handle));
    cusparseSpMatDescr_t mat;
    CUSPARSE_CHECK(cusparseCreateCsr(&mat, n, n, static_cast<std::int64_t>(csr.cols.size()), d_ptr.data(), d_col.data(),
                                     d_val.data(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                     CUDA_C_64F));
    std::printf("\n## cuSPARSE SpMM (CSR, row-major X and Y, Y = A X only: no shift/scale/axpby/dots), median of %d\n\n",
                opt.reps);
    std::printf("| algorithm | R | ms/call | ms per column | Gflop/s (8 nnz R) | GB/s (20 nnz + 32 N R) | "
                "augmented SELL ms per column (full KPM sweep) | max |y - y_sell| |\n|---|---|---|---|---|---|---|---|\n");
    for (const int r : widths) {
        BlockVector x(n, r), y(n, r), y_ref(n, r);
        numerics::fill_random_phase_vectors(x, 1, 0, n);
        // reference Y = A X from our SELL kernel
        op_sell->apply(x, y_ref, {1.0, 0.0, 0.0, false}, nullptr);
        DotSums dots;
        BlockVector ya(n, r);
        numerics::fill_random_phase_vectors(ya, 3, 0, n);
        const double t_aug = time_median(opt.reps, [&] { op_sell->apply(x, ya, step, &dots); });
        for (const auto& choice : {std::pair{CUSPARSE_SPMM_ALG_DEFAULT, "DEFAULT"},
                                   std::pair{CUSPARSE_SPMM_CSR_ALG2, "CSR_ALG2"}}) {
            const cusparseSpMMAlg_t alg = choice.first;
            const char* alg_name = choice.second;
            cusparseDnMatDescr_t mx, my;
            CUSPARSE_CHECK(cusparseCreateDnMat(&mx, n, r, r, const_cast<complex_type*>(x.device_data_read(opt.device)),
                                               CUDA_C_64F, CUSPARSE_ORDER_ROW));
            CUSPARSE_CHECK(cusparseCreateDnMat(&my, n, r, r, y.device_data_overwrite(opt.device), CUDA_C_64F,
                                               CUSPARSE_ORDER_ROW));
            const cuDoubleComplex one = make_cuDoubleComplex(1.0, 0.0), zero = make_cuDoubleComplex(0.0, 0.0);
            size_t buffer_bytes = 0;
            const cusparseStatus_t st =
                cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                        &one, mat, mx, &zero, my, CUDA_C_64F, alg, &buffer_bytes);
            if (st != CUSPARSE_STATUS_SUCCESS) {
                std::printf("| %s | %d | not supported (%s) | | | | | |\n", alg_name, r, cusparseGetErrorString(st));
                cusparseDestroyDnMat(mx);
                cusparseDestroyDnMat(my);
                continue;
            }
            device::DeviceBuffer work(std::max<size_t>(buffer_bytes, 16), opt.device, "cuSPARSE workspace");
            auto call = [&] {
                CUSPARSE_CHECK(cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                            &one, mat, mx, &zero, my, CUDA_C_64F, alg, work.data()));
            };
            // Optional; a no-op for algorithms without preprocessing, so its status is not checked.
            (void)cusparseSpMM_preprocess(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                          &one, mat, mx, &zero, my, CUDA_C_64F, alg, work.data());
            const double t = time_median(opt.reps, call);
            const BlockVector& yc = y;
            const BlockVector& yr = y_ref;
            double err = 0;
            for (global_index i = 0; i < n; i += 97)
                for (int c = 0; c < r; ++c) err = std::max(err, std::abs(yc(i, c) - yr(i, c)));
            std::printf("| %s | %d | %.3f | %.4f | %.0f | %.0f | %.4f | %.1e |\n", alg_name, r, t * 1e3, t * 1e3 / r,
                        8.0 * nnz * r / t * 1e-9, (20.0 * nnz + 32.0 * n * r) / t * 1e-9, t_aug * 1e3 / r, err);
            std::fflush(stdout);
            cusparseDestroyDnMat(mx);
            cusparseDestroyDnMat(my);
        }
    }
    cusparseDestroySpMat(mat);
    cusparseDestroy(handle);

    // 4. KPM stage ladder.
    std::printf("\n## KPM stage ladder (seed 004 Fig. 11): time per moment per vector (one sweep = 2 moments)\n\n");
    std::printf("| stage | operator | R | ms/sweep | us per moment per vector |\n|---|---|---|---|---|\n");
    for (const Operator* op : {op_sell.get(), op_free.get()}) {
        BlockVector x(n, 1), y(n, 1), t(n, 1);
        numerics::fill_random_phase_vectors(x, 1, 0, n);
        numerics::fill_random_phase_vectors(y, 2, 0, n);
        numerics::kernels::cuda::DotWorkspace ws(opt.device);
        // naive: SpMV into t, then y = scale (t - shift x) + beta y, then <x|x> and <y|x>.
        const double t_naive = time_median(opt.reps, [&] {
            op->apply(x, t, {1.0, 0.0, 0.0, false}, nullptr);
            const complex_type* xd = x.device_data_read(opt.device);
            numerics::kernels::cuda::axpby_shifted(n, step.scale, step.shift, step.beta, t.device_data_read(opt.device),
                                                   xd, y.device_data_read_write(opt.device));
            numerics::kernels::cuda::column_dots(n, 1, xd, xd, ws);
            numerics::kernels::cuda::column_dots(n, 1, y.device_data_read(opt.device), xd, ws);
        });
        const double t1 = op == op_sell.get() ? t_sell_r1 : t_free_r1;
        const double t32 = op == op_sell.get() ? t_sell_r32 : t_free_r32;
        std::printf("| naive (SpMV + axpby + 2 dots) | %s | 1 | %.3f | %.3f |\n", op->name().c_str(), t_naive * 1e3,
                    t_naive / 2.0 * 1e6);
        std::printf("| augmented SpMV (fused dots) | %s | 1 | %.3f | %.3f |\n", op->name().c_str(), t1 * 1e3, t1 / 2.0 * 1e6);
        std::printf("| augmented SpMMV (fused dots) | %s | 32 | %.3f | %.3f |\n", op->name().c_str(), t32 * 1e3,
                    t32 / 64.0 * 1e6);
    }
    std::printf("\n(us per moment per vector = sweep time / (2 R); lower is better.)\n");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "cuda-spmmv-bench: error: %s\n", e.what());
    return 1;
}
