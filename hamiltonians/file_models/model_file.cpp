#include "hamiltonians/file_models/model_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "runtime/base/parse.hpp"

namespace topokpm::hamiltonians::file_models {

ModelFileReader::ModelFileReader(std::string path, std::string flag)
    : path_(std::move(path)), flag_(std::move(flag)), file_(nullptr, &std::fclose)
{
    const auto refuse = [&](const std::string& why) { return InputError(detail::concat(flag_, " ", path_, ": ", why)); };
    TOPOKPM_USER_REQUIRE(!path_.empty(), flag_, ": empty file name");
    errno = 0;
    file_.reset(std::fopen(path_.c_str(), "rb"));
    if (!file_) throw refuse(detail::concat("cannot open (", std::strerror(errno ? errno : EIO), ")"));
    struct stat st {};
    if (::fstat(fileno(file_.get()), &st) != 0) throw refuse(detail::concat("cannot stat (", std::strerror(errno), ")"));
    if (S_ISDIR(st.st_mode)) throw refuse("is a directory, not a model file");
    if (!S_ISREG(st.st_mode)) throw refuse("not a regular file (a FIFO, socket or device); give a model file");
    size_ = static_cast<std::uint64_t>(st.st_size);
    buffer_.reserve(kMaxLine);
}

bool ModelFileReader::next_line()
{
    tokens_.clear();
    buffer_.clear();
    overlong_ = false;
    if (at_end_) return false;
    std::FILE* f = file_.get();
    char chunk[256];
    std::size_t used = 0;
    bool any = false;
    for (;;) {
        const int c = getc_unlocked(f);
        if (c == EOF) {
            if (std::ferror(f)) throw file_error(detail::concat("read error after line ", line_, " (", std::strerror(errno), ")"));
            at_end_ = true;
            break;
        }
        any = true;
        chunk[used++] = static_cast<char>(c);
        if (used == sizeof chunk) {
            hash_.update(chunk, used);
            used = 0;
        }
        if (c == '\n') break;
        if (buffer_.size() < kMaxLine) buffer_.push_back(static_cast<char>(c));
        else overlong_ = true;
    }
    hash_.update(chunk, used);
    if (!any) return false;
    ++line_;
    // Fields: runs of anything but the ASCII blanks (a NUL byte stays inside its field,
    // which then is no number).
    const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
    const std::string_view text(buffer_);
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && blank(text[i])) ++i;
        const std::size_t start = i;
        while (i < text.size() && !blank(text[i])) ++i;
        if (i > start) tokens_.push_back(text.substr(start, i - start));
    }
    return true;
}

InputError ModelFileReader::error(const std::string& why) const
{
    return InputError(detail::concat(flag_, " ", path_, " line ", line_, ": ", why));
}

InputError ModelFileReader::file_error(const std::string& why) const
{
    return InputError(detail::concat(flag_, " ", path_, ": ", why));
}

ModelFileInfo ModelFileReader::finish()
{
    TOPOKPM_REQUIRE(at_end_, "finish() before the end of ", path_);
    return {path_, size_, hash_.hex_digest()};
}

bool token_integer(std::string_view token, std::int64_t& out) { return parse::int64(std::string(token), out); }

bool token_real(std::string_view token, double& out) { return parse::real(std::string(token), out); }

}  // namespace topokpm::hamiltonians::file_models
