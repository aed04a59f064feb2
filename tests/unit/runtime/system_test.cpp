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

TEST(RequireMemory, RefusesWithBothNumbers)
{
    EXPECT_NO_THROW(require_memory(1e9, 2e9, "run"));
    try {
        require_memory(2.0 * 1024 * 1024 * 1024, 1.0 * 1024 * 1024 * 1024, "this run");
        FAIL() << "no ResourceError";
    } catch (const ResourceError& e) {
        EXPECT_NE(std::string(e.what()).find("this run needs 2.0 GiB, have 1.0 GiB"), std::string::npos) << e.what();
    }
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
