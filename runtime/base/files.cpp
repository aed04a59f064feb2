#include "runtime/base/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace topokpm::files {
namespace {

std::string host_name()
{
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
    return buf;
}

/// ("dir", "base") of a path; "." for a bare name.
std::pair<std::string, std::string> split_dir(const std::string& path)
{
    const auto slash = path.find_last_of('/');
    if (slash == std::string::npos) return {".", path};
    return {slash == 0 ? std::string("/") : path.substr(0, slash), path.substr(slash + 1)};
}

/// The directory resolved (realpath) joined with the base name.
std::string absolute(const std::string& path)
{
    const auto [dir, base] = split_dir(path);
    char resolved[PATH_MAX];
    if (::realpath(dir.c_str(), resolved) == nullptr) return path;
    std::string out = resolved;
    if (out.empty() || out.back() != '/') out += '/';
    return out + base;
}

bool process_alive(long pid)
{
    if (pid <= 0) return false;
    return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

/// The offset of kTemporaryMarker in `head` (the first bytes of a file) at `at`: 0, or just
/// after the '%' that starts the second line; -1 when there is no such place.
long marker_offset(const char* head, std::size_t size, MarkerAt at)
{
    if (at == MarkerAt::start) return 0;
    const void* newline = std::memchr(head, '\n', std::min(size, kTemporaryMarkerBlock));
    if (newline == nullptr) return -1;
    const std::size_t comment = static_cast<std::size_t>(static_cast<const char*>(newline) - head) + 1;
    return comment < size && head[comment] == '%' ? static_cast<long>(comment + 1) : -1;
}

/// Whether the regular file at `path` carries kTemporaryMarker (either MarkerAt) and `path`
/// still names the very file read (no swap between the read and the caller's unlink but
/// that call).
bool starts_with_marker(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    constexpr std::size_t n = sizeof kTemporaryMarker - 1;
    char head[kTemporaryMarkerBlock + 1 + n] = {};
    struct stat opened {}, named {};
    bool marked = false;
    if (::fstat(fd, &opened) == 0 && S_ISREG(opened.st_mode)) {
        const ssize_t got = ::pread(fd, head, sizeof head, 0);
        for (const MarkerAt at : {MarkerAt::start, MarkerAt::comment_line}) {
            const long off = got > 0 ? marker_offset(head, static_cast<std::size_t>(got), at) : -1;
            marked = marked || (off >= 0 && static_cast<std::size_t>(off) + n <= static_cast<std::size_t>(got) &&
                                std::memcmp(head + off, kTemporaryMarker, n) == 0);
        }
    }
    ::close(fd);
    return marked && ::lstat(path.c_str(), &named) == 0 && named.st_dev == opened.st_dev &&
           named.st_ino == opened.st_ino;
}

}  // namespace

int mark_temporary(const std::string& path, bool on, MarkerAt at)
{
    const int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno;
    constexpr std::size_t n = sizeof kTemporaryMarker - 1;
    long offset = 0;
    if (at == MarkerAt::comment_line) {
        char head[kTemporaryMarkerBlock + 1] = {};
        const ssize_t got = ::pread(fd, head, sizeof head, 0);
        offset = got > 0 ? marker_offset(head, static_cast<std::size_t>(got), at) : -1;
        if (offset < 0) {
            ::close(fd);
            return EINVAL;
        }
    }
    char block[n] = {};
    if (on) std::memcpy(block, kTemporaryMarker, n);
    else if (at == MarkerAt::comment_line) {
        std::memset(block, ' ', n - 1);
        block[n - 1] = '\n';
    }
    errno = 0;
    const int err = ::pwrite(fd, block, n, offset) == ssize_t(n) ? 0 : (errno ? errno : EIO);
    ::close(fd);
    return err;
}

bool same_file(const std::string& a, const std::string& b)
{
    struct stat sa {}, sb {};
    if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return absolute(a) == absolute(b);
}

std::int64_t free_bytes(const std::string& path)
{
    struct statvfs vs {};
    if (::statvfs(split_dir(path).first.c_str(), &vs) != 0) return -1;
    return static_cast<std::int64_t>(vs.f_bavail) * static_cast<std::int64_t>(vs.f_frsize);
}

std::string shell_word(const std::string& text)
{
    const auto plain = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c != '\0' && std::strchr("%+,-./:=@_", c) != nullptr);
    };
    if (!text.empty() && std::all_of(text.begin(), text.end(), plain)) return text;
    std::string out = "'";
    for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string temporary_name(const std::string& path)
{
    return path + ".tmp-" + std::to_string(static_cast<long>(::getpid())) + "-" + host_name();
}

