#pragma once
/// @file run_files.hpp
/// The files a kpm-dos run reads, writes and removes, and the rules that keep a user's
/// files safe (docs/reliability.md, "Files"):
///
/// - --output, --checkpoint, --restart and --export-matrix are different files, except that
///   a run may keep checkpointing into the checkpoint it resumes (--restart C --checkpoint C);
/// - an existing --output is replaced only when it is a topokpm result file and not
///   write-protected, and only while it is still that very file when the result is
///   renamed into place (a file put there during the run is left alone); an existing
///   --export-matrix likewise only when it is a writable Matrix Market file, and only
///   while it still is that file (or the path still free) when the matrix is renamed there;
/// - an existing file at the checkpoint path is never replaced, unless it is the checkpoint
///   this run resumes: an interrupted run's checkpoint is removed only by the run that
///   completes it;
/// - one run per checkpoint: a run locks its --checkpoint and --restart paths for its whole
///   life (CheckpointLocks); a second run that would write or resume one of them meanwhile
///   is refused, with the first run's pid and host;
/// - when the result is written, the run removes the checkpoint it wrote itself and the one
///   it resumed (each only while it is still the very file written or verified; through a
///   symbolic link the file it points to, not the link);
/// - stale temporaries of this program next to the output and the checkpoint (a killed
///   run's "<file>.tmp-<pid>-<host>"; also next to --export-matrix) are removed and reported, when their content marks
///   them as ours (files::kTemporaryMarker); a file only named so is left, with a warning;
/// - a path the run writes is free or a regular file: a directory, device (/dev/null,
///   /dev/full), FIFO or socket is refused.

#include <optional>
#include <string>
#include <vector>

#include "runtime/base/files.hpp"

namespace topokpm::app {

struct RunFiles {
    std::string output;         ///< --output
    std::string checkpoint;     ///< --checkpoint (or the default <output>.checkpoint.h5)
    std::string restart;        ///< --restart ("" = none)
    std::string export_matrix;  ///< --export-matrix ("" = none)
};

/// The path a checkpoint written to `path` goes to: the file a symbolic link there points
/// to (a chain of links followed to its end, relative targets taken from the link's
/// directory; the target need not exist yet), so that the writer's temporary and rename
/// replace that file and the user's link stays a link; `path` itself when it is no link (or
/// a chain longer than 40 links: the writer's open then reports it). Resolved once, before
/// the run's files are checked and locked.
std::string checkpoint_target(const std::string& path);

/// The locks of a run's checkpoint paths: an advisory lock (flock(2)) on "<real path>.lock"
/// (symbolic links resolved, so a link and its target share one lock) that dies with the
/// process: a lock file left by a killed run does not block. The lock file holds
/// "kpm-dos pid <pid> host <host>" for the refusal of the next run. Released when
/// destroyed: the lock file is removed (while it is still ours) and closed. Where the file
/// system has no locks (flock fails with ENOLCK, EOPNOTSUPP, ...) the run goes on unlocked
/// with a warning; where the lock file cannot be created (a read-only directory) it goes on
/// unlocked silently (the checks that follow report an unwritable --checkpoint directory).
class CheckpointLocks {
public:
    CheckpointLocks() = default;
    CheckpointLocks(CheckpointLocks&& other) noexcept;
    CheckpointLocks& operator=(CheckpointLocks&& other) noexcept;
    CheckpointLocks(const CheckpointLocks&) = delete;
    CheckpointLocks& operator=(const CheckpointLocks&) = delete;
    ~CheckpointLocks();

    /// Takes the lock of `path`, or throws InputError "<option> 'PATH': in use by another
    /// kpm-dos run (pid P on host H) ..." (exit 2); a path already locked here is skipped.
    void lock(const std::string& option, const std::string& path);

private:
    void release() noexcept;
    struct Held {
        std::string lock_file;
        int fd = -1;
    };
    std::vector<Held> held_;
};

/// What check_run_files() leaves the run: the locks of its checkpoint paths (kept until the
/// run ends) and the guards for committing the result (analysis::ResultWriter::commit) and
/// the exported matrix (hamiltonians::export_matrix_market): each file is replaced only
/// while it is still the file verified here, or created only while the path is still free
/// -- checked again at the moment of the rename.
struct CheckedRunFiles {
    CheckpointLocks locks;
    files::Guard output;
    files::Guard export_matrix;  ///< the path free if there is no --export-matrix
};

/// Locks the checkpoint and restart paths (CheckpointLocks), then refuses (InputError naming
/// the option and the path) what the rules above forbid, checks that the directories are
/// writable (IoError), and cleans stale temporaries (reported with log::info /
/// log::warning). Run by the rank that writes, before anything is built.
CheckedRunFiles check_run_files(const RunFiles& f);

/// The checkpoint this run resumes, as it was when read and verified: the regular file the
/// --restart path names (symbolic links resolved) and its identity.
struct ResumedCheckpoint {
    std::string path;
    files::FileId id;
};
std::optional<ResumedCheckpoint> resumed_checkpoint(const RunFiles& f);

/// After the result is committed: removes the checkpoint this run wrote (`written`) and the
/// one it resumed (`resumed`), each only while its path still holds that very file
/// (files::remove_if_same: a symbolic link of the user's stays). Returns the paths removed.
std::vector<std::string> remove_spent_checkpoints(const RunFiles& f, const std::optional<files::FileId>& written,
                                                  const std::optional<ResumedCheckpoint>& resumed);

}  // namespace topokpm::app
