#include "runtime/hetero/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "runtime/base/error.hpp"

namespace topokpm::hetero {

namespace {

constexpr double gib = 1024.0 * 1024.0 * 1024.0;
constexpr double mib = 1024.0 * 1024.0;

/// The 1-D halo of rows `r`: the rows within `reach` (x_reach planes of rows) of either end.
std::uint64_t halo_rows_of(const RowRange& r, std::uint64_t rows, std::uint64_t reach, bool periodic)
{
    const std::uint64_t own = r.size();
    if (periodic) {
        // [begin - reach, end + reach) wrapped onto [0, rows), minus the own rows.
        return std::min(rows, own + 2 * reach) - own;
    }
    const std::uint64_t below = r.begin - (r.begin >= reach ? r.begin - reach : 0);
    const std::uint64_t above = std::min(rows, r.end + reach) - r.end;
    return below + above;
}

std::string fixed(double v, int digits)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

}  // namespace

ProcessGrid make_grid(std::uint64_t nx, std::uint64_t ny, int px, int py)
{
    TOPOKPM_USER_REQUIRE(px >= 1 && py >= 1 && std::uint64_t(px) <= nx && std::uint64_t(py) <= ny, "process grid ",
                         px, "x", py, " on ", nx, "x", ny, " (x, y) sites: every rank needs at least one site");
    ProcessGrid g;
    g.px = px;
    g.py = py;
    for (auto [n, parts, cuts] : {std::tuple{nx, px, &g.x_cuts}, std::tuple{ny, py, &g.y_cuts}}) {
        cuts->assign(1, 0);
        for (const RowRange& r : split_rows(n, 1, std::vector<double>(static_cast<size_t>(parts), 1.0)))
            cuts->push_back(r.end);
    }
    return g;
}

TileHalo tile_halo(const LatticeHalo& lat, const ProcessGrid& grid, int rank)
{
    TOPOKPM_REQUIRE(rank >= 0 && rank < grid.ranks() && grid.x_cuts.size() == size_t(grid.px) + 1 &&
                        grid.y_cuts.size() == size_t(grid.py) + 1,
                    "rank ", rank, " of a ", grid.px, "x", grid.py, " grid");
    const int i = rank / grid.py, j = rank % grid.py;
    std::int64_t reach = 0;  // only sites this close to the tile couple to it
    for (const HaloCoupling& c : lat.couplings) reach = std::max<std::int64_t>({reach, std::abs(c.dx), std::abs(c.dy)});
    // A halo site is outside the tile, and some coupling's source (site - d, folded) is in
    // it. Along each axis a coordinate matters only through its distance to the tile's two
    // edges, so the candidates are the coordinates within `reach` of an edge, one by one,
    // and the deep inside [lo + reach, hi - reach) as one representative counted
    // hi - lo - 2 reach times (every source of such a coordinate lies inside the tile's
    // range). Cost O((4 reach + 1)^2 couplings) per tile, whatever the lattice's length:
    // a plan of 1e14 rows answers at once and allocates nothing proportional to it.
    struct Axis {
        std::int64_t lo, hi, n;
        bool periodic;
        const std::vector<std::uint64_t>* cuts;
        // fold v onto [0, n); false when it falls off an open edge
        bool fold(std::int64_t v, std::int64_t& out) const
        {
            if (v >= 0 && v < n) return out = v, true;
            if (!periodic) return false;
            out = ((v % n) + n) % n;
            return true;
        }
        bool inside(std::int64_t v) const { return v >= lo && v < hi; }
        int owner(std::int64_t v) const
        {
            return static_cast<int>(std::upper_bound(cuts->begin(), cuts->end(), std::uint64_t(v)) - cuts->begin() - 1);
        }
        /// (folded coordinate, multiplicity), each coordinate once.
        std::vector<std::pair<std::int64_t, std::uint64_t>> candidates(std::int64_t r) const
        {
            std::vector<std::pair<std::int64_t, std::uint64_t>> c;
            auto band = [&](std::int64_t from, std::int64_t to) {
                for (std::int64_t v = from; v < to; ++v) {
                    if (v >= lo + r && v < hi - r) continue;  // the deep inside, below
                    std::int64_t f = 0;
                    if (fold(v, f)) c.push_back({f, 1});
                }
            };
            band(lo - r, lo + r);
            band(std::max(lo + r, hi - r), hi + r);
            std::sort(c.begin(), c.end());
            c.erase(std::unique(c.begin(), c.end()), c.end());
            if (hi - lo > 2 * r) c.push_back({lo + r, std::uint64_t(hi - lo - 2 * r)});
            return c;
        }
    };
    const Axis ax{std::int64_t(grid.x_cuts[i]), std::int64_t(grid.x_cuts[i + 1]), std::int64_t(lat.nx), lat.periodic_x,
                  &grid.x_cuts};
    const Axis ay{std::int64_t(grid.y_cuts[j]), std::int64_t(grid.y_cuts[j + 1]), std::int64_t(lat.ny), lat.periodic_y,
                  &grid.y_cuts};
    TileHalo h;
    std::vector<std::uint64_t> per_rank(static_cast<size_t>(grid.ranks()), 0);
    const auto xs = ax.candidates(reach), ys = ay.candidates(reach);
    for (const auto& [x, wx] : xs)
        for (const auto& [y, wy] : ys) {
            if (ax.inside(x) && ay.inside(y)) continue;
            std::uint32_t mask = 0;
            for (const HaloCoupling& c : lat.couplings) {
                std::int64_t sx = 0, sy = 0;
                if (ax.fold(x - c.dx, sx) && ay.fold(y - c.dy, sy) && ax.inside(sx) && ay.inside(sy)) mask |= c.columns;
            }
            const std::uint64_t rows = std::uint64_t(__builtin_popcount(mask)) * lat.nz * wx * wy;
            if (rows == 0) continue;
            per_rank[static_cast<size_t>(ax.owner(x) * grid.py + ay.owner(y))] += rows;
            h.rows += rows;
        }
    for (int q = 0; q < grid.ranks(); ++q)
        if (per_rank[size_t(q)] > 0) h.per_neighbour.push_back({q, per_rank[size_t(q)]});
    return h;
}

ProcessGrid choose_grid(const LatticeHalo& lat, int ranks)
{
    TOPOKPM_USER_REQUIRE(ranks >= 1 && std::uint64_t(ranks) <= lat.nx * lat.ny, "{decomposition} 2d: ", ranks,
                         " ranks on ", lat.nx, "x", lat.ny, " (x, y) sites: every rank needs at least one (x, y) site");
    ProcessGrid best;
    std::uint64_t best_max = 0, best_total = 0;
    for (int px = ranks; px >= 1; --px) {  // larger px first: px x 1 wins ties
        if (ranks % px != 0 || std::uint64_t(px) > lat.nx || std::uint64_t(ranks / px) > lat.ny) continue;
        const ProcessGrid g = make_grid(lat.nx, lat.ny, px, ranks / px);
        std::uint64_t worst = 0, total = 0;
        // With couplings of reach 1 a tile's halo depends only on its widths, its neighbours'
        // widths and which lattice edges it touches; equal cuts give a handful of such
        // shapes, so each is counted once (1024 ranks of 1600 x 1600: milliseconds).
        std::map<std::vector<std::uint64_t>, std::uint64_t> shapes;
        int reach = 0;
        for (const HaloCoupling& c : lat.couplings) reach = std::max({reach, std::abs(c.dx), std::abs(c.dy)});
        auto width = [](const std::vector<std::uint64_t>& cuts, int k) {
            const int n = static_cast<int>(cuts.size()) - 1;
            k = (k + n) % n;
            return cuts[size_t(k) + 1] - cuts[size_t(k)];
        };
        for (int q = 0; q < ranks; ++q) {
            const int i = q / g.py, j = q % g.py;
            const std::vector<std::uint64_t> key{width(g.x_cuts, i),     width(g.y_cuts, j),     width(g.x_cuts, i - 1),
                                                 width(g.x_cuts, i + 1), width(g.y_cuts, j - 1), width(g.y_cuts, j + 1),
                                                 std::uint64_t(i == 0),  std::uint64_t(i == g.px - 1),
                                                 std::uint64_t(j == 0),  std::uint64_t(j == g.py - 1)};
            const auto it = reach <= 1 ? shapes.find(key) : shapes.end();
            const std::uint64_t h = it != shapes.end() ? it->second : tile_halo(lat, g, q).rows;
            if (reach <= 1) shapes[key] = h;
            worst = std::max(worst, h);
            total += h;
        }
        if (best.x_cuts.empty() || worst < best_max || (worst == best_max && total < best_total)) {
            best = g;
            best_max = worst;
            best_total = total;
        }
    }
    TOPOKPM_USER_REQUIRE(!best.x_cuts.empty(), "{decomposition} 2d: no px x py = ", ranks, " grid fits ", lat.nx,
                         "x", lat.ny, " (x, y) sites");
    return best;
}

ProcessGrid choose_decomposition(const std::string& mode, int ranks, bool weighted, const LatticeHalo& lattice)
{
    TOPOKPM_USER_REQUIRE(mode == "1d" || mode == "auto" || !weighted, "{decomposition} ", mode,
                         " cuts equal tiles: {weights} need {decomposition} 1d");
    if (ranks == 1 || mode == "1d" || weighted) return {};
    int px = 0, py = 0;
    if (std::sscanf(mode.c_str(), "%dx%d", &px, &py) == 2) {
        TOPOKPM_USER_REQUIRE(px * py == ranks, "{decomposition} ", mode, ": ", px * py, " tiles for ", ranks, " ranks");
        return make_grid(lattice.nx, lattice.ny, px, py);
    }
    TOPOKPM_USER_REQUIRE(mode == "2d" || mode == "auto", "{decomposition} '", mode,
                         "': allowed are 1d, 2d, auto or a grid PXxPY");
    if (mode == "auto" && std::uint64_t(ranks) > lattice.nx * lattice.ny) return {};  // 1-D needs only sites
    ProcessGrid grid = choose_grid(lattice, ranks);
    if (mode == "auto" && grid.py == 1) return {};  // no smaller halo than x-slabs
    return grid;
}

Plan make_plan(const PlanInput& in)
{
    TOPOKPM_USER_REQUIRE(in.ranks >= 1, "{ranks} ", in.ranks, " must be at least 1");
    TOPOKPM_USER_REQUIRE(in.gpus >= 0 && in.gpus <= in.ranks, "{gpus} ", in.gpus, " must be in [0, {ranks} = ",
                         in.ranks, "] (each GPU is driven by one rank)");
    TOPOKPM_USER_REQUIRE(in.realizations >= 1, "realizations K = ", in.realizations, " must be at least 1");
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
    const bool two_d = in.grid.ranks() > 1 || !in.grid.x_cuts.empty();
    std::vector<RowRange> ranges;
    if (two_d) {
        TOPOKPM_USER_REQUIRE(in.grid.ranks() == in.ranks && in.grid.x_cuts.size() == size_t(in.grid.px) + 1 &&
                                 in.grid.y_cuts.size() == size_t(in.grid.py) + 1,
                             "process grid ", in.grid.px, "x", in.grid.py, " for {ranks} ", in.ranks);
        TOPOKPM_USER_REQUIRE(in.weights.empty() && G == 0, "{decomposition} 2d: equal tiles on identical CPU ranks "
                             "only (no {weights}, no {gpus})");
        TOPOKPM_USER_REQUIRE(in.halo.nx == in.nx && in.halo.ny == in.ny && in.halo.nz == in.nz &&
                                 in.halo.block == in.block,
                             "halo model of ", in.halo.nx, "x", in.halo.ny, "x", in.halo.nz, " for the lattice ",
                             in.nx, "x", in.ny, "x", in.nz);
        std::uint64_t position = 0;  // rank-major order of the tiles (RowPermutation)
        for (int q = 0; q < in.ranks; ++q) {
            const int i = q / in.grid.py, j = q % in.grid.py;
            const std::uint64_t rows = (in.grid.x_cuts[i + 1] - in.grid.x_cuts[i]) *
                                       (in.grid.y_cuts[j + 1] - in.grid.y_cuts[j]) * in.nz * in.block;
            ranges.push_back({position, position + rows});
            position += rows;
        }
    } else {
        const std::uint64_t unit = in.split_unit > 0 ? in.split_unit : in.block;
        TOPOKPM_USER_REQUIRE(unit % in.block == 0 && in.rows % unit == 0, "1-D split unit of ", unit, " rows for ",
                             in.rows, " rows of ", in.block, "-row sites");
        ranges = split_rows(in.rows, unit, plan.weights);
    }
    TOPOKPM_USER_REQUIRE(in.block_width >= 0 && in.block_width <= in.vectors, "block width W = ", in.block_width,
                         " must be in 1 .. R = ", in.vectors, " (0: R)");
    TOPOKPM_USER_REQUIRE(in.matrix_bytes_per_nonzero >= 0 && in.matrix_bytes_per_row >= 0 && in.value_bytes > 0,
                         "operator cost coefficients ", in.matrix_bytes_per_nonzero, " B/nnz, ",
                         in.matrix_bytes_per_row, " B/row, ", in.value_bytes, " B/value");
    TOPOKPM_USER_REQUIRE(std::isfinite(in.measured_rows_per_second) && in.measured_rows_per_second >= 0,
                         "measured rate of ", in.measured_rows_per_second, " rows/s: must be >= 0 (0: none)");
    TOPOKPM_USER_REQUIRE(in.sweeps_per_pass == 1 || in.sweeps_per_pass == 2, "sweeps per pass ", in.sweeps_per_pass,
                         ": 1 or 2");
    const bool fused = in.sweeps_per_pass == 2 && P == 1 && G == 0;
    const std::uint64_t plane = in.ny * in.nz * in.block;
    const int width = in.block_width > 0 ? in.block_width : in.vectors;
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
        if (two_d) {
            TileHalo t = tile_halo(in.halo, in.grid, static_cast<int>(p));
            rp.halo_rows = t.rows;
            rp.neighbours = std::move(t.per_neighbour);
        } else {
            rp.halo_rows = P == 1 ? 0 : halo_rows_of(rp.range, in.rows, plane * in.x_reach, in.periodic_x);
        }
        const double halo = static_cast<double>(rp.halo_rows);
        rp.halo_bytes_per_sweep = v * halo * W;
        const double operator_bytes = in.matrix_bytes_per_nonzero * rp.nnz + in.matrix_bytes_per_row * rows;
        rp.memory_bytes = operator_bytes + 2 * v * rows * W + 2 * rp.halo_bytes_per_sweep;
        rp.sweep_bytes = fused ? (operator_bytes + 4 * v * rows * W) / 2 : operator_bytes + 3 * v * rows * W;
        double sweep_seconds = rp.sweep_bytes / (bandwidth_gbs(p) * 1e9);
        if (P == 1 && G == 0 && in.measured_rows_per_second > 0) sweep_seconds = rows / in.measured_rows_per_second;
        double comm_seconds = rp.halo_bytes_per_sweep / (in.network_gbs * 1e9);
        if (rp.gpu) comm_seconds += 2 * rp.halo_bytes_per_sweep / (in.host_device_gbs * 1e9);
        rp.sweep_seconds = sweep_seconds;
        rp.comm_seconds = comm_seconds;
        rp.seconds_per_moment = blocks * (sweep_seconds + comm_seconds) / 2;
        rp.seconds_per_moment_overlap = blocks * std::max(sweep_seconds, comm_seconds) / 2;
        plan.seconds_per_moment = std::max(plan.seconds_per_moment, rp.seconds_per_moment);
        plan.seconds_per_moment_overlap = std::max(plan.seconds_per_moment_overlap, rp.seconds_per_moment_overlap);
        double& peak = rp.gpu ? plan.max_gpu_memory_bytes : plan.max_memory_bytes;
        peak = std::max(peak, rp.memory_bytes);
    }
    plan.total_seconds = double(in.realizations) * in.moments * plan.seconds_per_moment;
    plan.sweeps = double(in.realizations) * blocks * (in.moments / 2);
    return plan;
}

