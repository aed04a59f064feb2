#include "hamiltonians/file_models/hr_positions.hpp"

#include <cmath>
#include <cstdio>

#include "runtime/base/error.hpp"
#include "runtime/base/parse.hpp"

namespace topokpm::hamiltonians::file_models {

namespace {

constexpr const char* kCellForm =
    "allowed: \"x,y,z;x,y,z;x,y,z\" (a1;a2;a3) or, for a 2-D model, \"x,y,z;x,y,z\" with z = 0, finite numbers "
    "of magnitude <= 1e100 in the length unit of --orbital-positions";

std::vector<std::string> split(const std::string& text, char sep)
{
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (;;) {
        const std::size_t end = text.find(sep, start);
        parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) return parts;
        start = end + 1;
    }
}

double length(const Vector3& a) { return std::hypot(a[0], a[1], a[2]); }

Vector3 cross(const Vector3& a, const Vector3& b)
{
    return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

bool coordinate_ok(double x) { return std::isfinite(x) && std::abs(x) <= kMaxCoordinate; }

}  // namespace

std::vector<Vector3> parse_cell_vectors(const std::string& text)
{
    std::vector<Vector3> vectors;
    const std::vector<std::string> items = split(text, ';');
    TOPOKPM_USER_REQUIRE(items.size() == 2 || items.size() == 3, "{cell_vectors} '", text, "': ", items.size(),
                         " vectors (", kCellForm, ")");
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::vector<std::string> c = split(items[i], ',');
        TOPOKPM_USER_REQUIRE(c.size() == 3, "{cell_vectors} '", text, "': a", i + 1, " has ", c.size(),
                             " coordinates, not 3 (", kCellForm, ")");
        Vector3 v{};
        for (std::size_t k = 0; k < 3; ++k)
            TOPOKPM_USER_REQUIRE(parse::real(c[k], v[k]) && coordinate_ok(v[k]), "{cell_vectors} '", text, "': a",
                                 i + 1, " coordinate ", k + 1, " is not a finite number within 1e100 (", kCellForm,
                                 ")");
        vectors.push_back(v);
    }
    check_cell_vectors(vectors);
    return vectors;
}

void check_cell_vectors(const std::vector<Vector3>& a)
{
    const std::string text = vectors_text(a);
    TOPOKPM_USER_REQUIRE(a.size() == 2 || a.size() == 3, "{cell_vectors} '", text, "': ", a.size(), " vectors (",
                         kCellForm, ")");
    for (const Vector3& v : a)
        for (double x : v)
            TOPOKPM_USER_REQUIRE(coordinate_ok(x), "{cell_vectors} '", text,
                                 "': a coordinate is not a finite number within 1e100 (", kCellForm, ")");
    if (a.size() == 2)
        TOPOKPM_USER_REQUIRE(a[0][2] == 0.0 && a[1][2] == 0.0, "{cell_vectors} '", text,
                             "': two vectors describe a 2-D model and lie in the x-y plane (allowed: z = 0; give "
                             "a1;a2;a3 for a 3-D one)");
    // Independence relative to the lengths (scale-free): |a1 x a2| or |(a1 x a2) . a3|.
    // Each length is at most sqrt(3) 1e100 and the products are taken in steps of one
    // length, so nothing overflows before the comparison.
    const Vector3 n = cross(a[0], a[1]);
    double volume = 0.0, scale = length(a[0]) * length(a[1]);
    if (a.size() == 2) {
        volume = length(n);
    } else {
        const double l3 = length(a[2]);
        volume = std::abs(n[0] * a[2][0] + n[1] * a[2][1] + n[2] * a[2][2]);
        scale *= l3;
    }
    TOPOKPM_USER_REQUIRE(std::isfinite(volume) && std::isfinite(scale) && volume > 1e-12 * scale && volume > 0.0,
                         "{cell_vectors} '", text, "': the vectors are not linearly independent (allowed: ",
                         a.size() == 2 ? "|a1 x a2|" : "|det(a1, a2, a3)|", " > 1e-12 times the product of their lengths)");
}

std::string vectors_text(const std::vector<Vector3>& vectors)
{
    std::string out;
    char buffer[32];
    for (std::size_t i = 0; i < vectors.size(); ++i) {
        if (i > 0) out += ';';
        for (int k = 0; k < 3; ++k) {
            std::snprintf(buffer, sizeof buffer, "%.17g", vectors[i][static_cast<std::size_t>(k)]);
            if (k > 0) out += ',';
            out += buffer;
        }
    }
    return out;
}

OrbitalPositions read_orbital_positions(const std::string& path, int num_wann)
{
    ModelFileReader in(path, "{orbital_positions}");
    OrbitalPositions out;
    const auto read_position = [&](std::size_t first) {
        const auto& tok = in.tokens();
        Vector3 v{};
        bool ok = tok.size() == first + 3 && !in.overlong();
        for (std::size_t k = 0; ok && k < 3; ++k) ok = token_real(tok[first + k], v[k]) && coordinate_ok(v[k]);
        if (!ok)
            throw in.error(first == 0 ? "expected a position `x y z` (three finite numbers within 1e100)"
                                      : "expected a Wannier centre `X x y z` (three finite numbers within 1e100)");
        out.position.push_back(v);
    };
    const auto next_nonblank = [&] {
        while (in.next_line())
            if (!in.tokens().empty() || in.overlong()) return true;
        return false;
    };
    const auto count_error = [&](std::size_t found, const char* what) {
        return in.file_error(detail::concat(found, " ", what, " found, the model has num_wann = ", num_wann,
                                            " orbitals (allowed: one position per orbital)"));
    };
    if (!next_nonblank()) throw count_error(0, "positions");
    std::int64_t count = 0;
    if (in.tokens().size() == 1 && !in.overlong() && token_integer(in.tokens()[0], count)) {
        // Wannier90 SEED_centres.xyz: count, comment, `count` entries.
        if (count < num_wann)
            throw in.error(detail::concat("the xyz count ", count, " is below num_wann = ", num_wann,
                                          " (allowed: the centres plus any atoms)"));
        if (!in.next_line()) throw in.file_error("ends after the count line (expected a comment line, then the entries)");
        std::int64_t entries = 0;
        while (next_nonblank()) {
            if (++entries > count)
                throw in.error(detail::concat("more than the ", count, " entries the count line announces"));
            const auto& tok = in.tokens();
            const bool centre = !in.overlong() && !tok.empty() && tok[0] == "X";
            if (centre && static_cast<std::int64_t>(out.position.size()) < num_wann) read_position(1);
        }
        if (entries < count)
            throw in.file_error(detail::concat(entries, " entries, the count line announces ", count));
        if (static_cast<std::int64_t>(out.position.size()) < num_wann) throw count_error(out.position.size(), "Wannier centres (X lines)");
    } else {
        // Plain: one `x y z` per orbital.
        do {
            if (static_cast<std::int64_t>(out.position.size()) == num_wann)
                throw in.error(detail::concat("more positions than num_wann = ", num_wann, " (allowed: one per orbital)"));
            read_position(0);
        } while (next_nonblank());
        if (static_cast<std::int64_t>(out.position.size()) != num_wann) throw count_error(out.position.size(), "positions");
    }
    out.file = in.finish();
    return out;
}

}  // namespace topokpm::hamiltonians::file_models
