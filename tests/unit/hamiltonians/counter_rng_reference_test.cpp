// The counter-based generator of models.md §1 against reference values computed once,
// independently of this code base, with Python's arbitrary-precision integers:
//
//   M = 2**64 - 1
//   def splitmix64(seed, c):
//       z = (seed + (c + 1) * 0x9E3779B97F4A7C15) & M
//       z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
//       z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
//       return z ^ (z >> 31)
//   uniform = lambda s, c: (splitmix64(s, c) >> 11) * 2.0**-53   # printed with repr()
//
// splitmix64(0, 0) = 0xe220a8397b1dcdaf is also the well-known first output of the
// SplitMix64 generator started from state 0. repr() prints the shortest decimal that
// round-trips, so the literals below are exactly the doubles Python computed.
#include <gtest/gtest.h>

#include <cstdint>

#include "numerics/base/counter_rng.hpp"

namespace topokpm {
namespace {

struct Reference {
    std::uint64_t seed, counter, bits;
    double uniform;
};

constexpr Reference references[] = {
    {0, 0, 0xe220a8397b1dcdafULL, 0.8833108082136426},
    {1, 1, 0xbeeb8da1658eec67ULL, 0.7457817572627011},
    {1, 2, 0xf893a2eefb32555eULL, 0.9710027535867962},
    {12345, 678, 0x8778c93cd56f189bULL, 0.5291867993850555},
    {0xffffffffffffffffULL, 0xfffffffffffffffeULL, 0xde0a564cbcd060c4ULL, 0.8673452317569299},
    {0xdeadbeefULL, 1ULL << 40, 0xcdcd0811df0426c3ULL, 0.8039097827559236},
};

TEST(CounterRng, Splitmix64MatchesPythonReference)
{
    for (const Reference& r : references) EXPECT_EQ(splitmix64(r.seed, r.counter), r.bits) << r.seed << " " << r.counter;
}

TEST(CounterRng, UniformMatchesPythonReferenceExactly)
{
    for (const Reference& r : references) EXPECT_EQ(uniform(r.seed, r.counter), r.uniform) << r.seed << " " << r.counter;
}

TEST(CounterRng, StreamSeedsAreSplitmixOfTheUserSeed)
{
    // S_d = splitmix64(seed, 1), S_v = splitmix64(seed, 2): for seed 1 these are the
    // (1, 1) and (1, 2) references above.
    EXPECT_EQ(disorder_stream_seed(1), 0xbeeb8da1658eec67ULL);
    EXPECT_EQ(vector_stream_seed(1), 0xf893a2eefb32555eULL);
    // Python: [uniform(splitmix64(7, 1), k) for k in range(3)]
    const std::uint64_t sd = disorder_stream_seed(7);
    EXPECT_EQ(uniform(sd, 0), 0.5091093394740435);
    EXPECT_EQ(uniform(sd, 1), 0.7512630066025818);
    EXPECT_EQ(uniform(sd, 2), 0.9027352708407611);
}

}  // namespace
}  // namespace topokpm
