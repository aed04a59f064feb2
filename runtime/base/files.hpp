#pragma once
/// @file files.hpp
/// The file-system facts behind the program's promise never to lose a user's file
/// (docs/reliability.md): which names are the same file, how much room a directory has,
/// and which temporary files of this program a killed run left behind.
///
/// Temporary files are named "<target>.tmp-<pid>-<host>" (results and checkpoints, renamed
/// to <target> on success) or "<target>.probe-<pid>-<n>" (writability probes). A
/// temporary whose process is gone is stale: nothing will ever rename it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
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

/// `text` as one word of a POSIX shell command: unchanged when it holds only characters no
/// shell treats specially (letters, digits, "%+,-./:=@_"), otherwise in single quotes
/// ("'" written as '\''). Every command the program prints for pasting (the resume
/// command, the recorded command line) quotes its words so.
std::string shell_word(const std::string& text);

/// "<path>.tmp-<pid>-<host>": the temporary name of this process for `path`.
std::string temporary_name(const std::string& path);

/// The bytes every temporary file of this program carries while it is one: at its start in
/// the user block of an HDF5 temporary (analysis::ResultWriter) and in a writability probe;
/// as the second line, a comment "%<marker>", in a text file whose format fixes the first
/// line (the Matrix Market banner of --export-matrix). A name alone proves nothing (anyone
/// can name a file "x.h5.tmp-123-host"): only a file marked so is deleted as a stale temporary.
inline constexpr char kTemporaryMarker[] =
    "topokpm temporary file: renamed into place when complete; removed by the next run when its process is gone\n";
inline constexpr std::size_t kTemporaryMarkerBlock = 512;  ///< the HDF5 user block that holds it

/// Where a file carries kTemporaryMarker: at its `start`, or in its `comment_line`, the second
/// line, which starts with '%' (the first line, up to kTemporaryMarkerBlock bytes, stays).
enum class MarkerAt { start, comment_line };

/// Writes kTemporaryMarker at `at` in the file `path` (`on`), or clears it (the complete file
/// is about to become a result): zeros at the start, spaces in the comment line (which stays
/// a comment line, "%" and blanks); 0 or the errno (EINVAL: no such comment line).
int mark_temporary(const std::string& path, bool on, MarkerAt at = MarkerAt::start);

/// Files named like this program's temporaries next to `path` ("<path>.tmp-<pid>[-<host>]",
/// "<path>.probe-<pid>-<n>").
struct Temporaries {
    std::vector<std::string> removed;  ///< stale (process gone on this host) and marked: deleted
    std::vector<std::string> kept;     ///< of a live process, or of another host: left alone
    std::vector<std::string> unmarked; ///< stale by name but not marked as ours: left alone
};

/// Finds the temporaries of `path` and deletes the stale ones that are verifiably this
/// program's: the file carries kTemporaryMarker (either MarkerAt), and the name still holds the very file
/// read (device, inode) just before the unlink (a file swapped in within that one system
/// call would be deleted). Never throws (a temporary that cannot be deleted is in `kept`).
Temporaries clean_stale_temporaries(const std::string& path);

/// What is at `path`, for messages and refusals.
enum class Kind { missing, regular, directory, other };
Kind kind_of(const std::string& path);

/// Whether the existing regular file at `path` has no write permission bit for anyone
/// (root ignores permissions, so access(2) cannot tell; a write-protected result is one the
/// user protected on purpose).
bool write_protected(const std::string& path);

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

/// What publish() may do to a file at the target. Without a guard it replaces whatever is
/// there (a path only this run writes, e.g. its own checkpoint). With one, the target must
/// still be what the run checked at its start, at the moment of the rename:
/// - `existing` empty (the path was free): the target must still be free; the rename
///   cannot replace anything (renameat2 RENAME_NOREPLACE, or link(2) + unlink where the
///   file system lacks it);
/// - `existing` set: the target must be that very file (device, inode) and
///   `still_replaceable` must hold for it. The files are swapped atomically
///   (RENAME_EXCHANGE) and the file swapped out is checked under the temporary name;
///   anything else is swapped back. A user's file is never removed; for the microseconds
///   between the two swaps it lies under the temporary name. On a file system without
///   RENAME_EXCHANGE (NFS) the check is made just before a plain rename: a file put at the
///   target in between (a window of one system call) would be replaced.
struct Guard {
    std::optional<FileId> existing;
    std::function<bool(const std::string&)> still_replaceable;
};

/// publish()'s outcome: `error` 0, or the errno of the failed `step`; EEXIST when a guarded
/// target changed during the run, the complete file then kept as `kept` (never a
/// temporary name, so no clean-up removes it; "" if even that failed: then it stays as
/// `temp`).
struct Published {
    int error = 0;
    const char* step = "";
    std::string kept;
};

/// Makes the complete temporary file `temp` the file `path`: synced to disk first (a file
/// system may report a full disk or an I/O error only then), then renamed (atomic within
/// one directory: readers see the old file or the complete new one), as `guard` allows.
/// On any other failure `temp` is removed and `path` left as it was.
Published publish(const std::string& temp, const std::string& path, const Guard* guard = nullptr);

}  // namespace topokpm::files
