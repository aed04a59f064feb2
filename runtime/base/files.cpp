#include "runtime/base/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

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

}  // namespace

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
        if (this_host && !process_alive(pid) && ::unlink(full.c_str()) == 0) out.removed.push_back(full);
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

int publish(const std::string& temp, const std::string& path, const char** step)
{
    int err = 0;
    *step = "syncing the file to disk";
    const int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) err = errno;
    if (fd >= 0) ::close(fd);
    if (err == 0) {
        *step = "renaming the complete temporary file";
        if (std::rename(temp.c_str(), path.c_str()) != 0) err = errno;
    }
    if (err != 0) std::remove(temp.c_str());
    return err;
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

}  // namespace topokpm::files
