#include "app/cli/run_dos.hpp"

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>

#include "analysis/result_file.hpp"
#include "numerics/base/perf_model.hpp"
#include "numerics/kpm/kpm.hpp"
#include "numerics/lanczos/lanczos.hpp"
#include "numerics/spmmv/cuda_operator.hpp"
#include "numerics/spmmv/sell_operator.hpp"
#include "runtime/base/log.hpp"
#include "runtime/base/system.hpp"
#include "runtime/base/timer.hpp"
#include "runtime/device/device.hpp"
#include "topokpm/config.hpp"

namespace topokpm::app {
namespace {

std::string utc_now()
{
    char buf[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    return buf;
}

std::string fmt(const char* format, double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

struct MemoryEstimate {
    double matrix_bytes = 0;
    double vector_bytes = 0;
    double total() const { return matrix_bytes + vector_bytes; }
};

MemoryEstimate estimate_memory(const RunConfig& cfg, const hamiltonians::Model& model)
{
    const double n = static_cast<double>(model.num_rows());
    const double nnz = static_cast<double>(model.estimated_nonzeros());
    MemoryEstimate e;
    switch (cfg.matrix) {
    case MatrixKind::Free: e.matrix_bytes = 8.0 * n; break;  // at most one potential per row
    // values (16 B) + 32-bit columns, padding assumed small (sigma-sorted), chunk data and
    // the row permutation; the row generator's buffers are negligible.
    default: e.matrix_bytes = 20.0 * nnz * 1.05 + 8.0 * n; break;
    }
    const int width = cfg.trace == TraceKind::Exact
                          ? static_cast<int>(std::min<double>(cfg.num_vectors, n))
                          : cfg.num_vectors;
    e.vector_bytes = 2.0 * 16.0 * n * width + 3.0 * 16.0 * n;  // KPM block pair + Lanczos vectors
    return e;
}

}  // namespace

void run_dos(const RunConfig& cfg)
{
    const double t_start = wall_seconds();
    const std::string start_time = utc_now();
    log::set_quiet(cfg.quiet);
    if (cfg.threads > 0) omp_set_num_threads(cfg.threads);
    const int threads = omp_get_max_threads();
    PhaseTimers timers;

    // 1. Validate everything and size the run before allocating anything.
    std::unique_ptr<hamiltonians::Model> model = hamiltonians::make_model(cfg.model);
    const global_index n = model->num_rows();
    TOPOKPM_USER_REQUIRE(cfg.trace != TraceKind::Exact || n <= 2'000'000, "--trace exact with N = ", n,
                         " rows needs N sweeps blocks; allowed for N <= 2000000 (use --trace stochastic)");
    analysis::check_output_writable(cfg.output);
    if (!cfg.export_matrix.empty()) analysis::check_output_writable(cfg.export_matrix, "--export-matrix");
    const MemoryEstimate mem = estimate_memory(cfg, *model);
    const double available = cfg.memory_limit_gib > 0 ? cfg.memory_limit_gib * 1024.0 * 1024.0 * 1024.0
                                                      : static_cast<double>(available_memory_bytes());
    require_memory(mem.total(), available,
                   detail::concat("this run (", model->params().name, ", N = ", n, " rows, matrix ",
                                  format_bytes(mem.matrix_bytes), ", vectors ", format_bytes(mem.vector_bytes), ")"));

    // --device cuda: fail before building anything when there is no GPU backend or device,
    // and when the run cannot fit the GPU (the matrix and the KPM blocks live there).
    std::string devices = "cpu";
    if (cfg.device == DeviceKind::Cuda) {
        std::string why;
        if (!device::cuda_compiled())
            throw InputError("--device cuda: this build has no CUDA kernels (configured with TOPOKPM_CUDA=OFF or "
                             "no nvcc found); use --device cpu");
        if (device::visible_device_count(&why) == 0)
            throw InputError("--device cuda: no CUDA device visible (" + why + "); use --device cpu");
        device::require_device_memory(mem.total(), 0, detail::concat("this run (", model->params().name, ", N = ", n,
                                                                     " rows, matrix ", format_bytes(mem.matrix_bytes),
                                                                     ", vectors ", format_bytes(mem.vector_bytes), ")"));
        devices = device::describe(0);
    }

    log::info("topokpm kpm-dos ", TOPOKPM_VERSION, " (git ", TOPOKPM_GIT_REVISION, "), ", threads, " OpenMP thread(s)");
    log::info("model       : ", model->params().name, " ", model->params().nx, "x", model->params().ny, "x",
              model->params().nz, " boundary ", model->params().boundary, ", N = ", n, " rows, nnz = ",
              model->estimated_nonzeros(), " (", fmt("%.2f", double(model->estimated_nonzeros()) / n), " per row)");

    // 2. The operator behind the Operator seam: KPM does not know which one runs.
    std::unique_ptr<Operator> op;
    std::shared_ptr<const numerics::SellMatrix> sell;
    timers.time("build", [&] {
        const bool cuda = cfg.device == DeviceKind::Cuda;
        if (cfg.matrix == MatrixKind::Free) {
            op = cuda ? numerics::make_cuda_stencil_operator(model->block_stencil(), 0) : model->make_matrix_free();
            return;
        }
        numerics::SellParams sp;
        // On the GPU a chunk is one warp (C = 32) whatever --sell-C says.
        if (cfg.matrix == MatrixKind::Sell) sp = {cuda ? 32 : cfg.sell_chunk_height, cfg.sell_sigma};
        else sp = {1, 1};
        sell = std::make_shared<numerics::SellMatrix>(numerics::SellMatrix::build(*model, 0, n, sp));
        if (cuda) op = numerics::make_cuda_sell_operator(sell, 0);
        else op = cfg.matrix == MatrixKind::Naive ? numerics::make_naive_operator(sell)
                                                  : numerics::make_sell_operator(sell);
    });
    const OperatorCost cost = op->cost();
    log::info("operator    : ", op->name(), ", ", format_bytes(cost.storage_bytes), " stored",
              sell ? detail::concat(", fill efficiency beta = ", fmt("%.4f", sell->fill_efficiency())) : std::string(),
              ", built in ", fmt("%.3f", timers.get("build")), " s");

    if (!cfg.export_matrix.empty()) {
        timers.time("export", [&] { hamiltonians::export_matrix_market(*model, cfg.export_matrix); });
        log::info("matrix      : written to ", cfg.export_matrix, " (Matrix Market)");
    }

    // 3. Spectral bounds and the KPM scaling.
    SpectralBounds bounds;
    AttributeList bounds_attrs;
    timers.time("bounds", [&] {
        if (cfg.bounds_method == BoundsMethod::User) {
            bounds = cfg.energy_range;
        } else if (cfg.bounds_method == BoundsMethod::Gershgorin) {
            bounds = gershgorin_bounds(*model);
        } else {
            const numerics::LanczosBounds lb =
                numerics::lanczos_bounds(*op, cfg.lanczos_steps, cfg.vector_seed, cfg.lanczos_margin);
            bounds = lb.bounds;
            bounds_attrs = {{"lanczos_iterations", std::int64_t(lb.iterations)},
                            {"lanczos_lowest_ritz", lb.lowest_ritz},
                            {"lanczos_highest_ritz", lb.highest_ritz},
                            {"lanczos_residual_low", lb.residual_low},
                            {"lanczos_residual_high", lb.residual_high}};
        }
    });
    const numerics::KpmScaling scaling = numerics::kpm_scaling(bounds, cfg.epsilon);
    log::info("bounds      : [", fmt("%.6f", bounds.lower), ", ", fmt("%.6f", bounds.upper), "] t by ",
              to_string(cfg.bounds_method), " (", fmt("%.3f", timers.get("bounds")), " s); scale a = ",
              fmt("%.6f", scaling.a), " t, b = ", fmt("%.6f", scaling.b), " t");

    // 4. Moments, with progress lines on long runs.
    const int width = cfg.trace == TraceKind::Exact ? static_cast<int>(std::min<global_index>(cfg.num_vectors, n))
                                                    : cfg.num_vectors;
    const double flops_per_moment_pair = perf::sweep_flops(cost.nonzeros, static_cast<double>(n), width);
    const double t_moments = wall_seconds();
    double last_report = t_moments;
    const numerics::KpmProgress progress = [&](int done, int total) {
        const double now = wall_seconds();
        if (now - last_report < cfg.progress_interval_s || done >= total) return;
        last_report = now;
        const double elapsed = now - t_moments;
        const double sweeps = std::max(1.0, done / 2.0);
        log::info("  moments ", done, "/", total, " (", fmt("%.0f", 100.0 * done / total), "%), elapsed ",
                  fmt("%.1f", elapsed), " s, ETA ", fmt("%.1f", elapsed * (total - done) / std::max(done, 1)),
                  " s, ", fmt("%.2f", sweeps * flops_per_moment_pair / elapsed * 1e-9), " Gflop/s");
    };
    numerics::KpmMoments km;
    timers.time("moments", [&] {
        km = cfg.trace == TraceKind::Exact
                 ? numerics::kpm_exact_trace(*op, cfg.num_moments, width, scaling, progress)
                 : numerics::kpm_stochastic_trace(*op, cfg.num_moments, cfg.num_vectors, cfg.vector_seed,
                                                  scaling, progress);
    });
    numerics::check_moments_bounded(km.moments);
    const double t_kernel = timers.get("moments");
    const double gflops = km.num_sweeps * flops_per_moment_pair / t_kernel * 1e-9;
    const double gbytes = km.num_sweeps * perf::sweep_bytes(cost.matrix_bytes, static_cast<double>(n), width) / t_kernel * 1e-9;
    log::info("moments     : M = ", cfg.num_moments, ", ", to_string(cfg.trace), " trace, ",
              cfg.trace == TraceKind::Exact ? n : cfg.num_vectors, " vectors, ", km.num_sweeps,
              " augmented sweeps of width ", km.block_width, " in ", fmt("%.3f", t_kernel), " s: ",
              fmt("%.2f", gflops), " Gflop/s, ", fmt("%.2f", gbytes), " GB/s (minimum traffic)");

    // 5. Reconstruction.
    analysis::Spectrum dos;
    double integral = 0.0;
    timers.time("reconstruct", [&] {
        const std::vector<double> g = analysis::damping_factors(cfg.kernel, cfg.num_moments, cfg.lorentz_lambda);
        if (cfg.energy_grid) {
            const EnergyGrid& eg = *cfg.energy_grid;
            dos.energy.resize(eg.num_points);
            for (int k = 0; k < eg.num_points; ++k)
                dos.energy[k] = eg.lower + (eg.upper - eg.lower) * k / (eg.num_points - 1);
            dos.rho = analysis::reconstruct_at(km.moments, g, dos.energy, scaling.a, scaling.b);
            integral = analysis::integral_trapezoid(dos.energy, dos.rho);
        } else {
            dos = analysis::reconstruct_chebyshev_grid(km.moments, g, cfg.energy_points, scaling.a, scaling.b);
            integral = analysis::integral_chebyshev_grid(dos, scaling.a, scaling.b);
        }
    });
    log::info("dos         : ", dos.energy.size(), " energies from ", fmt("%.4f", dos.energy.front()), " to ",
              fmt("%.4f", dos.energy.back()), " t, kernel ", analysis::to_string(cfg.kernel),
              ", integral of rho = ", fmt("%.12f", integral), cfg.energy_grid ? " (trapezoid on the user grid)" : "");

    // 6. The result file (spec §5), atomically.
    const double t_write = wall_seconds();
    analysis::ResultWriter out(cfg.output);
    out.write_attributes("/model", model->attributes());
    out.write_attributes("/kpm", {{"scale_a", scaling.a},
                                  {"scale_b", scaling.b},
                                  {"num_moments", std::int64_t(cfg.num_moments)},
                                  {"num_vectors", std::int64_t(km.num_vectors)},
                                  {"vector_seed", std::uint64_t(cfg.vector_seed)},
                                  {"num_rows", std::int64_t(n)},
                                  {"trace", to_string(cfg.trace)},
                                  {"epsilon", cfg.epsilon},
                                  {"bounds_method", to_string(cfg.bounds_method)},
                                  {"bounds_lower", bounds.lower},
                                  {"bounds_upper", bounds.upper}});
    if (!bounds_attrs.empty()) out.write_attributes("/kpm", bounds_attrs);
    out.write_doubles("/kpm/moments", km.moments, {std::uint64_t(cfg.num_moments)});
    if (!km.per_vector.empty() &&
        static_cast<std::int64_t>(km.per_vector.size()) <= cfg.per_vector_limit)
        out.write_doubles("/kpm/moments_per_vector", km.per_vector,
                          {std::uint64_t(km.num_vectors), std::uint64_t(cfg.num_moments)});
    out.write_doubles("/dos/energy", dos.energy, {dos.energy.size()});
    out.write_doubles("/dos/rho", dos.rho, {dos.rho.size()});
    out.write_attributes("/dos", {{"kernel", analysis::to_string(cfg.kernel)},
                                  {"lorentz_lambda", cfg.lorentz_lambda},
                                  {"grid", std::string(cfg.energy_grid ? "user" : "chebyshev")},
                                  {"integral", integral}});
    timers.add("write", wall_seconds() - t_write);
    AttributeList prov = {{"program", std::string("topokpm kpm-dos")},
                          {"program_version", std::string(TOPOKPM_VERSION)},
                          {"git_revision", std::string(TOPOKPM_GIT_REVISION)},
                          {"command_line", cfg.command_line},
                          {"input_file", cfg.config_path},
                          {"input_file_text", cfg.config_text},
                          {"ranks", std::int64_t(1)},
                          {"threads_per_rank", std::int64_t(threads)},
                          {"devices", devices},
                          {"operator", op->name()},
                          {"start_time", start_time},
                          {"end_time", utc_now()},
                          {"gflops", gflops},
                          {"gbytes_per_second", gbytes}};
    for (const auto& [phase, seconds] : timers.phases()) prov.push_back({"seconds_" + phase, seconds});
    prov.push_back({"seconds_total", wall_seconds() - t_start});
    out.write_attributes("/provenance", prov);
    out.commit();

    std::string phases;
    for (const auto& [phase, seconds] : timers.phases()) phases += " " + phase + " " + fmt("%.3f", seconds) + " s,";
    log::info("time        :", phases, " total ", fmt("%.3f", wall_seconds() - t_start), " s");
    log::info("memory      : ", format_bytes(mem.total()), " estimated (matrix ", format_bytes(mem.matrix_bytes),
              ", vectors ", format_bytes(mem.vector_bytes), ")");
    std::printf("result written to %s\n", cfg.output.c_str());
}

}  // namespace topokpm::app
