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
///   --export-matrix only when it is a Matrix Market file;
/// - an existing file at the checkpoint path is never replaced, unless it is the checkpoint
///   this run resumes: an interrupted run's checkpoint is removed only by the run that
///   completes it;
/// - when the result is written, the run removes the checkpoint it wrote itself and the one
///   it resumed (each only while it is still the very file written or verified);
/// - stale temporaries of this program next to the output and the checkpoint (a killed
///   run's "<file>.tmp-<pid>-<host>") are removed and reported, when their content marks
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

/// Refuses (InputError naming the option and the path) what the rules above forbid, checks
/// that the directories are writable (IoError), and cleans stale temporaries (reported
/// with log::info / log::warning). Run by the rank that writes, before anything is built.
/// Returns the guard for committing the result (analysis::ResultWriter::commit): the
/// output is replaced only while it is still the result verified here, or created only
/// while the path is still free -- checked again at the moment of the rename.
files::Guard check_run_files(const RunFiles& f);

/// The identity of the checkpoint this run resumes, taken when it was read and verified.
std::optional<files::FileId> resumed_checkpoint_id(const RunFiles& f);

/// After the result is committed: removes the checkpoint this run wrote (`written`) and the
/// one it resumed (`resumed`), each only while the path still holds that very file.
/// Returns the paths removed.
std::vector<std::string> remove_spent_checkpoints(const RunFiles& f, const std::optional<files::FileId>& written,
                                                  const std::optional<files::FileId>& resumed);

}  // namespace topokpm::app
