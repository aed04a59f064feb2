// Matrix-free augmented SpMMV on the GPU: the launches of the kernels in stencil_device.cuh
// (what they compute, their thread mapping and precision rules are stated there), the choice
// between them, and the stencil_spmmv entry of numerics/spmmv/stencil_kernels.hpp.

#include <type_traits>

#include "numerics/cuda/stencil_device.cuh"
#include "numerics/cuda/sweep_driver.cuh"
#include "numerics/spmmv/stencil_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"

namespace topokpm::numerics::kernels::cuda {

/// Both precisions: T the host complex type, the view and blocks reinterpreted as its
/// device type (same size and layout).
template <class T>
SweepInfo stencil_spmmv(const BasicStencilView<T>& host_view, const T* x, T* y, int num_cols, const AugmentedOps& ops,
                        DotWorkspace& workspace, DotSums* dots)
{
    TOPOKPM_REQUIRE(x != y, "stencil_spmmv: x and y are the same block (", x, ")");
    using V2 = typename detail::DeviceComplex<T>::type;
    const BasicStencilView<V2> st = stencil::device_typed(host_view);
    // The tables must fit the default 48 KiB of shared memory (checked by the operator too).
    TOPOKPM_REQUIRE(stencil::table_bytes(st) <= 48 * 1024 && stencil::site_table_bytes(st) <= 48 * 1024,
                    "stencil tables of ", stencil::table_bytes(st), " / ", stencil::site_table_bytes(st), " bytes");
    const auto* xd = reinterpret_cast<const V2*>(x);
    auto* yd = reinterpret_cast<V2*>(y);
    constexpr bool single = std::is_same_v<T, complex_single>;
    return detail::run_strips<single>(
        num_cols, ops, workspace, dots, [&](auto w, const detail::SweepScalars& s, auto d) {
            constexpr int W = decltype(w)::value;
            constexpr bool Dots = decltype(d)::value;
            return stencil::with_stencil_kernel<W, Dots>(st, s, xd, yd, detail::pairing_allowed(),
                                                         detail::grid_launch<W, Dots>(st, xd, yd, s, workspace));
        });
}

template SweepInfo stencil_spmmv(const BasicStencilView<complex_double>&, const complex_double*, complex_double*, int,
                                 const AugmentedOps&, DotWorkspace&, DotSums*);
template SweepInfo stencil_spmmv(const BasicStencilView<complex_single>&, const complex_single*, complex_single*, int,
                                 const AugmentedOps&, DotWorkspace&, DotSums*);

}  // namespace topokpm::numerics::kernels::cuda