void require_fits(const Plan& plan, const MemoryLimit& host, double gpu_bytes_per_rank)
{
    for (std::size_t p = 0; p < plan.ranks.size(); ++p) {
        const RankPlan& r = plan.ranks[p];
        if (r.gpu && gpu_bytes_per_rank <= 0) continue;
        if (r.memory_bytes > (r.gpu ? gpu_bytes_per_rank : host.bytes))
            throw ResourceError(detail::concat(
                "rank ", p, " (", r.gpu ? "gpu" : "cpu", ") of ", plan.ranks.size(), " needs ", fixed(r.memory_bytes / gib, 2),
                " GiB per rank, ",
                r.gpu ? detail::concat("have ", fixed(gpu_bytes_per_rank / gib, 2), " GiB of device memory") : host.source,
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
    if (!in.grid.x_cuts.empty()) {
        // The 2-D layout: grid, tile sizes, halo per neighbour (over all ranks' neighbours).
        std::uint64_t lo = ~std::uint64_t(0), hi = 0, count_lo = ~std::uint64_t(0), count_hi = 0;
        for (const RankPlan& r : plan.ranks) {
            count_lo = std::min<std::uint64_t>(count_lo, r.neighbours.size());
            count_hi = std::max<std::uint64_t>(count_hi, r.neighbours.size());
            for (const auto& nb : r.neighbours) {
                lo = std::min(lo, nb.second);
                hi = std::max(hi, nb.second);
            }
        }
        os << "2-D decomposition: process grid " << in.grid.px << " x " << in.grid.py << " (x, y), tiles of "
           << in.grid.x_cuts[1] - in.grid.x_cuts[0] << "x" << in.grid.y_cuts[1] - in.grid.y_cuts[0] << "x" << in.nz
           << " sites (rank 0); " << count_lo << ".." << count_hi << " neighbours per rank, halo per neighbour "
           << (hi > 0 ? lo : 0) << ".." << hi << " rows\n";
    }
    {
        // Network-bound: the slowest rank's halo time against its local sweep.
        size_t slowest = 0;
        for (size_t p = 0; p < plan.ranks.size(); ++p)
            if (plan.ranks[p].seconds_per_moment > plan.ranks[slowest].seconds_per_moment) slowest = p;
        const RankPlan& r = plan.ranks[slowest];
        os << "per sweep on the slowest rank: local sweep " << fixed(r.sweep_seconds * 1e3, 3) << " ms, halo "
           << fixed(r.comm_seconds * 1e3, 3) << " ms: "
           << (r.comm_seconds > r.sweep_seconds ? "network-bound (halo time above the local sweep)"
                                                : "not network-bound (halo time below the local sweep)")
           << "\n";
    }
    os << "total: " << fixed(plan.seconds_per_moment * 1e3, 3) << " ms per moment (slowest rank; "
       << fixed(plan.seconds_per_moment_overlap * 1e3, 3) << " ms with the halo exchange overlapped), "
       << fixed(plan.total_seconds, 2) << " s for " << in.moments << " moments"
       << (in.realizations > 1 ? detail::concat(" x ", in.realizations, " realizations") : std::string())
       << "; memory per rank up to "
       << fixed(plan.max_memory_bytes / gib, 3) << " GiB";
    if (in.gpus > 0) os << " (cpu), " << fixed(plan.max_gpu_memory_bytes / gib, 3) << " GiB (gpu device)";
    os << "\n";
    return os.str();
}

}  // namespace topokpm::hetero
