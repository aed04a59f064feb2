#include "app/run/run_files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <utility>

#include "analysis/result_file.hpp"
#include "runtime/base/error.hpp"
#include "runtime/base/log.hpp"

namespace topokpm::app {
namespace {

/// What an existing HDF5 file of ours is: "result", "checkpoint" or "" (anything else).
std::string topokpm_file_kind(const std::string& path)
{
    if (files::kind_of(path) != files::Kind::regular) return "";
    try {
        const analysis::ResultReader in(path);
        if (in.exists("/checkpoint") && in.read_string_attribute("/checkpoint", "format") == "topokpm-checkpoint")
            return "checkpoint";
        if (in.exists("/provenance") && in.read_string_attribute("/provenance", "program").rfind("topokpm", 0) == 0)
            return "result";
    } catch (const Error&) {
    }
    return "";
}

bool is_matrix_market(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    char head[14] = {};
    in.read(head, sizeof head);
    return in.gcount() == sizeof head && std::string(head, sizeof head) == "%%MatrixMarket";
}

void require_distinct(const std::string& option_a, const std::string& a, const std::string& option_b,
                      const std::string& b)
{
    if (a.empty() || b.empty() || !files::same_file(a, b)) return;
    throw InputError(detail::concat(option_a, " '", a, "' and ", option_b, " '", b,
                                    "' name the same file; one would destroy the other: give them different paths"));
}

/// A path the run writes must be free or a regular file: a directory, a device (/dev/null,
/// /dev/full), a FIFO or a socket is refused, since the file is written under a temporary
/// name and renamed over the path, which would replace the device node or FIFO itself.
void require_file_path(const std::string& option, const std::string& path)
{
    if (path.empty()) return;
    switch (files::kind_of(path)) {
    case files::Kind::missing:
    case files::Kind::regular: return;
    case files::Kind::directory:
        throw InputError(detail::concat(option, " '", path, "': is a directory; give the path of a file"));
    case files::Kind::other:
        throw InputError(detail::concat(option, " '", path, "': is not a regular file (a device such as /dev/null, ",
                                        "a FIFO or a socket); results are written as files: give the path of a file"));
    }
}

void clean_temporaries(const std::string& path)
{
    const files::Temporaries t = files::clean_stale_temporaries(path);
    for (const std::string& name : t.removed) log::info("files       : removed ", name, " (temporary file of a killed run)");
    for (const std::string& name : t.kept)
        log::warning(name, ": a temporary file of another topokpm process (running, or on another host); left alone");
    for (const std::string& name : t.unmarked)
        log::warning(name, ": named like a stale temporary, but its content is not marked as this program's; "
                     "left alone (remove it yourself if it is not needed)");
}

/// A result at `path` that the run may replace: a writable topokpm result.
bool replaceable_result(const std::string& path)
{
    return !files::write_protected(path) && topokpm_file_kind(path) == "result";
}

/// A Matrix Market file at `path` that --export-matrix may replace: writable.
bool replaceable_matrix(const std::string& path)
{
    return !files::write_protected(path) && is_matrix_market(path);
}

/// The guard of `path` (checked again at the rename, files::publish): the file there now,
/// which must then still be replaceable, or none (the path must then still be free).
files::Guard guard_of(const std::string& path, std::function<bool(const std::string&)> replaceable)
{
    files::Guard guard{std::nullopt, std::move(replaceable)};
    if (files::FileId id; files::identify(path, id)) guard.existing = id;
    return guard;
}

/// "<real path>.lock": the directories and, when `path` exists, the path itself resolved
/// (symbolic links, "..", "."), so that every name of one checkpoint shares one lock.
std::string lock_file_of(const std::string& path)
{
    char real[PATH_MAX];
    if (::realpath(path.c_str(), real) != nullptr) return std::string(real) + ".lock";
    const auto slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (::realpath(dir.c_str(), real) == nullptr) return path + ".lock";
    return (std::string(real) == "/" ? std::string() : std::string(real)) + "/" + base + ".lock";
}

}  // namespace

std::string checkpoint_target(const std::string& path)
{
    std::string at = path;
    for (int hop = 0; hop < 40; ++hop) {
        struct stat st {};
        if (::lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return at;
        std::string target(PATH_MAX, '\0');
        const ssize_t len = ::readlink(at.c_str(), &target[0], target.size());
        if (len <= 0 || static_cast<std::size_t>(len) >= target.size()) return path;
        target.resize(static_cast<std::size_t>(len));
        const auto slash = at.find_last_of('/');
        at = target[0] == '/' || slash == std::string::npos ? target : at.substr(0, slash + 1) + target;
    }
    return path;
}

namespace {

/// "kpm-dos pid <pid> host <host>" of this process.
std::string lock_text()
{
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "localhost");
    return detail::concat("kpm-dos pid ", static_cast<long>(::getpid()), " host ", host, "\n");
}

/// Whether `text` is what lock_text() writes (digits, then a host name of [A-Za-z0-9._-]):
/// only such text is quoted in a message.
bool is_lock_text(const std::string& text, std::string* who)
{
    const std::string pid_tag = "kpm-dos pid ", host_tag = " host ";
    if (text.compare(0, pid_tag.size(), pid_tag) != 0 || text.size() > 300 || text.back() != '\n') return false;
    std::size_t i = pid_tag.size(), digits = 0;
    while (i + digits < text.size() && text[i + digits] >= '0' && text[i + digits] <= '9') ++digits;
    if (digits == 0 || digits > 9 || text.compare(i + digits, host_tag.size(), host_tag) != 0) return false;
    const std::string pid = text.substr(i, digits), host = text.substr(i + digits + host_tag.size());
    if (host.size() < 2) return false;
    for (std::size_t k = 0; k + 1 < host.size(); ++k) {
        const char c = host[k];
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) return false;
    }
    if (who) *who = "pid " + pid + " on host " + host.substr(0, host.size() - 1);
    return true;
}

std::string read_small(int fd)
{
    char buf[301];
    const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

CheckpointLocks::CheckpointLocks(CheckpointLocks&& other) noexcept : held_(std::move(other.held_))
{
    other.held_.clear();
}

CheckpointLocks& CheckpointLocks::operator=(CheckpointLocks&& other) noexcept
{
    if (this != &other) {
        release();
        held_ = std::move(other.held_);
        other.held_.clear();
    }
    return *this;
}

CheckpointLocks::~CheckpointLocks() { release(); }

void CheckpointLocks::release() noexcept
{
    for (const Held& h : held_) {
        // Removed while still locked and still ours; a run that opened it meanwhile sees it
        // unlinked after its flock and retries on a fresh file (lock()).
        struct stat mine {}, there {};
        if (::fstat(h.fd, &mine) == 0 && ::lstat(h.lock_file.c_str(), &there) == 0 && mine.st_dev == there.st_dev &&
            mine.st_ino == there.st_ino)
            ::unlink(h.lock_file.c_str());
        ::close(h.fd);
    }
    held_.clear();
}

void CheckpointLocks::lock(const std::string& option, const std::string& path)
{
    const std::string name = lock_file_of(path);
    for (const Held& h : held_)
        if (h.lock_file == name) return;
    for (int attempt = 0; attempt < 100; ++attempt) {
        const int fd = ::open(name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
        if (fd < 0) {
            if (errno == ELOOP)
                throw InputError(detail::concat(option, " '", path, "': its lock file '", name,
                                                "' is a symbolic link; remove it"));
            return;  // no lock file here (read-only directory, ...): the checks that follow say what is wrong
        }
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd);
            throw InputError(detail::concat(option, " '", path, "': its lock file '", name,
                                            "' is not a regular file; remove it"));
        }
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            std::string who;
            const bool known = is_lock_text(read_small(fd), &who);
            ::close(fd);
            if (err == EWOULDBLOCK)
                throw InputError(detail::concat(
                    option, " '", path, "': in use by another kpm-dos run (",
                    known ? who : std::string("its pid and host not written yet"), ") that writes or resumes this "
                    "checkpoint; one run per checkpoint: wait for it to end, or ",
                    option == "--checkpoint" ? "give another --checkpoint" : "resume another checkpoint"));
            log::warning(option, " '", path, "': cannot lock '", name, "' (", std::strerror(err),
                         "); this run goes on, but a second run on this checkpoint would not be refused");
            return;
        }
        // The previous holder may have removed the file between our open and flock: then
        // the lock is on a name-less file; take a fresh one.
        struct stat there {};
        if (::fstat(fd, &st) != 0 || ::lstat(name.c_str(), &there) != 0 || st.st_dev != there.st_dev ||
            st.st_ino != there.st_ino) {
            ::close(fd);
            continue;
        }
        // A lock file of a run that is gone (its lock died with it), or a new one; a file of
        // that name with other contents is the user's.
        const std::string old = read_small(fd);
        if (!old.empty() && !is_lock_text(old, nullptr)) {
            ::close(fd);
            throw InputError(detail::concat(option, " '", path, "': '", name,
                                            "' exists and is not a kpm-dos lock file; remove it or choose another path"));
        }
        const std::string text = lock_text();
        // The lock holds without its text; a text that cannot be written (a full disk: then the
        // run's own writes fail with the one message that matters) only leaves a second run's
        // refusal without this run's pid ("not written yet").
        if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, text.data(), text.size(), 0);
        held_.push_back({name, fd});
        return;
    }
    throw InputError(detail::concat(option, " '", path, "': its lock file '", name,
                                    "' keeps being replaced by other runs; try again"));
}

