#include "hamiltonians/graphene/graphene_model.hpp"

#include <cmath>

#include "runtime/base/error.hpp"

namespace topokpm::hamiltonians::graphene {

GrapheneModel::GrapheneModel(const ModelParams& params) : StencilModel(params) {}

int GrapheneModel::row(global_index row, global_index* cols, complex_type* values) const
{
    TOPOKPM_REQUIRE(row >= 0 && row < num_rows(), "graphene row ", row, " outside [0, ", num_rows(), ")");
    return stencil_.row_entries(row, stencil_.potential(row), cols, values);
}

double GrapheneModel::potential(global_index row) const
{
    TOPOKPM_REQUIRE(row >= 0 && row < num_rows(), "graphene row ", row, " outside [0, ", num_rows(), ")");
    return stencil_.potential(row);
}

std::optional<LatticeGeometry> GrapheneModel::geometry() const
{
    LatticeGeometry g;
    g.dimensions = 2;
    g.cell = {{{std::sqrt(3.0), 0.0, 0.0}, {std::sqrt(3.0) / 2.0, 1.5, 0.0}, {0.0, 0.0, 1.0}}};
    g.offset = {{0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}};
    g.extent = {params_.nx, params_.ny, 1};
    g.periodic = {params_.boundary[0] == 'p', params_.boundary[1] == 'p', false};
    return g;
}

AttributeList GrapheneModel::attributes() const
{
    const ModelParams& p = params_;
    AttributeList attributes{
        {"name", std::string("graphene")},
        {"Nx", std::int64_t(p.nx)},
        {"Ny", std::int64_t(p.ny)},
        {"Nz", std::int64_t(1)},
        {"t", p.t},
        {"dot_potential", p.dot_potential},
        {"dot_radius", p.dot_radius},
        {"dot_period", std::int64_t(p.dot_period)},
        {"disorder", p.disorder},
        {"disorder_seed", std::uint64_t(p.disorder_seed)},
        {"boundary", p.boundary},
    };
    append_field_attributes(attributes, p.flux, "-(a1 + a2)/6, the midpoint of the bond A(0,0)-B(0,-1)");
    return attributes;
}

}  // namespace topokpm::hamiltonians::graphene
