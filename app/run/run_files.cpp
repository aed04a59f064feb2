#include "app/run/run_files.hpp"

#include <cstdio>
#include <fstream>

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

}  // namespace

files::Guard check_run_files(const RunFiles& f)
{
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
        (!is_matrix_market(f.export_matrix) || files::write_protected(f.export_matrix)))
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

    files::Guard output{std::nullopt, replaceable_result};
    if (files::FileId id; files::identify(f.output, id)) output.existing = id;
    return output;
}

std::optional<files::FileId> resumed_checkpoint_id(const RunFiles& f)
{
    files::FileId id;
    if (f.restart.empty() || !files::identify(f.restart, id)) return std::nullopt;
    return id;
}

std::vector<std::string> remove_spent_checkpoints(const RunFiles& f, const std::optional<files::FileId>& written,
                                                  const std::optional<files::FileId>& resumed)
{
    std::vector<std::string> removed;
    if (written && files::remove_if_same(f.checkpoint, *written)) removed.push_back(f.checkpoint);
    if (resumed && !f.restart.empty() && files::remove_if_same(f.restart, *resumed)) removed.push_back(f.restart);
    return removed;
}

}  // namespace topokpm::app
