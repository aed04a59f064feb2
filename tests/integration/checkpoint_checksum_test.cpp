// CRC-64 of checkpoint data (app/checkpoint/checksum.hpp): the standard check value, every
// single-bit flip detected, and the CRC of a whole array put together from pieces in any
// order (what the ranks of an MPI run contribute) equal to the CRC of the whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "app/checkpoint/checksum.hpp"

using topokpm::app::crc64;
using topokpm::app::crc64_combine;
using topokpm::app::crc64_of_pieces;
using topokpm::app::CrcPiece;

namespace {

std::vector<unsigned char> random_bytes(std::size_t n, unsigned seed)
{
    std::mt19937 gen(seed);
    std::vector<unsigned char> v(n);
    for (auto& b : v) b = static_cast<unsigned char>(gen());
    return v;
}

}  // namespace

TEST(CheckpointChecksum, StandardCheckValue)
{
    // CRC-64/XZ of "123456789" (the catalogue's check value), and of nothing.
    EXPECT_EQ(crc64("123456789", 9), 0x995dc9bbdf1939faULL);
    EXPECT_EQ(crc64("", 0), 0u);
}

TEST(CheckpointChecksum, EveryFlippedBitChangesIt)
{
    std::vector<unsigned char> v = random_bytes(203, 1);  // not a multiple of 8: the byte tail too
    const std::uint64_t crc = crc64(v.data(), v.size());
    for (std::size_t bit = 0; bit < 8 * v.size(); ++bit) {
        v[bit / 8] ^= static_cast<unsigned char>(1U << (bit % 8));
        EXPECT_NE(crc64(v.data(), v.size()), crc) << "bit " << bit;
        v[bit / 8] ^= static_cast<unsigned char>(1U << (bit % 8));
    }
}

TEST(CheckpointChecksum, ContinuedAndCombinedEqualTheWhole)
{
    const std::vector<unsigned char> v = random_bytes(100003, 2);
    const std::uint64_t whole = crc64(v.data(), v.size());
    for (std::size_t cut : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(4096), v.size()}) {
        const std::uint64_t a = crc64(v.data(), cut), b = crc64(v.data() + cut, v.size() - cut);
        EXPECT_EQ(crc64(v.data() + cut, v.size() - cut, a), whole) << cut;
        EXPECT_EQ(crc64_combine(a, b, v.size() - cut), whole) << cut;
    }
}

TEST(CheckpointChecksum, ALargeArrayOnTheThreadsGivesTheOneThreadValue)
{
    // 5 MiB + 5 bytes: five 1 MiB pieces on the threads and a tail; against a continued
    // CRC over 0.75 MiB chunks, each of which is taken on one thread.
    const std::vector<unsigned char> v = random_bytes((std::size_t(5) << 20) + 5, 4);
    const std::size_t chunk = std::size_t(3) << 18;
    std::uint64_t chunked = 0;
    for (std::size_t at = 0; at < v.size(); at += chunk) chunked = crc64(v.data() + at, std::min(chunk, v.size() - at), chunked);
    EXPECT_EQ(crc64(v.data(), v.size()), chunked);
    EXPECT_EQ(crc64(v.data() + 3, v.size() - 3, crc64(v.data(), 3)), chunked);
}

TEST(CheckpointChecksum, PiecesInAnyOrderGiveTheWholeAndMustTileIt)
{
    const std::vector<unsigned char> v = random_bytes(5000, 3);
    const std::uint64_t whole = crc64(v.data(), v.size());
    // Rows of three "ranks", interleaved as a 2-D decomposition deals them, listed rank by rank.
    std::vector<CrcPiece> pieces;
    const std::uint64_t row = 40;
    for (int rank = 0; rank < 3; ++rank)
        for (std::uint64_t r = rank; r * row < v.size(); r += 3)
            pieces.push_back({r * row, row, crc64(v.data() + r * row, row)});
    pieces.push_back({17, 0, 0});  // an empty piece (a rank without rows) is ignored
    ASSERT_TRUE(crc64_of_pieces(pieces, v.size()).has_value());
    EXPECT_EQ(*crc64_of_pieces(pieces, v.size()), whole);

    std::vector<CrcPiece> gap(pieces.begin() + 1, pieces.end());
    EXPECT_FALSE(crc64_of_pieces(gap, v.size()).has_value());
    std::vector<CrcPiece> overlap = pieces;
    overlap.push_back(pieces[3]);
    EXPECT_FALSE(crc64_of_pieces(overlap, v.size()).has_value());
    EXPECT_FALSE(crc64_of_pieces(pieces, v.size() + 8).has_value());
}
