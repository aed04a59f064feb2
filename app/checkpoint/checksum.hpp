#pragma once
/// @file checksum.hpp
/// CRC-64/XZ (ECMA-182 polynomial 0x42F0E1EBA9EA3693, reflected, initial value and final
/// xor all ones; "123456789" gives 0x995dc9bbdf1939fa) of the bytes of checkpoint data.
/// A CRC, rather than a cryptographic digest, because the CRC of a whole array can be put
/// together from the CRCs of its pieces (crc64_combine): under mpirun every rank sums up
/// only the rows it writes or reads, and the pieces give the CRC of the whole dataset,
/// the same for any rank count. It detects every error burst of up to 64 bits (so any
/// flipped bit) and misses a random corruption with probability 2^-64; it is no defence
/// against a deliberate forgery (nor is a digest stored in the same file).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace topokpm::app {

/// The CRC-64 of `bytes` bytes at `data` appended to a message whose CRC-64 is `crc`
/// (0 = the empty message): crc64(b, nb, crc64(a, na)) == crc64 of a followed by b.
/// From 2 MiB on, outside a parallel region, the OpenMP threads take 1 MiB pieces each.
std::uint64_t crc64(const void* data, std::size_t bytes, std::uint64_t crc = 0);

/// The CRC-64 of a followed by b, from crc_a = crc64(a), crc_b = crc64(b) and b's length.
std::uint64_t crc64_combine(std::uint64_t crc_a, std::uint64_t crc_b, std::uint64_t bytes_b);

/// The CRC-64 of `bytes` bytes starting at byte `offset` of an array.
struct CrcPiece {
    std::uint64_t offset = 0, bytes = 0, crc = 0;
};

/// The CRC-64 of a whole array of `total` bytes from pieces in any order that tile it
/// exactly (no gap, no overlap; empty pieces are ignored); nullopt when they do not.
std::optional<std::uint64_t> crc64_of_pieces(std::vector<CrcPiece> pieces, std::uint64_t total);

}  // namespace topokpm::app