Temporaries clean_stale_temporaries(const std::string& path)
{
    Temporaries out;
    const auto [dir, base] = split_dir(path);
    if (base.empty()) return out;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return out;
    const std::string me = host_name();
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        std::string rest;
        for (const char* tag : {".tmp-", ".probe-"}) {
            const std::string prefix = base + tag;
            if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0)
                rest = name.substr(prefix.size());
        }
        if (rest.empty()) continue;
        // "<pid>" (older versions), "<pid>-<host>" (.tmp-) or "<pid>-<n>" (.probe-).
        std::size_t digits = 0;
        while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
        if (digits == 0 || digits > 9) continue;  // not a name this program makes
        const long pid = std::strtol(rest.substr(0, digits).c_str(), nullptr, 10);
        const std::string tail = digits < rest.size() && rest[digits] == '-' ? rest.substr(digits + 1) : "";
        const bool this_host = tail.empty() || tail == me || name.find(".probe-") != std::string::npos;
        const std::string full = dir == "." && path.find('/') == std::string::npos ? name : dir + "/" + name;
        struct stat st {};
        if (::lstat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (!this_host || process_alive(pid)) out.kept.push_back(full);
        else if (!starts_with_marker(full)) out.unmarked.push_back(full);
        else if (::unlink(full.c_str()) == 0) out.removed.push_back(full);
        else out.kept.push_back(full);
    }
    ::closedir(d);
    return out;
}

Kind kind_of(const std::string& path)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return Kind::missing;
    if (S_ISREG(st.st_mode)) return Kind::regular;
    if (S_ISDIR(st.st_mode)) return Kind::directory;
    return Kind::other;
}

bool write_protected(const std::string& path)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    return (st.st_mode & 0222) == 0 || ::access(path.c_str(), W_OK) != 0;
}

bool identify(const std::string& path, FileId& id)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    id = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
    return true;
}

bool remove_if_same(const std::string& path, const FileId& id)
{
    FileId now;
    char real[PATH_MAX];
    if (!identify(path, now) || !(now == id) || ::realpath(path.c_str(), real) == nullptr) return false;
    const auto [dir, base] = split_dir(real);
    const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) return false;
    const std::string aside = base + ".removing-" + std::to_string(static_cast<long>(::getpid())) + "-" + host_name();
    bool removed = false;
    if (::renameat(d, base.c_str(), d, aside.c_str()) == 0) {
        struct stat st {};
        if (::fstatat(d, aside.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            FileId{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)} == id)
            removed = ::unlinkat(d, aside.c_str(), 0) == 0;
        else if (::renameat2(d, aside.c_str(), d, base.c_str(), RENAME_NOREPLACE) != 0 && errno != EEXIST &&
                 ::linkat(d, aside.c_str(), d, base.c_str(), 0) == 0)  // back, never over a newcomer
            ::unlinkat(d, aside.c_str(), 0);
    }
    ::close(d);
    return removed;
}

namespace {

/// The name a complete file is kept under when its target changed during the run.
std::string kept_name(const std::string& path)
{
    return path + ".new-" + std::to_string(static_cast<long>(::getpid()));
}

/// rename(2) that never replaces: RENAME_NOREPLACE, or link + unlink where the file system
/// lacks it (EINVAL). 0 or the errno (EEXIST: the target exists).
int rename_noreplace(const std::string& from, const std::string& to)
{
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return errno;
    if (::link(from.c_str(), to.c_str()) != 0) return errno;
    ::unlink(from.c_str());
    return 0;
}

/// Whether the file at `path` is still the one the guard checked at the start.
bool still_expected(const std::string& path, const Guard& guard)
{
    FileId now;
    return guard.existing && identify(path, now) && now == *guard.existing &&
           (!guard.still_replaceable || guard.still_replaceable(path));
}

/// The guarded rename of `temp` (complete, synced) to `path`: 0, EEXIST (the target is not
/// what the guard allows; `temp` untouched) or another errno.
int guarded_rename(const std::string& temp, const std::string& path, const Guard& guard)
{
    if (!guard.existing) return rename_noreplace(temp, path);
    if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0) {
        if (errno == ENOENT) return rename_noreplace(temp, path);  // the old result was removed
        if (errno != EINVAL && errno != ENOSYS) return errno;
        // No atomic exchange here: check, then rename (the documented window).
        if (kind_of(path) == Kind::missing) return rename_noreplace(temp, path);
        if (!still_expected(path, guard)) return EEXIST;
        return std::rename(temp.c_str(), path.c_str()) == 0 ? 0 : errno;
    }
    // `path` is our result now; `temp` holds what was at `path`.
    if (still_expected(temp, guard)) {
        ::unlink(temp.c_str());
        return 0;
    }
    // Swapped back: the other file at `path` again, ours under `temp` (should the swap back
    // fail, EEXIST still keeps both files: nothing is removed).
    ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE);
    return EEXIST;
}

}  // namespace

Published publish(const std::string& temp, const std::string& path, const Guard* guard)
{
    Published out;
    out.step = "syncing the file to disk";
    const int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) out.error = errno;
    if (fd >= 0) ::close(fd);
    if (out.error == 0) {
        out.step = "renaming the complete temporary file";
        if (guard == nullptr) {
            if (std::rename(temp.c_str(), path.c_str()) != 0) out.error = errno;
        } else {
            out.error = guarded_rename(temp, path, *guard);
        }
    }
    if (out.error == EEXIST && guard != nullptr) {
        out.step = "a file appeared at the path during the run";
        const std::string kept = kept_name(path);
        out.kept = rename_noreplace(temp, kept) == 0 ? kept : "";
        return out;
    }
    if (out.error != 0) std::remove(temp.c_str());
    return out;
}

}  // namespace topokpm::files
