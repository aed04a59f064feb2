// Augmented SpMMV over SELL-C-σ on the GPU: the launches of the kernels in sell_device.cuh
// (what they compute, their traffic and precision rules are stated there) and the sell_spmmv
// entry of numerics/spmmv/sell_kernels.hpp.

#include <type_traits>

#include "numerics/cuda/sell_device.cuh"
#include "numerics/cuda/sweep_driver.cuh"
#include "numerics/spmmv/sell_kernels.hpp"
#include "numerics/spmmv/width_registry.hpp"

namespace topokpm::numerics::kernels::cuda {
namespace {

using detail::block_threads;
using detail::SweepScalars;
using namespace sell;

template <int W, bool Dots, class V2>
int launch(const BasicSellView<V2>& a, const V2* x, V2* y, const SweepScalars& s, DotWorkspace& workspace)
{
    return with_sell_kernel<W, Dots>(
        a, s, x, y, detail::pairing_allowed(), [&](auto kernel, std::int64_t units, int per_unit, std::size_t shared) {
            const int grid = detail::grid_for(units, per_unit, detail::resident_grid(kernel));
            double* partials = Dots ? workspace.partials(3 * static_cast<std::size_t>(grid) * W) : nullptr;
            kernel<<<grid, block_threads, shared>>>(a, x, y, s, partials);
            return grid;
        });
}

}  // namespace

/// Both precisions: T the host complex type, the view and blocks reinterpreted as its
/// device type (same size and layout).
template <class T>
SweepInfo sell_spmmv(const BasicSellView<T>& host_view, const T* x, T* y, int num_cols, const AugmentedOps& ops,
                     DotWorkspace& workspace, DotSums* dots)
{
    TOPOKPM_REQUIRE(x != y, "sell_spmmv: x and y are the same block (", x, ")");
    using V2 = typename detail::DeviceComplex<T>::type;
    TOPOKPM_REQUIRE(host_view.chunk_height >= 1, "sell_spmmv: chunk height ", host_view.chunk_height);
    const BasicSellView<V2> a = device_typed(host_view);
    const auto* xd = reinterpret_cast<const V2*>(x);
    auto* yd = reinterpret_cast<V2*>(y);
    constexpr bool single = std::is_same_v<T, complex_single>;
    return detail::run_strips<single>(num_cols, ops, workspace, dots, [&](auto w, const SweepScalars& s, auto d) {
        return launch<decltype(w)::value, decltype(d)::value>(a, xd, yd, s, workspace);
    });
}

template SweepInfo sell_spmmv(const BasicSellView<complex_double>&, const complex_double*, complex_double*, int,
                              const AugmentedOps&, DotWorkspace&, DotSums*);
template SweepInfo sell_spmmv(const BasicSellView<complex_single>&, const complex_single*, complex_single*, int,
                              const AugmentedOps&, DotWorkspace&, DotSums*);

}  // namespace topokpm::numerics::kernels::cuda