CheckedRunFiles check_run_files(const RunFiles& f)
{
    // First the locks: the checks below then see no other run's files change under them.
    CheckpointLocks locks;
    if (!f.checkpoint.empty()) locks.lock("--checkpoint", f.checkpoint);
    if (!f.restart.empty()) locks.lock("--restart", f.restart);

    require_distinct("--output", f.output, "--checkpoint", f.checkpoint);
    require_distinct("--output", f.output, "--restart", f.restart);
    require_distinct("--output", f.output, "--export-matrix", f.export_matrix);
    require_distinct("--checkpoint", f.checkpoint, "--export-matrix", f.export_matrix);
    require_distinct("--restart", f.restart, "--export-matrix", f.export_matrix);

    require_file_path("--output", f.output);
    require_file_path("--checkpoint", f.checkpoint);
    require_file_path("--export-matrix", f.export_matrix);

    // The output: a topokpm result is replaced (a rerun); anything else is the user's.
    if (files::kind_of(f.output) == files::Kind::regular) {
        if (files::write_protected(f.output))
            throw InputError(detail::concat("--output '", f.output, "': an existing file without write permission "
                                            "(protected result?); make it writable, remove it, or choose another path"));
        if (topokpm_file_kind(f.output) != "result")
            throw InputError(detail::concat("--output '", f.output, "': exists and is not a topokpm result file; "
                                            "kpm-dos and kpm-eigs replace only their own results: remove it or choose another path"));
    }
    if (!f.export_matrix.empty() && files::kind_of(f.export_matrix) == files::Kind::regular &&
        !replaceable_matrix(f.export_matrix))
        throw InputError(detail::concat("--export-matrix '", f.export_matrix, "': exists and is not a writable Matrix "
                                        "Market file; remove it or choose another path"));

    // The checkpoint path (kpm-eigs has none) holds nothing, or the checkpoint this run resumes.
    if (!f.checkpoint.empty() && files::kind_of(f.checkpoint) != files::Kind::missing &&
        (f.restart.empty() || !files::same_file(f.checkpoint, f.restart))) {
        const std::string kind = topokpm_file_kind(f.checkpoint);
        throw InputError(detail::concat(
            "--checkpoint '", f.checkpoint, "': a file is already there ",
            kind == "checkpoint"
                ? detail::concat("(the checkpoint of an interrupted run): resume it with --restart ", files::shell_word(f.checkpoint),
                                 ", or remove it to start afresh, or give another --checkpoint")
                : std::string("and kpm-dos writes its checkpoint only to a free path: remove it or give another "
                              "--checkpoint (default: <output>.checkpoint.h5)")));
    }

    analysis::check_output_writable(f.output);
    if (!f.export_matrix.empty()) analysis::check_output_writable(f.export_matrix, "--export-matrix");
    if (!f.checkpoint.empty()) analysis::check_output_writable(f.checkpoint, "--checkpoint");
    clean_temporaries(f.output);
    if (!f.checkpoint.empty()) clean_temporaries(f.checkpoint);
    if (!f.export_matrix.empty()) clean_temporaries(f.export_matrix);

    return {std::move(locks), guard_of(f.output, replaceable_result), guard_of(f.export_matrix, replaceable_matrix)};
}

std::optional<ResumedCheckpoint> resumed_checkpoint(const RunFiles& f)
{
    ResumedCheckpoint r;
    char real[PATH_MAX];
    if (f.restart.empty() || !files::identify(f.restart, r.id) || ::realpath(f.restart.c_str(), real) == nullptr)
        return std::nullopt;
    r.path = real;
    return r;
}

std::vector<std::string> remove_spent_checkpoints(const RunFiles& f, const std::optional<files::FileId>& written,
                                                  const std::optional<ResumedCheckpoint>& resumed)
{
    std::vector<std::string> removed;
    if (written && files::remove_if_same(f.checkpoint, *written)) removed.push_back(f.checkpoint);
    if (resumed && files::remove_if_same(resumed->path, resumed->id)) removed.push_back(resumed->path);
    return removed;
}

}  // namespace topokpm::app
