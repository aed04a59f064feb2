#pragma once
/// @file sha256.hpp
/// SHA-256 (FIPS 180-4) of a byte stream, fed in pieces, for the /model record of a model
/// read from a file (models.md §8: the file's SHA-256). The tree has no crypto library;
/// this one is checked against the FIPS 180-4 / NIST example vectors (sha256_test.cpp).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace topokpm::hamiltonians::file_models {

class Sha256 {
public:
    Sha256();
    /// Appends `size` bytes to the message.
    void update(const void* data, std::size_t size);
    /// The digest of everything appended, as 64 lower-case hex digits. Call once.
    std::string hex_digest();

private:
    void compress(const std::uint8_t* block);
    std::array<std::uint32_t, 8> h_{};
    std::array<std::uint8_t, 64> buffer_{};
    std::size_t buffered_ = 0;
    std::uint64_t length_ = 0;  // bytes appended
};

}  // namespace topokpm::hamiltonians::file_models
