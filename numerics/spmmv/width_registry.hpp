#pragma once
/// @file width_registry.hpp
/// The one list of block widths R with compile-time specialised SpMMV kernels, shared by
/// every kernel family (CPU SELL, CPU stencil, CUDA SELL, CUDA stencil). It is generated
/// from the CMake option TOPOKPM_SPMMV_WIDTHS (a subset of 1, 2, 4, 8, 16, 32 containing 1;
/// default all six) into topokpm/spmmv_widths.hpp. A kernel family dispatches a run-time
/// width with with_width(); widths outside the list run its generic kernel (CPU) or are
/// strip-mined into registered widths (CUDA, strip_widths()).
///
/// Header-only and host/device neutral (no CUDA attributes): the .cu files use it on the host.

#include <type_traits>
#include <utility>
#include <vector>

#include "topokpm/spmmv_widths.hpp"

namespace topokpm::numerics {

/// R as a compile-time constant; R = 0 stands for "not registered" (the generic kernel).
template <int R>
using Width = std::integral_constant<int, R>;

namespace detail {
template <class F, int... W>
decltype(auto) with_width(int r, F& f, std::integer_sequence<int, W...>)
{
    using Result = decltype(f(Width<0>{}));
    if constexpr (std::is_void_v<Result>) {
        const bool found = ((r == W ? (f(Width<W>{}), true) : false) || ...);
        if (!found) f(Width<0>{});
    } else {
        Result out{};
        const bool found = ((r == W ? (out = f(Width<W>{}), true) : false) || ...);
        if (!found) out = f(Width<0>{});
        return out;
    }
}
template <int... W>
constexpr bool is_registered(int r, std::integer_sequence<int, W...>)
{
    return ((r == W) || ...);
}
template <int... W>
std::vector<int> registered_list(std::integer_sequence<int, W...>)
{
    return {W...};
}
}  // namespace detail

/// Calls f(Width<R>{}) when r is a registered width R, else f(Width<0>{}); returns what f
/// returns (f's result type must not depend on R). Replaces a switch over the widths.
template <class F>
decltype(auto) with_width(int r, F&& f)
{
    return detail::with_width(r, f, SpmmvWidths{});
}

/// True when R = r has compile-time specialised kernels.
constexpr bool is_registered_width(int r) { return detail::is_registered(r, SpmmvWidths{}); }

/// The registered widths, ascending.
inline std::vector<int> registered_widths() { return detail::registered_list(SpmmvWidths{}); }

/// Strip widths for R >= 1 columns: greedy over the registered widths, largest first (e.g.
/// {8, 4} for R = 12 with the default list). Every strip is registered (1 always is).
inline std::vector<int> strip_widths(int num_cols)
{
    const std::vector<int> registered = registered_widths();
    std::vector<int> strips;
    for (int rest = num_cols; rest > 0;) {
        int w = 1;
        for (const int c : registered)
            if (c <= rest) w = c;
        strips.push_back(w);
        rest -= w;
    }
    return strips;
}

}  // namespace topokpm::numerics
