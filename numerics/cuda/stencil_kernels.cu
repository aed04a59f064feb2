// Matrix-free augmented SpMMV on the GPU: the launches of the kernels in stencil_device.cuh
// (what they compute, their thread mapping and precision rules are stated there), the choice
// between them, and the stencil_spmmv entry of numerics/spmmv/stencil_kernels.hpp.

#include <cstdlib>
#include <string>
#include <type_traits>

#include "numerics/cuda/stencil_device.cuh"
#include "numerics/cuda/sweep_driver.cuh"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"

namespace topokpm::numerics::kernels::cuda {
namespace {

using detail::block_threads;
using detail::SweepScalars;
using namespace stencil;

template <int W, int B, int P, bool Dots, class V2>
int launch_site_columns(const BasicStencilView<V2>& st, const V2* x, V2* y, const SweepScalars& s,
                        DotWorkspace& workspace)
{
    auto kernel = stencil_site_kernel<W, B, P, Dots, V2>;
    const int grid = detail::grid_for(st.num_rows / B, W / P, detail::resident_grid(kernel));
    double* partials = Dots ? workspace.partials(3 * static_cast<std::size_t>(grid) * W) : nullptr;
    kernel<<<grid, block_threads, site_table_bytes(st)>>>(st, x, y, s, partials);
    return grid;
}

/// Whether single-precision site sweeps may pair columns: yes, unless the environment sets
/// TOPOKPM_CUDA_PAIRED_COLUMNS=0. A measurement switch, read once: the device check runs the
/// single R = 32 sweep both ways until an H200 has measured the pairing (written without a
/// GPU); it then goes, with the losing variant.
bool pairing_allowed()
{
    static const bool allowed = [] {
        const char* v = std::getenv("TOPOKPM_CUDA_PAIRED_COLUMNS");
        return v == nullptr || std::string(v) != "0";
    }();
    return allowed;
}

/// Single precision pairs the columns where it can (P = 2: W >= 2 and paired_columns); double
/// and the rest take one column per thread.
template <int W, int B, bool Dots, class V2>
int launch_site(const BasicStencilView<V2>& st, const V2* x, V2* y, const SweepScalars& s, DotWorkspace& workspace)
{
    if constexpr (std::is_same_v<V2, float2> && W >= 2)
        if (pairing_allowed() && detail::paired_columns(s, x, y))
            return launch_site_columns<W, B, 2, Dots>(st, x, y, s, workspace);
    return launch_site_columns<W, B, 1, Dots>(st, x, y, s, workspace);
}

template <int W, bool Dots, class V2>
int launch(const BasicStencilView<V2>& st, const V2* x, V2* y, const SweepScalars& s, DotWorkspace& workspace)
{
    const bool field = st.field.along != nullptr;  // a field: the row kernel (stencil_kernels.hpp)
    if (st.orbitals == 4 && !field) return launch_site<W, 4, Dots>(st, x, y, s, workspace);
    if (st.orbitals == 2 && !field) return launch_site<W, 2, Dots>(st, x, y, s, workspace);
    auto kernel = stencil_augmented_kernel<W, Dots, V2>;
    const int grid = detail::grid_for(st.num_rows, W, detail::resident_grid(kernel));
    double* partials = Dots ? workspace.partials(3 * static_cast<std::size_t>(grid) * W) : nullptr;
    kernel<<<grid, block_threads, table_bytes(st)>>>(st, x, y, s, partials);
    return grid;
}

}  // namespace

/// Both precisions: T the host complex type, the view and blocks reinterpreted as its
/// device type (same size and layout).
template <class T>
SweepInfo stencil_spmmv(const BasicStencilView<T>& host_view, const T* x, T* y, int num_cols, const AugmentedOps& ops,
                        DotWorkspace& workspace, DotSums* dots)
{
    TOPOKPM_REQUIRE(x != y, "stencil_spmmv: x and y are the same block (", x, ")");
    using V2 = typename detail::DeviceComplex<T>::type;
    BasicStencilView<V2> st;
    st.nx = host_view.nx;
    st.ny = host_view.ny;
    st.nz = host_view.nz;
    st.orbitals = host_view.orbitals;
    for (int k = 0; k < 3; ++k) st.periodic[k] = host_view.periodic[k];
    st.num_terms = host_view.num_terms;
    st.num_entries = host_view.num_entries;
    st.terms = host_view.terms;
    st.entry_begin = host_view.entry_begin;
    st.entry_column = host_view.entry_column;
    st.entry_value = reinterpret_cast<const V2*>(host_view.entry_value);
    st.dense_blocks = reinterpret_cast<const V2*>(host_view.dense_blocks);
    st.potential = host_view.potential;
    st.potential_per_row = host_view.potential_per_row;
    st.num_rows = host_view.num_rows;
    st.field = host_view.field;
    st.field_blocks = host_view.field_blocks;
    // The tables must fit the default 48 KiB of shared memory (checked by the operator too).
    TOPOKPM_REQUIRE(table_bytes(st) <= 48 * 1024 && site_table_bytes(st) <= 48 * 1024, "stencil tables of ",
                    table_bytes(st), " / ", site_table_bytes(st), " bytes");
    const auto* xd = reinterpret_cast<const V2*>(x);
    auto* yd = reinterpret_cast<V2*>(y);
    constexpr bool single = std::is_same_v<T, complex_single>;
    return detail::run_strips<single>(num_cols, ops, workspace, dots, [&](auto w, const SweepScalars& s, auto d) {
        return launch<decltype(w)::value, decltype(d)::value>(st, xd, yd, s, workspace);
    });
}

template SweepInfo stencil_spmmv(const BasicStencilView<complex_double>&, const complex_double*, complex_double*, int,
                                 const AugmentedOps&, DotWorkspace&, DotSums*);
template SweepInfo stencil_spmmv(const BasicStencilView<complex_single>&, const complex_single*, complex_single*, int,
                                 const AugmentedOps&, DotWorkspace&, DotSums*);

}  // namespace topokpm::numerics::kernels::cuda
