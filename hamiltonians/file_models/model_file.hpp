#pragma once
/// @file model_file.hpp
/// One streaming pass over a model file (models.md §8: `--model-file`): the file must be a
/// regular, readable file; its lines come one at a time, split into whitespace-separated
/// tokens, with their 1-based numbers; every byte read also goes into the file's SHA-256,
/// so size and digest for /model cost no second read. Nothing is buffered beyond one line.
///
/// Errors are InputError "FLAG PATH line N: WHY", FLAG "{model_file}" unless another option
/// names the file (the flag name filled in by the application): the path and the line
/// number, never the line's text, which may be anything.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hamiltonians/file_models/sha256.hpp"
#include "runtime/base/error.hpp"

namespace topokpm::hamiltonians::file_models {

/// What /model records about the file (models.md §8): path as given, size, SHA-256.
struct ModelFileInfo {
    std::string path;
    std::uint64_t size = 0;
    std::string sha256;  ///< 64 lower-case hex digits
};

class ModelFileReader {
public:
    /// Longest line kept (bytes); a longer line is flagged by overlong() and its tokens cut.
    static constexpr std::size_t kMaxLine = 4096;

    /// Opens `path`; InputError when it is missing, unreadable, a directory, a FIFO or a device.
    /// `flag`: the option that names the file in every message.
    explicit ModelFileReader(std::string path, std::string flag = "{model_file}");

    const std::string& path() const { return path_; }
    /// Size in bytes from fstat() before reading (what the header's counts are checked against).
    std::uint64_t size() const { return size_; }

    /// Reads the next line; false at the end of the file. tokens() then holds its fields.
    bool next_line();
    /// 1-based number of the line last read (0 before the first).
    std::int64_t line_number() const { return line_; }
    /// The whitespace-separated fields of the line last read (views into an internal buffer,
    /// valid until the next call).
    const std::vector<std::string_view>& tokens() const { return tokens_; }
    /// The line last read was longer than kMaxLine bytes (its tokens are incomplete).
    bool overlong() const { return overlong_; }

    /// "FLAG PATH line N: why" for the line last read.
    InputError error(const std::string& why) const;
    /// "FLAG PATH: why" (for what belongs to no single line).
    InputError file_error(const std::string& why) const;

    /// At the end of the file: path, size and SHA-256 of every byte read.
    ModelFileInfo finish();

private:
    std::string path_;
    std::string flag_;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
    std::uint64_t size_ = 0;
    std::int64_t line_ = 0;
    bool overlong_ = false;
    bool at_end_ = false;
    std::string buffer_;
    std::vector<std::string_view> tokens_;
    Sha256 hash_;
};

/// Whole-token decimal integer (runtime/base/parse.hpp rules); false if it is none.
bool token_integer(std::string_view token, std::int64_t& out);
/// Whole-token finite decimal number; false if it is none (nan, inf, hex, overflow).
bool token_real(std::string_view token, double& out);

}  // namespace topokpm::hamiltonians::file_models
