#include <array>

#include "numerics/spmmv/stencil_kernels.hpp"

namespace topokpm::numerics::kernels::cuda {

template <class T>
StencilTables<T> make_stencil_tables(const BlockStencil& stencil)
{
    stencil.validate();
    const int nb = stencil.orbitals;
    std::vector<const std::vector<complex_type>*> blocks{&stencil.onsite};
    std::vector<std::array<int, 3>> shifts{{0, 0, 0}};
    for (const StencilTerm& t : stencil.terms) {
        blocks.push_back(&t.block);
        shifts.push_back({t.dx, t.dy, t.dz});
    }
    const int num_terms = static_cast<int>(blocks.size());
    StencilTables<T> out;
    std::vector<int> mask(static_cast<std::size_t>(num_terms), 0);
    out.entry_begin.push_back(0);
    for (int o = 0; o < nb; ++o)
        for (int t = 0; t < num_terms; ++t) {
            for (int b = 0; b < nb; ++b) {
                const complex_type v = (*blocks[static_cast<std::size_t>(t)])[static_cast<std::size_t>(o * nb + b)];
                if (v != complex_type(0.0, 0.0)) {
                    out.entry_column.push_back(b);
                    out.entry_value.push_back(T(v));
                    if (nb * nb <= 32) mask[static_cast<std::size_t>(t)] |= 1 << (o * nb + b);
                }
            }
            out.entry_begin.push_back(static_cast<int>(out.entry_column.size()));
        }
    for (int t = 0; t < num_terms; ++t) {
        const auto& d = shifts[static_cast<std::size_t>(t)];
        out.terms.insert(out.terms.end(), {d[0], d[1], d[2], mask[static_cast<std::size_t>(t)]});
    }
    for (const auto* blk : blocks)
        for (const complex_double& v : *blk) out.dense_blocks.push_back(T(v));
    if (stencil.field.active())
        for (const auto* blk : blocks) out.field_blocks.insert(out.field_blocks.end(), blk->begin(), blk->end());
    return out;
}

template <class T>
BasicStencilView<T> host_stencil_view(const BlockStencil& stencil, const StencilTables<T>& tables)
{
    BasicStencilView<T> view;
    view.nx = stencil.nx;
    view.ny = stencil.ny;
    view.nz = stencil.nz;
    view.orbitals = stencil.orbitals;
    for (int k = 0; k < 3; ++k) view.periodic[k] = stencil.periodic[k] ? 1 : 0;
    view.num_terms = static_cast<int>(tables.terms.size() / 4);
    view.num_entries = static_cast<int>(tables.entry_column.size());
    view.terms = tables.terms.data();
    view.entry_begin = tables.entry_begin.data();
    view.entry_column = tables.entry_column.data();
    view.entry_value = tables.entry_value.data();
    view.dense_blocks = tables.dense_blocks.data();
    view.potential = stencil.potential.data();
    view.potential_per_row = stencil.potential_per_row() ? 1 : 0;
    view.num_rows = static_cast<local_index>(stencil.num_rows());
    if (stencil.field.active()) {
        view.field = {reinterpret_cast<const double*>(stencil.field.along.data()),
                      reinterpret_cast<const double*>(stencil.field.across.data()), stencil.nx, stencil.ny,
                      stencil.orbitals};
        view.field_blocks = reinterpret_cast<const double*>(tables.field_blocks.data());
    }
    return view;
}

template StencilTables<complex_double> make_stencil_tables(const BlockStencil&);
template StencilTables<complex_single> make_stencil_tables(const BlockStencil&);
template BasicStencilView<complex_double> host_stencil_view(const BlockStencil&, const StencilTables<complex_double>&);
template BasicStencilView<complex_single> host_stencil_view(const BlockStencil&, const StencilTables<complex_single>&);

}  // namespace topokpm::numerics::kernels::cuda
