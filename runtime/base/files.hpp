#pragma once
/// @file files.hpp
/// The file-system facts behind the program's promise never to lose a user's file
/// (docs/reliability.md): which names are the same file, how much room a directory has,
/// and which temporary files of this program a killed run left behind.
///
/// Temporary files are named "<target>.tmp-<pid>-<host>" (results and checkpoints, renamed
/// to <target> on success) or "<target>.probe-<pid>-<n>" (writability probes). A
/// temporary whose process is gone is stale: nothing will ever rename it.

#include <cstdint>
#include <string>
#include <vector>

namespace topokpm::files {

/// Whether `a` and `b` name the same file: the same inode when both exist, otherwise the
/// same absolute path after resolving the directories (symbolic links, "..", "."). Never
/// throws; an unresolvable directory compares by the path text.
bool same_file(const std::string& a, const std::string& b);

/// Bytes a non-root writer can still put in the directory that holds `path` (statvfs
/// f_bavail x f_frsize); -1 when unknown.
std::int64_t free_bytes(const std::string& path);

/// "<path>.tmp-<pid>-<host>": the temporary name of this process for `path`.
std::string temporary_name(const std::string& path);

/// This program's temporary files next to `path` ("<path>.tmp-*", "<path>.probe-*").
struct Temporaries {
    std::vector<std::string> removed;  ///< stale (their process on this host is gone): deleted
    std::vector<std::string> kept;     ///< of a live process, or of another host: left alone
};

/// Finds the temporaries of `path` and deletes the stale ones. Never throws (a temporary
/// that cannot be deleted is reported in `kept`).
Temporaries clean_stale_temporaries(const std::string& path);

/// What is at `path`, for messages and refusals.
enum class Kind { missing, regular, directory, other };
Kind kind_of(const std::string& path);

/// Whether the existing regular file at `path` has no write permission bit for anyone
/// (root ignores permissions, so access(2) cannot tell; a write-protected result is one the
/// user protected on purpose).
bool write_protected(const std::string& path);

/// Makes the complete temporary file `temp` the file `path`: synced to disk first (a file
/// system may report a full disk or an I/O error only then), then renamed (atomic within
/// one directory: readers see the old file or the complete new one). Returns 0, or the
/// errno with `temp` removed and `path` left as it was; `*step` names the failed step
/// ("syncing the file to disk" or "renaming the complete temporary file").
int publish(const std::string& temp, const std::string& path, const char** step);

/// The identity of an existing file (device, inode): a file this run wrote keeps it until
/// somebody replaces the file, so "remove what I wrote" never removes someone else's file.
struct FileId {
    std::uint64_t device = 0, inode = 0;
    bool operator==(const FileId& o) const { return device == o.device && inode == o.inode; }
};

/// The identity of the regular file at `path`; false (and `id` untouched) when there is none.
bool identify(const std::string& path, FileId& id);

/// Removes the regular file that `path` names -- through symbolic links the file they point
/// to, the links stay -- only while it still is the file `id`; true when removed. No gap
/// between the check and the removal: the file is first renamed aside within its directory
/// ("<name>.removing-<pid>-<host>", atomic), and what was renamed is checked and removed;
/// anything else is renamed back (without replacing a file that took the name meanwhile:
/// then it stays under the aside name and false is returned). What remains: a file that
/// replaced ours after a first identity check is out of its place for that moment.
bool remove_if_same(const std::string& path, const FileId& id);

}  // namespace topokpm::files
