#include "app/checkpoint/checksum.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace topokpm::app {
namespace {

constexpr std::uint64_t kPoly = 0xC96C5795D7870F42ULL;  // 0x42F0E1EBA9EA3693 bit-reversed

/// table[k][b]: the CRC register after byte b followed by k zero bytes (slicing by 8).
struct Tables {
    std::array<std::array<std::uint64_t, 256>, 8> t{};
    Tables()
    {
        for (std::uint64_t b = 0; b < 256; ++b) {
            std::uint64_t r = b;
            for (int i = 0; i < 8; ++i) r = (r & 1) ? (r >> 1) ^ kPoly : r >> 1;
            t[0][b] = r;
        }
        for (int k = 1; k < 8; ++k)
            for (int b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
    }
};

const Tables& tables()
{
    static const Tables tables;
    return tables;
}

/// a * b mod P for polynomials in reflected order (bit 63 is x^0).
std::uint64_t multiply(std::uint64_t a, std::uint64_t b)
{
    std::uint64_t product = 0;
    for (std::uint64_t m = std::uint64_t(1) << 63; m != 0 && a != 0; m >>= 1) {
        if (a & m) {
            product ^= b;
            a ^= m;
        }
        b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
    }
    return product;
}

/// x^(8 n) mod P: the factor that moves a CRC register past n zero bytes.
std::uint64_t shift_bytes(std::uint64_t n)
{
    std::uint64_t result = std::uint64_t(1) << 63;  // x^0
    std::uint64_t power = std::uint64_t(1) << 55;   // x^8
    for (; n != 0; n >>= 1) {
        if (n & 1) result = multiply(result, power);
        power = multiply(power, power);
    }
    return result;
}

/// The CRC-64 on one thread (slicing by 8: about 1 GB/s on one core).
std::uint64_t crc64_serial(const void* data, std::size_t bytes, std::uint64_t crc)
{
    const auto& t = tables().t;
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint64_t r = ~crc;
    for (; bytes >= 8; bytes -= 8, p += 8) {
        std::uint64_t word = 0;
        for (int i = 0; i < 8; ++i) word |= std::uint64_t(p[i]) << (8 * i);  // little-endian on any host
        r ^= word;
        r = t[7][r & 0xff] ^ t[6][(r >> 8) & 0xff] ^ t[5][(r >> 16) & 0xff] ^ t[4][(r >> 24) & 0xff] ^
            t[3][(r >> 32) & 0xff] ^ t[2][(r >> 40) & 0xff] ^ t[1][(r >> 48) & 0xff] ^ t[0][r >> 56];
    }
    for (; bytes > 0; --bytes, ++p) r = (r >> 8) ^ t[0][(r ^ *p) & 0xff];
    return ~r;
}

}  // namespace

std::uint64_t crc64(const void* data, std::size_t bytes, std::uint64_t crc)
{
    // Large arrays (checkpoint vectors) in pieces on the OpenMP threads, combined in order:
    // the same value as on one thread, whatever the thread count.
    constexpr std::size_t kPiece = std::size_t(1) << 20;
    const std::size_t pieces = bytes / kPiece;
    if (pieces < 2 || omp_in_parallel() || omp_get_max_threads() < 2) return crc64_serial(data, bytes, crc);
    const auto* p = static_cast<const unsigned char*>(data);
    std::vector<std::uint64_t> crcs(pieces);
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < pieces; ++i) crcs[i] = crc64_serial(p + i * kPiece, kPiece, 0);
    for (const std::uint64_t c : crcs) crc = crc64_combine(crc, c, kPiece);
    return crc64_serial(p + pieces * kPiece, bytes - pieces * kPiece, crc);
}

std::uint64_t crc64_combine(std::uint64_t crc_a, std::uint64_t crc_b, std::uint64_t bytes_b)
{
    // With the initial value equal to the final xor, the CRC of a followed by b is a's CRC
    // moved past |b| zero bytes plus b's CRC (the conditioning terms cancel).
    return multiply(shift_bytes(bytes_b), crc_a) ^ crc_b;
}

std::optional<std::uint64_t> crc64_of_pieces(std::vector<CrcPiece> pieces, std::uint64_t total)
{
    pieces.erase(std::remove_if(pieces.begin(), pieces.end(), [](const CrcPiece& p) { return p.bytes == 0; }),
                 pieces.end());
    std::sort(pieces.begin(), pieces.end(), [](const CrcPiece& a, const CrcPiece& b) { return a.offset < b.offset; });
    std::uint64_t crc = 0, end = 0;
    for (const CrcPiece& p : pieces) {
        if (p.offset != end || p.bytes > total - end) return std::nullopt;
        crc = crc64_combine(crc, p.crc, p.bytes);
        end += p.bytes;
    }
    if (end != total) return std::nullopt;
    return crc;
}

}  // namespace topokpm::app
