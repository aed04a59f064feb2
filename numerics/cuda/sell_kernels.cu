// Augmented SpMMV over SELL-C-σ on the GPU: the launches of the kernels in sell_device.cuh
// (what they compute, their traffic and precision rules are stated there) and the sell_spmmv
// entry of numerics/spmmv/sell_kernels.hpp.

#include <type_traits>

#include "numerics/cuda/sell_device.cuh"
#include "numerics/cuda/sweep_driver.cuh"
#include "numerics/spmmv/sell_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"

namespace topokpm::numerics::kernels::cuda {

/// Both precisions: T the host complex type, the view and blocks reinterpreted as its
/// device type (same size and layout).
template <class T>
SweepInfo sell_spmmv(const BasicSellView<T>& host_view, const T* x, T* y, int num_cols, const AugmentedOps& ops,
                     DotWorkspace& workspace, DotSums* dots)
{
    TOPOKPM_REQUIRE(x != y, "sell_spmmv: x and y are the same block (", x, ")");
    using V2 = typename detail::DeviceComplex<T>::type;
    TOPOKPM_REQUIRE(host_view.chunk_height >= 1, "sell_spmmv: chunk height ", host_view.chunk_height);
    const BasicSellView<V2> a = sell::device_typed(host_view);
    const auto* xd = reinterpret_cast<const V2*>(x);
    auto* yd = reinterpret_cast<V2*>(y);
    constexpr bool single = std::is_same_v<T, complex_single>;
    return detail::run_strips<single>(
        num_cols, ops, workspace, dots, [&](auto w, const detail::SweepScalars& s, auto d) {
            constexpr int W = decltype(w)::value;
            constexpr bool Dots = decltype(d)::value;
            return sell::with_sell_kernel<W, Dots>(a, s, xd, yd, detail::pairing_allowed(),
                                                   detail::grid_launch<W, Dots>(a, xd, yd, s, workspace));
        });
}

template SweepInfo sell_spmmv(const BasicSellView<complex_double>&, const complex_double*, complex_double*, int,
                              const AugmentedOps&, DotWorkspace&, DotSums*);
template SweepInfo sell_spmmv(const BasicSellView<complex_single>&, const complex_single*, complex_single*, int,
                              const AugmentedOps&, DotWorkspace&, DotSums*);

}  // namespace topokpm::numerics::kernels::cuda
