#pragma once
/// @file counter_rng.hpp
/// Counter-based random numbers exactly as models.md §1: every random number is a pure
/// function of (stream seed, global counter), so results do not depend on ranks,
/// threads or devices.

#include <cstdint>

namespace topokpm {

/// splitmix64(seed, c) of models.md §1 (all arithmetic mod 2^64).
constexpr std::uint64_t splitmix64(std::uint64_t seed, std::uint64_t c)
{
    std::uint64_t z = seed + (c + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/// uniform(seed, c) in [0, 1) with 53 random bits (models.md §1).
constexpr double uniform(std::uint64_t seed, std::uint64_t c)
{
    return static_cast<double>(splitmix64(seed, c) >> 11) * 0x1.0p-53;
}

/// Stream seed of the Anderson disorder: S_d = splitmix64(disorder_seed, 1).
constexpr std::uint64_t disorder_stream_seed(std::uint64_t disorder_seed)
{
    return splitmix64(disorder_seed, 1);
}

/// Stream seed of the random start vectors: S_v = splitmix64(vector_seed, 2).
constexpr std::uint64_t vector_stream_seed(std::uint64_t vector_seed)
{
    return splitmix64(vector_seed, 2);
}

}  // namespace topokpm
