#include "hamiltonians/velocity.hpp"

#include <cmath>
#include <vector>

#include "runtime/base/error.hpp"

namespace topokpm::hamiltonians {

namespace {

const LatticeGeometry& require_geometry(const std::optional<LatticeGeometry>& g, const Model& model)
{
    TOPOKPM_USER_REQUIRE(g.has_value(), "{conductivity}: model ", model.params().name,
                         " has no positions for the velocity operators (allowed: ti, graphene, hr with --cell-vectors and "
                         "--orbital-positions)");
    return *g;
}

/// A z component makes sense for a 3-D model periodic in z (per unit length); a 2-D model
/// and a slab open in z have a sheet conductance in the plane only.
bool takes_z(const LatticeGeometry& g) { return g.dimensions == 3 && g.periodic[2]; }

}  // namespace

std::array<Axis, 2> parse_conductivity_component(const std::string& text, const Model& model)
{
    const std::optional<LatticeGeometry> g = model.geometry();
    const LatticeGeometry& geometry = require_geometry(g, model);
    const bool z = takes_z(geometry);
    const char* allowed = z ? "two of x, y, z, e.g. xx, xy, zz" : "xx, xy, yx, yy";
    auto axis = [&](char c) -> Axis {
        switch (c) {
        case 'x': return 0;
        case 'y': return 1;
        case 'z': return 2;
        default: return -1;
        }
    };
    const bool letters = text.size() == 2 && axis(text[0]) >= 0 && axis(text[1]) >= 0;
    TOPOKPM_USER_REQUIRE(letters, "{conductivity} '", text, "': not a tensor component (allowed: ", allowed, ")");
    const std::array<Axis, 2> ab{axis(text[0]), axis(text[1])};
    TOPOKPM_USER_REQUIRE(z || (ab[0] != 2 && ab[1] != 2), "{conductivity} ", text, ": model ", model.params().name,
                         geometry.dimensions == 2 ? " is two-dimensional"
                                                  : " is a slab open in z (boundary " + model.params().boundary + ")",
                         ", its sheet conductance has in-plane components only (allowed: ", allowed, ")");
    return ab;
}

ConductivityMeasure conductivity_measure(const Model& model)
{
    const std::optional<LatticeGeometry> g = model.geometry();
    const LatticeGeometry& geometry = require_geometry(g, model);
    if (takes_z(geometry)) return {geometry.volume(), "volume"};
    return {geometry.area(), "area"};
}

VelocityRows::VelocityRows(const Model& model, Axis axis)
    : model_(&model), geometry_(require_geometry(model.geometry(), model)), axis_(axis)
{
    TOPOKPM_REQUIRE(axis >= 0 && axis < 3, "velocity axis ", axis, " outside 0 .. 2");
}

int VelocityRows::row(global_index row, global_index* cols, complex_type* values) const
{
    const int len = model_->row(row, cols, values);
    int kept = 0;
    for (int e = 0; e < len; ++e) {
        const double d = geometry_.separation(row, cols[e])[static_cast<std::size_t>(axis_)];
        if (d == 0.0) continue;  // the diagonal, and hops perpendicular to the axis
        cols[kept] = cols[e];
        values[kept] = complex_type(0.0, d) * values[e];
        ++kept;
    }
    return kept;
}

}  // namespace topokpm::hamiltonians
