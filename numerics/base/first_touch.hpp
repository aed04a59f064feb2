#pragma once
/// @file first_touch.hpp
/// A std::vector whose resize() and sized construction leave trivially copyable elements
/// uninitialised, so the first write -- by the thread that will later read the pages, in a
/// static OpenMP loop -- places them (first touch) instead of one thread's zero fill.
/// Value-initialising std::vector<std::complex<double>> of a 8.4e6-row graphene matrix
/// (0.8 GB) on one thread was most of its build time on a VM where a page fault costs
/// microseconds (docs/performance.md, "Issue 13").
///
/// The storage comes from allocate_pages (runtime/base/system.hpp): huge pages for large
/// arrays, so first touch is one fault per 2 MiB.
///
/// Contract: every element must be written before it is read; elements constructed with
/// a value (push_back(v), resize(n, v), assign) are initialised as usual.

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/base/system.hpp"

namespace topokpm {

template <class T>
class FirstTouchAllocator : public std::allocator<T> {
public:
    using value_type = T;
    template <class U>
    struct rebind {
        using other = FirstTouchAllocator<U>;
    };
    FirstTouchAllocator() = default;
    template <class U>
    FirstTouchAllocator(const FirstTouchAllocator<U>&) noexcept
    {}

    T* allocate(std::size_t n) { return static_cast<T*>(allocate_pages(n * sizeof(T))); }
    void deallocate(T* p, std::size_t) noexcept { release_pages(p); }

    /// No-argument construction (resize, sized constructor) leaves the storage as allocated.
    template <class U>
    void construct(U* p) noexcept
    {
        static_assert(std::is_trivially_copyable_v<U> && std::is_trivially_destructible_v<U>,
                      "FirstTouchVector holds plain values only");
        (void)p;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args)
    {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

template <class T, class U>
bool operator==(const FirstTouchAllocator<T>&, const FirstTouchAllocator<U>&) noexcept
{
    return true;
}
template <class T, class U>
bool operator!=(const FirstTouchAllocator<T>&, const FirstTouchAllocator<U>&) noexcept
{
    return false;
}

template <class T>
using FirstTouchVector = std::vector<T, FirstTouchAllocator<T>>;

}  // namespace topokpm
