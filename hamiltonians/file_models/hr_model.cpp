#include "hamiltonians/file_models/hr_model.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <utility>
#include <vector>

#include "runtime/base/error.hpp"

namespace topokpm::hamiltonians::file_models {

namespace {

/// Cell coordinate v + d along a direction of `extent` cells; false when it leaves an open edge.
inline bool shift(int v, int d, int extent, bool periodic, int& out)
{
    long long w = static_cast<long long>(v) + d;
    if (w < 0 || w >= extent) {
        if (!periodic) return false;
        w %= extent;
        if (w < 0) w += extent;
    }
    out = static_cast<int>(w);
    return true;
}

/// Sorts the first `len` entries by column (stable: equal columns keep their order) and adds
/// up equal columns; returns the new length. Short rows (the built-in lattices' 4 to 13
/// entries) by insertion, long ones (a Wannier model: num_wann x nrpts) by a stable sort.
int sort_and_merge(int len, global_index* cols, complex_type* vals)
{
    constexpr int kInsertionLimit = 32;
    if (len <= kInsertionLimit) {
        insertion_sort_row(len, cols, vals);
    } else {
        thread_local std::vector<std::pair<global_index, complex_type>> pairs;
        pairs.resize(static_cast<size_t>(len));
        for (int a = 0; a < len; ++a) pairs[static_cast<size_t>(a)] = {cols[a], vals[a]};
        std::stable_sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        for (int a = 0; a < len; ++a) {
            cols[a] = pairs[static_cast<size_t>(a)].first;
            vals[a] = pairs[static_cast<size_t>(a)].second;
        }
    }
    int out = 0;
    for (int a = 0; a < len; ++a) {
        if (out > 0 && cols[out - 1] == cols[a]) {
            vals[out - 1] += vals[a];
        } else {
            cols[out] = cols[a];
            vals[out++] = vals[a];
        }
    }
    return out;
}

}  // namespace

HrModel::HrModel(const ModelParams& params)
    : params_(params),
      h_(read_hr_file(params.file)),
      gauge_(params.flux, params.ny, 1),
      onsite_(params)
{
    const int w = h_.num_wann;
    if (!params_.orbital_positions.empty()) {
        positions_ = read_orbital_positions(params_.orbital_positions, w);
        // Lattice coordinates in the x-y plane, r = u a1 + v a2 (+ along z), for the gauge
        // and the dots (make_model() lets either through only with a1, a2 in the plane, so
        // the 2 x 2 system is regular).
        const Vector3& a1 = params_.cell_vectors[0];
        const Vector3& a2 = params_.cell_vectors[1];
        const double det = a1[0] * a2[1] - a1[1] * a2[0];
        const auto uv = [&](double x, double y) {
            return std::array<double, 2>{(x * a2[1] - y * a2[0]) / det, (a1[0] * y - a1[1] * x) / det};
        };
        const bool in_plane = gauge_.active() || params_.dot_period > 0;
        for (const Vector3& r : positions_->position) {
            PeierlsGauge::RealParts q;
            if (in_plane) {
                const std::array<double, 2> c = uv(r[0], r[1]);
                q.ui = c[0];
                q.vi = c[1];
            }
            lattice_.push_back(q);
        }
        if (params_.dot_period > 0) {
            const double period = params_.dot_period;
            Dots& d = dots_;
            d.a1[0] = a1[0], d.a1[1] = a1[1], d.a2[0] = a2[0], d.a2[1] = a2[1];
            if (params_.cell_vectors.size() == 3) {
                const std::array<double, 2> c = uv(params_.cell_vectors[2][0], params_.cell_vectors[2][1]);
                d.a3_uv[0] = c[0], d.a3_uv[1] = c[1];
            }
            double mean[2] = {0.0, 0.0};
            for (const PeierlsGauge::RealParts& q : lattice_) mean[0] += q.ui, mean[1] += q.vi;
            for (int k = 0; k < 2; ++k) d.centre[k] = (period - 1.0) / 2.0 + mean[k] / w;
            // Lagrange-Gauss reduction of P a1, P a2 (the nearest superlattice point then lies
            // among the few around the rounded coordinates; a square lattice stays as it is).
            double b1[2] = {period * a1[0], period * a1[1]}, b2[2] = {period * a2[0], period * a2[1]};
            const auto dot = [](const double* x, const double* y) { return x[0] * y[0] + x[1] * y[1]; };
            for (int iteration = 0; iteration < 200; ++iteration) {
                if (dot(b2, b2) < dot(b1, b1)) std::swap(b1, b2);
                const double mu = std::nearbyint(dot(b1, b2) / dot(b1, b1));
                if (mu == 0.0) break;
                b2[0] -= mu * b1[0], b2[1] -= mu * b1[1];
            }
            const double bdet = b1[0] * b2[1] - b1[1] * b2[0];
            d.b1[0] = b1[0], d.b1[1] = b1[1], d.b2[0] = b2[0], d.b2[1] = b2[1];
            d.inverse[0][0] = b2[1] / bdet, d.inverse[0][1] = -b2[0] / bdet;
            d.inverse[1][0] = -b1[1] / bdet, d.inverse[1][1] = b1[0] / bdet;
        }
    }
    const global_index cells_xy = global_index(params_.nx) * params_.ny;
    TOPOKPM_USER_REQUIRE(cells_xy <= std::numeric_limits<global_index>::max() / params_.nz / w, "{lattice} ",
                         params_.nx, "x", params_.ny, "x", params_.nz, ": num_wann = ", w,
                         " orbitals x Nx x Ny x Nz rows overflow a 64-bit index (allowed: < 2^63 rows)");
    num_rows_ = cells_xy * params_.nz * w;
    hops_.assign(static_cast<size_t>(w), {});
    onsite_diag_.assign(static_cast<size_t>(w), complex_type(0.0, 0.0));
    const int extent[3] = {params_.nx, params_.ny, params_.nz};
    for (const auto& t : h_.terms) {
        const bool zero_r = t.r[0] == 0 && t.r[1] == 0 && t.r[2] == 0;
        // Cells c whose c + R exists (all of them along a periodic direction).
        global_index reached = 1;
        for (int d = 0; d < 3; ++d)
            reached *= params_.boundary[static_cast<size_t>(d)] == 'p' ? extent[d] : std::max(0, extent[d] - std::abs(t.r[static_cast<size_t>(d)]));
        for (int o = 0; o < w; ++o)
            for (int n = 0; n < w; ++n) {
                const complex_type v = t.block[static_cast<size_t>(o * w + n)];
                if (zero_r && o == n) {
                    onsite_diag_[static_cast<size_t>(o)] = v;
                    continue;
                }
                if (v == complex_type(0.0, 0.0) || reached == 0) continue;
                hops_[static_cast<size_t>(o)].push_back({{t.r[0], t.r[1], t.r[2]}, n, v});
                // Saturating: a supercell near 2^63 rows times many hoppings is refused by
                // the memory checks, not wrapped into a small count.
                estimated_nonzeros_ = reached > std::numeric_limits<global_index>::max() - estimated_nonzeros_
                                          ? std::numeric_limits<global_index>::max()
                                          : estimated_nonzeros_ + reached;
            }
    }
    estimated_nonzeros_ = num_rows_ > std::numeric_limits<global_index>::max() - estimated_nonzeros_
                              ? std::numeric_limits<global_index>::max()
                              : estimated_nonzeros_ + num_rows_;  // the diagonal
    for (const auto& h : hops_) max_row_length_ = std::max(max_row_length_, 1 + static_cast<int>(h.size()));
}

int HrModel::row(global_index row, global_index* cols, complex_type* values) const
{
    TOPOKPM_REQUIRE(row >= 0 && row < num_rows_, "hr row ", row, " outside [0, ", num_rows_, ")");
    const int w = h_.num_wann;
    const int o = static_cast<int>(row % w);
    const global_index cell = row / w;
    const int nz = params_.nz, ny = params_.ny, nx = params_.nx;
    const int c[3] = {static_cast<int>(cell / (global_index(nz) * ny)), static_cast<int>((cell / nz) % ny),
                      static_cast<int>(cell % nz)};
    const int extent[3] = {nx, ny, nz};
    const bool periodic[3] = {params_.boundary[0] == 'p', params_.boundary[1] == 'p', params_.boundary[2] == 'p'};
    int len = 0;
    cols[len] = row;
    values[len++] = onsite_diag_[static_cast<size_t>(o)] + complex_type(potential(row), 0.0);
    for (const Hop& hop : hops_[static_cast<size_t>(o)]) {
        int q[3];
        if (!shift(c[0], hop.dr[0], extent[0], periodic[0], q[0]) || !shift(c[1], hop.dr[1], extent[1], periodic[1], q[1]) ||
            !shift(c[2], hop.dr[2], extent[2], periodic[2], q[2]))
            continue;
        cols[len] = hop.n + global_index(w) * (q[2] + global_index(nz) * (q[1] + global_index(ny) * q[0]));
        if (gauge_.active()) {
            // Onto (c, o) from the image (c + R, n) of (q, n), ky periods of Ny along a2 apart.
            // Below the diagonal the conjugate of the reverse hop, onto (q, n) from the image
            // (c - ky Ny a2 ...) of (c, o) by -R: the same numbers as the entry above it, so
            // the phases are Hermitian exactly (the real parts round in double).
            const PeierlsGauge::RealParts& li = lattice_[static_cast<size_t>(o)];
            const PeierlsGauge::RealParts& lj = lattice_[static_cast<size_t>(hop.n)];
            const int ky = (c[1] + hop.dr[1] - q[1]) / ny;
            const complex_type f =
                cols[len] < row ? std::conj(gauge_.hop(q[1], -hop.dr[0], -hop.dr[1], c[0], -ky, {lj.ui, lj.vi, li.ui, li.vi}))
                                : gauge_.hop(c[1], hop.dr[0], hop.dr[1], q[0], ky, {li.ui, li.vi, lj.ui, lj.vi});
            values[len++] = hop.value * f;
        } else {
            values[len++] = hop.value;
        }
    }
    return sort_and_merge(len, cols, values);
}

double HrModel::potential(global_index row) const
{
    return onsite_(inside_dot(row), static_cast<std::uint64_t>(row));
}

bool HrModel::inside_dot(global_index row) const
{
    if (params_.dot_period == 0) return false;
    const Dots& d = dots_;
    const int w = h_.num_wann;
    const global_index cell = row / w;
    const PeierlsGauge::RealParts& q = lattice_[static_cast<size_t>(row % w)];
    const global_index c3 = cell % params_.nz, c2 = (cell / params_.nz) % params_.ny,
                       c1 = cell / (global_index(params_.nz) * params_.ny);
    // The offset from the centre of supercell (0, 0) in u, v, then in the plane.
    const double u = static_cast<double>(c1) + q.ui + static_cast<double>(c3) * d.a3_uv[0] - d.centre[0];
    const double v = static_cast<double>(c2) + q.vi + static_cast<double>(c3) * d.a3_uv[1] - d.centre[1];
    const double x = u * d.a1[0] + v * d.a2[0], y = u * d.a1[1] + v * d.a2[1];
    // The nearest superlattice point: around the coordinates rounded in the reduced basis.
    const double k1 = std::nearbyint(x * d.inverse[0][0] + y * d.inverse[0][1]);
    const double k2 = std::nearbyint(x * d.inverse[1][0] + y * d.inverse[1][1]);
    double nearest = std::numeric_limits<double>::infinity();
    for (int i = -2; i <= 2; ++i)
        for (int j = -2; j <= 2; ++j) {
            const double dx = x - (k1 + i) * d.b1[0] - (k2 + j) * d.b2[0];
            const double dy = y - (k1 + i) * d.b1[1] - (k2 + j) * d.b2[1];
            nearest = std::min(nearest, dx * dx + dy * dy);
        }
    return nearest < params_.dot_radius * params_.dot_radius + 1e-9;
}

BlockStencil HrModel::block_stencil() const
{
    require_stencil_carries_field(params_.flux, true);
    const int w = h_.num_wann;
    TOPOKPM_USER_REQUIRE(w <= kMaxStencilOrbitals, "{matrix} free: model hr has num_wann = ", w,
                         " orbitals per cell; the matrix-free kernels take at most ", kMaxStencilOrbitals,
                         " (use --matrix sell or crs)");
    BlockStencil s;
    s.name = "hr";
    s.nx = params_.nx;
    s.ny = params_.ny;
    s.nz = params_.nz;
    s.orbitals = w;
    s.periodic = {params_.boundary[0] == 'p', params_.boundary[1] == 'p', params_.boundary[2] == 'p'};
    s.onsite.assign(static_cast<size_t>(w) * w, complex_type(0.0, 0.0));
    for (const auto& t : h_.terms) {
        if (t.r[0] == 0 && t.r[1] == 0 && t.r[2] == 0) {
            s.onsite = t.block;
            continue;
        }
        if (std::all_of(t.block.begin(), t.block.end(), [](complex_type v) { return v == complex_type(0.0, 0.0); })) continue;
        s.terms.push_back({t.r[0], t.r[1], t.r[2], t.block});
    }
    s.potential.resize(static_cast<size_t>(num_rows_));
    const global_index n = num_rows_;
#pragma omp parallel for schedule(static)
    for (global_index r = 0; r < n; ++r) s.potential[static_cast<size_t>(r)] = potential(r);
    return s;
}

AttributeList HrModel::attributes() const
{
    const ModelParams& p = params_;
    AttributeList attributes{
        {"name", std::string("hr")},
        {"file", h_.file.path},
        {"file_size", std::uint64_t(h_.file.size)},
        {"file_sha256", h_.file.sha256},
        {"num_orbitals", std::int64_t(h_.num_wann)},
        {"Nx", std::int64_t(p.nx)},
        {"Ny", std::int64_t(p.ny)},
        {"Nz", std::int64_t(p.nz)},
        {"boundary", p.boundary},
        {"disorder", p.disorder},
        {"disorder_seed", std::uint64_t(p.disorder_seed)},
    };
    if (p.dot_period > 0) {
        attributes.push_back({"dot_potential", p.dot_potential});
        attributes.push_back({"dot_radius", p.dot_radius});
        attributes.push_back({"dot_period", std::int64_t(p.dot_period)});
    }
    if (!p.cell_vectors.empty()) attributes.push_back({"cell_vectors", vectors_text(p.cell_vectors)});
    if (positions_) {
        attributes.push_back({"orbital_positions", vectors_text(positions_->position)});
        attributes.push_back({"orbital_positions_file", positions_->file.path});
        attributes.push_back({"orbital_positions_size", std::uint64_t(positions_->file.size)});
        attributes.push_back({"orbital_positions_sha256", positions_->file.sha256});
    }
    append_field_attributes(attributes, p.flux, "0, the origin of the Cartesian frame of --orbital-positions");
    return attributes;
}

std::optional<LatticeGeometry> HrModel::geometry() const
{
    if (!positions_) return std::nullopt;
    const ModelParams& p = params_;
    LatticeGeometry g;
    g.dimensions = static_cast<int>(p.cell_vectors.size());
    for (std::size_t a = 0; a < p.cell_vectors.size(); ++a) g.cell[a] = p.cell_vectors[a];
    g.offset = positions_->position;
    g.extent = {p.nx, p.ny, p.nz};
    g.periodic = {p.boundary[0] == 'p', p.boundary[1] == 'p', g.dimensions == 3 && p.boundary[2] == 'p'};
    return g;
}

}  // namespace topokpm::hamiltonians::file_models
