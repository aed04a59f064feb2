#include "runtime/hetero/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "runtime/base/error.hpp"

namespace topokpm::hetero {

namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;
constexpr double mib = 1024.0 * 1024.0;

std::uint64_t halo_rows_of(const RowRange& r, std::uint64_t rows, std::uint64_t plane, bool periodic)
{
    const std::uint64_t own = r.size();
    if (periodic) {
        // [begin - plane, end + plane) wrapped onto [0, rows), minus the own rows.
        return std::min(rows, own + 2 * plane) - own;
    }
    const std::uint64_t below = r.begin - (r.begin >= plane ? r.begin - plane : 0);
    const std::uint64_t above = std::min(rows, r.end + plane) - r.end;
    return below + above;
}

std::string fixed(double v, int digits)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

}  // namespace

std::uint64_t ti_nnz(std::uint64_t nx, std::uint64_t ny, std::uint64_t nz)
{
    const std::uint64_t per_layer = nx * ny * 4;
    if (nz == 1) return 9 * per_layer;
    return 13 * per_layer * nz - 2 * 2 * per_layer;
}

Plan make_plan(const PlanInput& in)
{
    TOPOKPM_USER_REQUIRE(in.ranks >= 1, "{ranks} ", in.ranks, " must be at least 1");
    TOPOKPM_USER_REQUIRE(in.gpus >= 0 && in.gpus <= in.ranks, "{gpus} ", in.gpus, " must be in [0, {ranks} = ",
                         in.ranks, "] (each GPU is driven by one rank)");
    TOPOKPM_USER_REQUIRE(in.vectors >= 1, "number of random vectors R = ", in.vectors, " must be at least 1");
    TOPOKPM_USER_REQUIRE(in.moments >= 2 && in.moments % 2 == 0, "number of moments M = ", in.moments,
                         " must be even and at least 2");
    TOPOKPM_USER_REQUIRE(in.block >= 1 && in.nx >= 1 && in.ny >= 1 && in.nz >= 1, "lattice ", in.nx, "x", in.ny,
                         "x", in.nz, " with ", in.block, " orbitals per site must have every size at least 1");
    TOPOKPM_USER_REQUIRE(in.nx * in.ny * in.nz * in.block == in.rows, "rows ", in.rows, " != nx*ny*nz*block = ",
                         in.nx, "*", in.ny, "*", in.nz, "*", in.block);
    auto positive = [](double v) { return v > 0 && std::isfinite(v); };
    TOPOKPM_USER_REQUIRE(positive(in.network_gbs), "network bandwidth ", in.network_gbs, " GB/s must be positive");
    const std::size_t P = static_cast<std::size_t>(in.ranks);
    const std::size_t G = static_cast<std::size_t>(in.gpus);
    const bool any_cpu = G < P;
    if (any_cpu) {
        TOPOKPM_USER_REQUIRE(in.memory_gbs.size() == 1 || in.memory_gbs.size() == P, "memory bandwidth: ",
                             in.memory_gbs.size(), " values given, need 1 or one per rank (", P, ")");
        for (double b : in.memory_gbs)
            TOPOKPM_USER_REQUIRE(positive(b), "memory bandwidth ", b, " GB/s must be positive");
    }
    if (G > 0) {
        TOPOKPM_USER_REQUIRE(positive(in.gpu_memory_gbs), "GPU memory bandwidth ", in.gpu_memory_gbs,
                             " GB/s must be positive when {gpus} ", in.gpus, " is given");
        TOPOKPM_USER_REQUIRE(positive(in.host_device_gbs), "host-device bandwidth ", in.host_device_gbs,
                             " GB/s must be positive");
    }
    auto is_gpu = [&](std::size_t p) { return p >= P - G; };
    auto bandwidth_gbs = [&](std::size_t p) {
        if (is_gpu(p)) return in.gpu_memory_gbs;
        return in.memory_gbs.size() == 1 ? in.memory_gbs[0] : in.memory_gbs[p];
    };

    Plan plan;
    plan.input = in;
    if (in.weights.empty()) {
        for (std::size_t p = 0; p < P; ++p) plan.weights.push_back(bandwidth_gbs(p));
    } else {
        TOPOKPM_USER_REQUIRE(in.weights.size() == P, "{weights}: ", in.weights.size(), " weights for ", P, " ranks");
        plan.weights = in.weights;
    }
    const std::vector<RowRange> ranges = split_rows(in.rows, in.block, plan.weights);
    TOPOKPM_USER_REQUIRE(in.block_width >= 0, "block width W = ", in.block_width, " must be at least 1");
    TOPOKPM_USER_REQUIRE(in.matrix_bytes_per_nonzero >= 0 && in.matrix_bytes_per_row >= 0 && in.value_bytes > 0,
                         "operator cost coefficients ", in.matrix_bytes_per_nonzero, " B/nnz, ",
                         in.matrix_bytes_per_row, " B/row, ", in.value_bytes, " B/value");
    const std::uint64_t plane = in.ny * in.nz * in.block;
    const int width = in.block_width > 0 && in.block_width < in.vectors ? in.block_width : in.vectors;
    const double W = width;
    const double blocks = static_cast<double>((in.vectors + width - 1) / width);
    const double v = in.value_bytes;
    plan.ranks.resize(P);
    for (std::size_t p = 0; p < P; ++p) {
        RankPlan& rp = plan.ranks[p];
        rp.range = ranges[p];
        rp.gpu = is_gpu(p);
        const double rows = static_cast<double>(rp.range.size());
        rp.nnz = static_cast<std::uint64_t>(
            std::llround(static_cast<long double>(in.nnz) * rp.range.size() / in.rows));
        rp.halo_rows = P == 1 ? 0 : halo_rows_of(rp.range, in.rows, plane, in.periodic_x);
        const double halo = static_cast<double>(rp.halo_rows);
        rp.halo_bytes_per_sweep = v * halo * W;
        const double operator_bytes = in.matrix_bytes_per_nonzero * rp.nnz + in.matrix_bytes_per_row * rows;
        rp.memory_bytes = operator_bytes + 2 * v * rows * W + 2 * rp.halo_bytes_per_sweep;
        rp.sweep_bytes = operator_bytes + 3 * v * rows * W;
        const double sweep_seconds = rp.sweep_bytes / (bandwidth_gbs(p) * 1e9);
        double comm_seconds = rp.halo_bytes_per_sweep / (in.network_gbs * 1e9);
        if (rp.gpu) comm_seconds += 2 * rp.halo_bytes_per_sweep / (in.host_device_gbs * 1e9);
        rp.seconds_per_moment = blocks * (sweep_seconds + comm_seconds) / 2;
        rp.seconds_per_moment_overlap = blocks * std::max(sweep_seconds, comm_seconds) / 2;
        plan.seconds_per_moment = std::max(plan.seconds_per_moment, rp.seconds_per_moment);
        plan.seconds_per_moment_overlap = std::max(plan.seconds_per_moment_overlap, rp.seconds_per_moment_overlap);
        double& peak = rp.gpu ? plan.max_gpu_memory_bytes : plan.max_memory_bytes;
        peak = std::max(peak, rp.memory_bytes);
    }
    plan.total_seconds = in.moments * plan.seconds_per_moment;
    return plan;
}

