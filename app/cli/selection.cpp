#include "app/cli/selection.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "runtime/base/error.hpp"
#include "runtime/base/parse.hpp"

namespace topokpm::app {

std::vector<std::string> split(const std::string& text, char sep)
{
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(text);
    while (std::getline(in, part, sep)) parts.push_back(part);
    if (!text.empty() && text.back() == sep) parts.emplace_back();
    return parts;
}

namespace {

std::string trim(const std::string& s)
{
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

/// The messages below quote the whole value once, after the option, and name its pieces
/// by position (item N, from 1), never by their text: a value from a --config file is
/// then left out whole (without_config_value, app/cli/run_config.hpp).
long long integer(const std::string& option, const std::string& whole, const std::string& text,
                  const std::string& where)
{
    std::int64_t v = 0;
    TOPOKPM_USER_REQUIRE(parse::int64(trim(text), v), "--", option, " '", whole, "': ", where,
                         " is not a decimal integer");
    return v;
}

std::string item_name(std::size_t index) { return "item " + std::to_string(index + 1); }

}  // namespace

LdosSelection resolve_ldos_selection(const std::string& text, const hamiltonians::Model& model)
{
    const auto& p = model.params();
    const global_index n = model.num_rows();
    const int b = model.orbitals_per_site();
    LdosSelection sel;
    sel.orbitals = b;
    sel.nx = p.nx;
    sel.ny = p.ny;
    auto site_rows = [&](global_index site) {
        for (int o = 0; o < b; ++o) sel.rows.push_back(o + static_cast<global_index>(b) * site);
    };
    if (text.rfind("layer:", 0) == 0) {
        const long long z = integer("ldos", text, text.substr(6), "the layer");
        TOPOKPM_USER_REQUIRE(z >= 0 && z < p.nz, "--ldos '", text, "': the layer is outside 0 .. ", p.nz - 1,
                             model.kind().site_coordinates == 2 ? detail::concat(" (", p.name, " has the single layer 0)")
                                                                : std::string(" (z = 0 and Nz-1 are the surfaces)"));
        sel.layer = static_cast<int>(z);
        for (int x = 0; x < p.nx; ++x)
            for (int y = 0; y < p.ny; ++y) site_rows(z + static_cast<global_index>(p.nz) * (y + static_cast<global_index>(p.ny) * x));
    } else if (text.rfind("site:", 0) == 0) {
        const std::vector<std::string> c = split(text.substr(5), ',');
        const size_t want = static_cast<size_t>(model.kind().site_coordinates);
        // A model whose --lattice takes fewer extents (hr: Nx[xNy[xNz]]) takes as few
        // coordinates, the omitted ones 0 where their extents are 1.
        const int extents[3] = {p.nx, p.ny, p.nz};
        size_t least = want;
        while (least > static_cast<size_t>(std::max(1, model.kind().min_extents)) && extents[least - 1] == 1) --least;
        std::string forms = want == 2 ? "site:M,N (cell indices)" : "";  // e.g. "site:X,Y or site:X,Y,Z"
        for (size_t k = least; want == 3 && k <= want; ++k) forms += (k > least ? " or " : "") + std::string("site:X,Y,Z", 4 + 2 * k);
        TOPOKPM_USER_REQUIRE(c.size() >= least && c.size() <= want, "--ldos '", text, "': expected ", forms);
        long long xyz[3] = {0, 0, 0};
        for (size_t d = 0; d < c.size(); ++d) xyz[d] = integer("ldos", text, c[d], "coordinate " + std::to_string(d + 1));
        const long long x = xyz[0], y = xyz[1], z = xyz[2];
        TOPOKPM_USER_REQUIRE(x >= 0 && x < p.nx && y >= 0 && y < p.ny && z >= 0 && z < p.nz, "--ldos '", text,
                             "': site outside the lattice ", p.nx, "x", p.ny, want == 3 ? "x" + std::to_string(p.nz) : "");
        site_rows(z + static_cast<global_index>(p.nz) * (y + static_cast<global_index>(p.ny) * x));
    } else {
        const std::string list = text.rfind("rows:", 0) == 0 ? text.substr(5) : text;
        const std::vector<std::string> items = split(list, ',');
        for (std::size_t i = 0; i < items.size(); ++i) {
            const std::string& item = items[i];
            const std::string name = item_name(i);
            const auto dash = item.find('-', trim(item).empty() ? 0 : item.find_first_not_of(" \t") + 1);
            if (dash != std::string::npos) {
                const long long lo = integer("ldos", text, item.substr(0, dash), name + " (first)");
                const long long hi = integer("ldos", text, item.substr(dash + 1), name + " (last)");
                TOPOKPM_USER_REQUIRE(lo >= 0 && lo <= hi && hi < n, "--ldos '", text, "': ", name,
                                     " (a range) must satisfy 0 <= first <= last < N = ", n);
                TOPOKPM_USER_REQUIRE(hi - lo < 100'000'000, "--ldos '", text, "': ", name,
                                     " (a range) is too long (at most 10^8 rows)");
                for (long long j = lo; j <= hi; ++j) sel.rows.push_back(j);
            } else {
                const long long j = integer("ldos", text, item, name);
                TOPOKPM_USER_REQUIRE(j >= 0 && j < n, "--ldos '", text, "': ", name, " (a row) is outside 0 .. ", n - 1);
                sel.rows.push_back(j);
            }
        }
    }
    TOPOKPM_USER_REQUIRE(!sel.rows.empty(), "--ldos '", text, "': selects no rows");
    return sel;
}

numerics::PlaneWaveLattice plane_wave_lattice(const hamiltonians::Model& model)
{
    const auto& p = model.params();
    TOPOKPM_USER_REQUIRE(p.boundary.size() >= 2 && p.boundary[0] == 'p' && p.boundary[1] == 'p',
                         "--k-points/--k-path need periodic x and y (--boundary ", p.boundary,
                         "): momenta are not good quantum numbers otherwise");
    return {p.nx, p.ny, model.orbitals_per_site() * p.nz};
}

bool translation_invariant(const hamiltonians::Model& model)
{
    const auto& p = model.params();
    const bool dots = p.dot_period > 0 && p.dot_potential != 0.0 && p.dot_radius >= 0.0;
    return !dots && p.disorder == 0.0 && p.flux.zero() && p.boundary.size() >= 2 && p.boundary[0] == 'p' && p.boundary[1] == 'p';
}

MomentumList resolve_momenta(const std::string& k_points, const std::string& k_path, const hamiltonians::Model& model)
{
    const auto& p = model.params();
    const hamiltonians::ModelKind& kind = model.kind();
    MomentumList out;
    if (!k_points.empty()) {
        const std::vector<std::string> items = split(k_points, ';');
        for (std::size_t i = 0; i < items.size(); ++i) {
            const std::string name = item_name(i);
            const std::vector<std::string> c = split(items[i], ',');
            TOPOKPM_USER_REQUIRE(c.size() == 2, "--k-points '", k_points, "': ", name,
                                 " is not `mx,my` (integers; k = 2 pi m / N)");
            const long long mx = integer("k-points", k_points, c[0], name + " (mx)");
            const long long my = integer("k-points", k_points, c[1], name + " (my)");
            // k = 2 pi m / N is periodic in m, but a value is never wrapped silently.
            TOPOKPM_USER_REQUIRE(std::llabs(mx) <= 1'000'000'000 && std::llabs(my) <= 1'000'000'000, "--k-points '",
                                 k_points, "': ", name, ": momentum indices are allowed in -10^9 .. 10^9");
            out.momenta.push_back({static_cast<int>(mx), static_cast<int>(my)});
        }
    } else {
        const std::vector<std::string> names = split(k_path, '-');
        TOPOKPM_USER_REQUIRE(names.size() >= 2, "--k-path '", k_path, "': expected at least two points, e.g. M-G-X");
        auto half = [&](int n, const char* axis) {
            TOPOKPM_USER_REQUIRE(n % 2 == 0, "--k-path '", k_path, "': the zone-boundary point needs an even N", axis,
                                 " (N", axis, " = ", n, ")");
            return n / 2;
        };
        auto point = [&](std::size_t index) -> numerics::Momentum {
            const std::string t = trim(names[index]);
            bool known = false;  // one of the model's points (ModelKind::zone_points)
            for (const std::string& z : split(kind.zone_points, ',')) known = known || (!t.empty() && trim(z) == t);
            if (known && t == "G") return {0, 0};
            if (known && t == "X") return {half(p.nx, "x"), 0};
            if (known && t == "Y") return {0, half(p.ny, "y")};
            if (known && t == "M") return {half(p.nx, "x"), half(p.ny, "y")};
            if (known && t == "K") {
                TOPOKPM_USER_REQUIRE(p.nx % 3 == 0 && p.ny % 3 == 0, "--k-path '", k_path,
                                     "': K = (2 Nx/3, Ny/3) needs Nx and Ny multiples of 3 (lattice ", p.nx, "x", p.ny, ")");
                return {2 * p.nx / 3, p.ny / 3};
            }
            throw InputError(detail::concat("--k-path '", k_path, "': point ", index + 1, " is unknown; ", p.name,
                                            " knows ", kind.zone_points));
        };
        std::vector<std::string> labels;
        numerics::Momentum prev = point(0);
        out.momenta.push_back(prev);
        out.ticks.push_back(0);
        labels.push_back(trim(names[0]));
        for (size_t i = 1; i < names.size(); ++i) {
            const numerics::Momentum next = point(i);
            const int dx = next.mx - prev.mx, dy = next.my - prev.my;
            const int steps = std::max(std::abs(dx), std::abs(dy));
            for (int j = 1; j <= steps; ++j)
                out.momenta.push_back({prev.mx + static_cast<int>(std::lround(double(j) * dx / steps)),
                                       prev.my + static_cast<int>(std::lround(double(j) * dy / steps))});
            out.ticks.push_back(static_cast<std::int64_t>(out.momenta.size()) - 1);
            labels.push_back(trim(names[i]));
            prev = next;
        }
        for (size_t i = 0; i < labels.size(); ++i) out.tick_labels += (i ? "," : "") + labels[i];
    }
    // (k1, k2) = 2 pi m / N; Cartesian k = (k1 b1 + k2 b2) / (2 pi) by the reciprocal basis
    // of the model's cell (b_i . a_j = 2 pi delta_ij in the x-y plane; ti k = (k1, k2),
    // graphene (m1/Nx) b1 + (m2/Ny) b2): geometry()'s, or hr's --cell-vectors without
    // positions; without either (hr: --k-points only) (k1, k2) itself.
    const std::optional<hamiltonians::LatticeGeometry> geometry = model.geometry();
    std::optional<std::array<std::array<double, 3>, 2>> cell;
    if (geometry) cell = std::array<std::array<double, 3>, 2>{geometry->cell[0], geometry->cell[1]};
    else if (p.cell_vectors.size() >= 2) cell = std::array<std::array<double, 3>, 2>{p.cell_vectors[0], p.cell_vectors[1]};
    std::array<double, 4> b{1.0, 0.0, 0.0, 1.0};  // b1 = (b[0], b[1]), b2 = (b[2], b[3]), over 2 pi
    if (cell) {
        const auto& a = *cell;
        const double det = a[0][0] * a[1][1] - a[0][1] * a[1][0];
        b = {a[1][1] / det, -a[1][0] / det, -a[0][1] / det, a[0][0] / det};  // the rows of A^-1, A = (a1 a2)
    }
    double dist = 0.0, px = 0.0, py = 0.0;
    for (size_t i = 0; i < out.momenta.size(); ++i) {
        const double k1 = 2.0 * M_PI * out.momenta[i].mx / p.nx, k2 = 2.0 * M_PI * out.momenta[i].my / p.ny;
        out.k.push_back(k1);
        out.k.push_back(k2);
        const double cx = k1 * b[0] + k2 * b[2], cy = k1 * b[1] + k2 * b[3];
        if (i > 0) dist += std::hypot(cx - px, cy - py);
        out.path_distance.push_back(dist);
        px = cx;
        py = cy;
    }
    return out;
}

}  // namespace topokpm::app
