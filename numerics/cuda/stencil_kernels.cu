// Matrix-free augmented SpMMV on the GPU: the launches of the kernels in stencil_device.cuh
// (what they compute, their thread mapping and precision rules are stated there), the choice
// between them, and the stencil_spmmv entry of numerics/spmmv/stencil_kernels.hpp.

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

template <int W, bool Dots, class V2>
int launch(const BasicStencilView<V2>& st, const V2* x, V2* y, const SweepScalars& s, DotWorkspace& workspace)
{
    return with_stencil_kernel<W, Dots>(
        st, s, x, y, detail::pairing_allowed(), [&](auto kernel, std::int64_t units, int per_unit, std::size_t shared_bytes) {
            const int grid = detail::grid_for(units, per_unit, detail::resident_grid(kernel));
            double* partials = Dots ? workspace.partials(3 * static_cast<std::size_t>(grid) * W) : nullptr;
            kernel<<<grid, block_threads, shared_bytes>>>(st, x, y, s, partials);
            return grid;
        });
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
    const BasicStencilView<V2> st = device_typed(host_view);
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