void require_fits(const Plan& plan, double host_bytes_per_rank, double gpu_bytes_per_rank)
{
    for (std::size_t p = 0; p < plan.ranks.size(); ++p) {
        const RankPlan& r = plan.ranks[p];
        const double have = r.gpu ? gpu_bytes_per_rank : host_bytes_per_rank;
        if (r.gpu && gpu_bytes_per_rank <= 0) continue;
        if (r.memory_bytes > have)
            throw ResourceError(detail::concat("rank ", p, " (", r.gpu ? "gpu" : "cpu", ") of ", plan.ranks.size(),
                                               " needs ", fixed(r.memory_bytes / gib, 2), " GiB per rank, have ",
                                               fixed(have / gib, 2), " GiB", r.gpu ? " of device memory" : "",
                                               "; use more ranks or fewer vectors (R)"));
    }
}

std::string format_plan(const Plan& plan)
{
    const PlanInput& in = plan.input;
    std::ostringstream os;
    os << "plan: N = " << in.rows << " rows (" << in.nx << "x" << in.ny << "x" << in.nz << " sites x " << in.block
       << " orbitals, x " << (in.periodic_x ? "periodic" : "open") << "), nnz = " << in.nnz << ", R = " << in.vectors;
    if (in.block_width > 0 && in.block_width < in.vectors) os << " in blocks of W = " << in.block_width;
    os << ", M = " << in.moments << ", P = " << in.ranks << " ranks";
    if (in.gpus > 0) os << " (" << in.ranks - in.gpus << " cpu + " << in.gpus << " gpu)";
    os << "\n      bandwidth per rank: memory ";
    if (in.gpus < in.ranks) {
        if (in.memory_gbs.size() == 1)
            os << fixed(in.memory_gbs[0], 1) << " GB/s (cpu)";
        else
            os << "as given per rank (cpu)";
    }
    if (in.gpus > 0)
        os << (in.gpus < in.ranks ? ", " : "") << fixed(in.gpu_memory_gbs, 1) << " GB/s (gpu), host-device "
           << fixed(in.host_device_gbs, 1) << " GB/s";
    os << ", network " << fixed(in.network_gbs, 1) << " GB/s\n";
    bool weighted = false;
    for (double w : plan.weights) weighted = weighted || w != plan.weights.front();
    if (weighted && plan.weights.size() <= 16) {
        os << "      weights";
        for (std::size_t p = 0; p < plan.weights.size(); ++p) os << (p ? ":" : " ") << plan.weights[p];
        os << "\n";
    }

    char line[256];
    const char* header_fmt = "%-9s %11s %12s %12s %10s %13s %12s %12s %12s\n";
    const char* row_fmt = "%-9s %11.0f %12.0f %12.0f %10.3f %13.1f %12.3f %12.3f %12.3f\n";
    std::snprintf(line, sizeof line, header_fmt, "rank", "rows [1]", "nnz [1]", "halo [rows]", "mem [GiB]",
                  "halo [MiB/sw]", "t/mom [ms]", "overlap [ms]", "sweep [MiB]");
    os << line;
    constexpr int cols = 8;
    auto values = [](const RankPlan& r, double* v) {
        v[0] = static_cast<double>(r.range.size());
        v[1] = static_cast<double>(r.nnz);
        v[2] = static_cast<double>(r.halo_rows);
        v[3] = r.memory_bytes / gib;
        v[4] = r.halo_bytes_per_sweep / mib;
        v[5] = r.seconds_per_moment * 1e3;
        v[6] = r.seconds_per_moment_overlap * 1e3;
        v[7] = r.sweep_bytes / mib;
    };
    auto emit = [&](const std::string& label, const double* v) {
        std::snprintf(line, sizeof line, row_fmt, label.c_str(), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
        os << line;
    };
    if (plan.ranks.size() <= 16) {
        for (std::size_t p = 0; p < plan.ranks.size(); ++p) {
            double v[cols];
            values(plan.ranks[p], v);
            emit(std::to_string(p) + (plan.ranks[p].gpu ? " gpu" : " cpu"), v);
        }
    } else {
        // Column-wise min / max / mean over the ranks of each kind.
        for (int kind = 0; kind < 2; ++kind) {
            double lo[cols], hi[cols], sum[cols];
            for (int c = 0; c < cols; ++c) {
                lo[c] = INFINITY;
                hi[c] = -INFINITY;
                sum[c] = 0;
            }
            double n = 0;
            for (const RankPlan& r : plan.ranks) {
                if (r.gpu != (kind == 1)) continue;
                double v[cols];
                values(r, v);
                for (int c = 0; c < cols; ++c) {
                    lo[c] = std::min(lo[c], v[c]);
                    hi[c] = std::max(hi[c], v[c]);
                    sum[c] += v[c];
                }
                n += 1;
            }
            if (n == 0) continue;
            for (double& x : sum) x /= n;
            const std::string k = kind == 1 ? " gpu" : " cpu";
            emit("min" + k, lo);
            emit("max" + k, hi);
            emit("mean" + k, sum);
        }
    }
    os << "total: " << fixed(plan.seconds_per_moment * 1e3, 3) << " ms per moment (slowest rank; "
       << fixed(plan.seconds_per_moment_overlap * 1e3, 3) << " ms with the halo exchange overlapped), "
       << fixed(plan.total_seconds, 2) << " s for " << in.moments << " moments; memory per rank up to "
       << fixed(plan.max_memory_bytes / gib, 3) << " GiB";
    if (in.gpus > 0) os << " (cpu), " << fixed(plan.max_gpu_memory_bytes / gib, 3) << " GiB (gpu device)";
    os << "\n";
    return os.str();
}

}  // namespace topokpm::hetero
