#include <cstddef>
#include <cstdint>
#include <vector>
#include <gtest/gtest.h>

#include "runtime/base/error.hpp"
#include "runtime/base/system.hpp"
#include "runtime/base/timer.hpp"

using namespace topokpm;

TEST(FormatBytes, UsesBinaryPrefixes)
{
    EXPECT_EQ(format_bytes(512), "512 B");
    EXPECT_EQ(format_bytes(1536), "1.5 KiB");
    EXPECT_EQ(format_bytes(3.0 * 1024 * 1024 * 1024), "3.0 GiB");
}

TEST(RequireMemory, RefusesWithBothNumbersAndTheLimitThatApplied)
{
    EXPECT_NO_THROW(require_memory(1e9, MemoryLimit{2e9, "have 1.9 GiB"}, "run"));
    try {
        require_memory(2.0 * 1024 * 1024 * 1024, memory_limit(1.0, 1), "this run");
        FAIL() << "no ResourceError";
    } catch (const ResourceError& e) {
        EXPECT_NE(std::string(e.what()).find("this run needs 2.0 GiB, the limit {memory_limit} is 1.0 GiB"),
                  std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find("this machine"), std::string::npos) << e.what();
    }
    const MemoryLimit machine = memory_limit(0.0, 1);
    EXPECT_NE(machine.source.find("available on this machine"), std::string::npos) << machine.source;
}

// The program's operator new names the size it could not allocate (a memory refusal, not
// an internal error), and allocate_pages does too.
TEST(AllocationFailed, NamesTheSize)
{
    const std::size_t huge = std::size_t(1) << 62;  // 4 EiB: no machine maps it
    try {
        std::vector<char> v(huge);
        FAIL() << "allocated 4 EiB";
    } catch (const AllocationFailed& e) {
        EXPECT_STREQ(e.what(), "out of memory: allocating 4.0 EiB failed");
        EXPECT_EQ(e.bytes(), static_cast<double>(huge));
    }
    EXPECT_THROW(allocate_pages(huge), AllocationFailed);
}

TEST(AvailableMemory, IsPositive) { EXPECT_GT(available_memory_bytes(), 0u); }

TEST(PhaseTimers, AccumulatePerPhaseInFirstUseOrder)
{
    PhaseTimers t;
    t.add("b", 1.0);
    t.add("a", 2.0);
    t.add("b", 0.5);
    EXPECT_EQ(t.get("b"), 1.5);
    EXPECT_EQ(t.phases().front().first, "b");
    EXPECT_EQ(t.time("c", [] { return 7; }), 7);
    EXPECT_GE(t.get("c"), 0.0);
}

// A part timed inside a phase moves out of it, listed right before it; the sum is unchanged.
TEST(PhaseTimers, SplitMovesAPartOutOfItsPhase)
{
    PhaseTimers t;
    t.add("build", 1.0);
    t.add("moments", 10.0);
    t.split("moments", "start", 2.5);
    ASSERT_EQ(t.phases().size(), 3u);
    EXPECT_EQ(t.phases()[1].first, "start");
    EXPECT_EQ(t.get("start"), 2.5);
    EXPECT_EQ(t.get("moments"), 7.5);
    t.split("moments", "start", 0.5);  // an existing part grows
    EXPECT_EQ(t.phases().size(), 3u);
    EXPECT_EQ(t.get("start"), 3.0);
    EXPECT_EQ(t.get("moments"), 7.0);
}

// Large arrays: the last two released of a size come back for a request of that size (so a
// block's first touch is paid once per run); another size gets fresh storage. Small arrays
// are plain allocations. The addresses are the observable: reuse returns the same pointer.
TEST(AllocatePages, ReusesTheLastReleasedLargeArraysOfTheSameSize)
{
    const std::size_t big = std::size_t(6) << 20;
    void* a = allocate_pages(big);
    void* b = allocate_pages(big);
    ASSERT_NE(a, b);
    static_cast<char*>(a)[big - 1] = 1;  // the whole rounded size is usable
    release_pages(a);
    release_pages(b);
    void* c = allocate_pages(big - 100);  // same 2 MiB-rounded size: one of the two kept
    void* d = allocate_pages(big);
    EXPECT_TRUE((c == a && d == b) || (c == b && d == a));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(c) % (std::size_t(2) << 20), 0u);
    release_pages(c);
    release_pages(d);
    void* e = allocate_pages(big + (std::size_t(4) << 20));  // another size: fresh, the kept freed
    static_cast<char*>(e)[0] = 2;
    release_pages(e);
    void* f = allocate_pages(128);
    void* g = allocate_pages(128);
    EXPECT_NE(f, g);
    release_pages(f);
    release_pages(g);
    release_pages(nullptr);
}
