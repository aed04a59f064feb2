// Strict number parsing (runtime/base/parse.hpp): every accepted text is exactly a decimal
// number of the type; everything that a looser parser would skip, wrap or reinterpret is
// refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "runtime/base/parse.hpp"

namespace topokpm::parse {
namespace {

TEST(ParseInt64, AcceptsDecimalIntegersOverTheWholeRange)
{
    std::int64_t v = 0;
    EXPECT_TRUE(int64("0", v) && v == 0);
    EXPECT_TRUE(int64("-17", v) && v == -17);
    EXPECT_TRUE(int64("9223372036854775807", v) && v == std::numeric_limits<std::int64_t>::max());
    EXPECT_TRUE(int64("-9223372036854775808", v) && v == std::numeric_limits<std::int64_t>::min());
}

TEST(ParseInt64, RefusesWhatALooseParserWouldReinterpret)
{
    std::int64_t v = 42;
    for (const char* bad : {"", "-", " 5", "5 ", "+5", "0x10", "1e3", "5.0", "12abc", "9223372036854775808",
                            "-9223372036854775809", "--1", "\t7"})
        EXPECT_FALSE(int64(bad, v)) << bad;
    EXPECT_EQ(v, 42) << "a refused text leaves the value alone";
}

TEST(ParseUint64, SeedsAreDigitsOnly)
{
    std::uint64_t v = 0;
    EXPECT_TRUE(uint64("18446744073709551615", v) && v == std::numeric_limits<std::uint64_t>::max());
    for (const char* bad : {"-1", " -1", "+1", "18446744073709551616", "1e2", "0x1", ""})
        EXPECT_FALSE(uint64(bad, v)) << bad;
}

TEST(ParseReal, AcceptsFiniteDecimalNumbers)
{
    double v = 0;
    EXPECT_TRUE(real("0.5", v) && v == 0.5);
    EXPECT_TRUE(real("-2", v) && v == -2.0);
    EXPECT_TRUE(real("+3.", v) && v == 3.0);
    EXPECT_TRUE(real(".25", v) && v == 0.25);
    EXPECT_TRUE(real("1e-3", v) && v == 1e-3);
    EXPECT_TRUE(real("-6.5E+2", v) && v == -650.0);
    EXPECT_TRUE(real("1e-310", v) && v > 0.0) << "a subnormal is a valid value";
    EXPECT_TRUE(real("1e-400", v) && v == 0.0) << "underflow to zero is rounding, not an error";
}

TEST(ParseReal, RefusesNonFiniteHexAndPaddedText)
{
    double v = 7;
    for (const char* bad : {"", ".", "e5", "1e", "1e+", "nan", "NaN", "inf", "-infinity", "0x1p3", "0x10", " 1",
                            "1 ", "1,5", "1.2.3", "1e999", "-1e400", "5d"})
        EXPECT_FALSE(real(bad, v)) << bad;
    EXPECT_EQ(v, 7.0);
}

}  // namespace
}  // namespace topokpm::parse
