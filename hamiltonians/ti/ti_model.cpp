#include "hamiltonians/ti/ti_model.hpp"

#include "runtime/base/error.hpp"

namespace topokpm::hamiltonians::ti {

TiModel::TiModel(const ModelParams& params) : StencilModel(params) {}

int TiModel::row(global_index row, global_index* cols, complex_type* values) const
{
    TOPOKPM_REQUIRE(row >= 0 && row < num_rows(), "ti row ", row, " outside [0, ", num_rows(), ")");
    const global_index site = row / TiStencil::num_orbitals;
    const int orbital = static_cast<int>(row % TiStencil::num_orbitals);
    TiStencil::Block blocks[TiStencil::max_blocks];
    const int nb = stencil_.blocks(site, blocks);
    return stencil_.row_entries(blocks, nb, orbital, stencil_.potential(site), cols, values);
}

double TiModel::potential(global_index row) const
{
    TOPOKPM_REQUIRE(row >= 0 && row < num_rows(), "ti row ", row, " outside [0, ", num_rows(), ")");
    return stencil_.potential(row / TiStencil::num_orbitals);
}

std::optional<LatticeGeometry> TiModel::geometry() const
{
    LatticeGeometry g;
    g.dimensions = 3;
    g.cell = {{{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}}};
    g.offset.assign(TiStencil::num_orbitals, {0.0, 0.0, 0.0});
    g.extent = {params_.nx, params_.ny, params_.nz};
    for (int d = 0; d < 3; ++d) g.periodic[d] = params_.boundary[d] == 'p';
    return g;
}

AttributeList TiModel::attributes() const
{
    const ModelParams& p = params_;
    AttributeList attributes{
        {"name", std::string("ti")},
        {"Nx", std::int64_t(p.nx)},
        {"Ny", std::int64_t(p.ny)},
        {"Nz", std::int64_t(p.nz)},
        {"t", p.t},
        {"m", p.m},
        {"dot_potential", p.dot_potential},
        {"dot_radius", p.dot_radius},
        {"dot_period", std::int64_t(p.dot_period)},
        {"dot_depth", std::int64_t(p.dot_depth)},
        {"disorder", p.disorder},
        {"disorder_seed", std::uint64_t(p.disorder_seed)},
        {"boundary", p.boundary},
    };
    if (p.exchange_mass != 0.0)  // only when set: the /model of other runs unchanged
        attributes.push_back({"exchange_mass", p.exchange_mass});
    append_field_attributes(attributes, p.flux, "site (0, 0, z)");
    return attributes;
}

}  // namespace topokpm::hamiltonians::ti
