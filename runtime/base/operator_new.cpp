/// @file operator_new.cpp
/// The program's replaceable allocation functions (runtime/base/system.hpp, AllocationFailed).

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <new>

#include "runtime/base/system.hpp"

// The program's operator new (replaces the library's; array, nothrow and aligned-delete forms
// reach these): as the standard's, with the new-handler loop, but a failure throws
// AllocationFailed naming the size, so a refusal can say how much did not fit. The library's
// operator delete (free) pairs with both. A file of its own: nothing here is inlined into code
// that frees.
void* operator new(std::size_t bytes)
{
    for (;;) {
        if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
        const std::new_handler h = std::get_new_handler();
        if (h == nullptr) throw topokpm::AllocationFailed(static_cast<double>(bytes));
        h();
    }
}

void* operator new(std::size_t bytes, std::align_val_t align)
{
    const std::size_t a = std::max(static_cast<std::size_t>(align), sizeof(void*));
    if (bytes > std::numeric_limits<std::size_t>::max() - a) throw topokpm::AllocationFailed(static_cast<double>(bytes));
    const std::size_t size = std::max(a, (bytes + a - 1) / a * a);  // aligned_alloc: a multiple of the alignment
    for (;;) {
        if (void* p = std::aligned_alloc(a, size)) return p;
        const std::new_handler h = std::get_new_handler();
        if (h == nullptr) throw topokpm::AllocationFailed(static_cast<double>(bytes));
        h();
    }
}
