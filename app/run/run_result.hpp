#pragma once
/// @file run_result.hpp
/// The result file of one kpm-dos or kpm-eigs run (models.md §5, docs/format.md): the one
/// place the programs write it. Every quantity (dos, ldos, ldos_map, green, spectral,
/// conductivity, eigs) writes its groups and datasets through a RunResult; a group's `unit`
/// and `description` come from one table (group_meaning), a dataset's are given where it is
/// written (each dataset is written in one place), and commit() adds /provenance (the
/// attributes every program writes, then the program's own, then the phase times) before
/// the atomic rename. Writing a file of another kind (a checkpoint) is not this class's:
/// it uses analysis::ResultWriter directly.

#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/result_file.hpp"
#include "app/cli/run_config.hpp"
#include "numerics/base/attribute.hpp"
#include "runtime/base/files.hpp"
#include "runtime/base/timer.hpp"

namespace topokpm::app {

/// What /provenance records of every run besides the program's own attributes: when it
/// started, its threads per rank and its phase times. kpm-dos's and kpm-eigs's runs are one.
struct RunRecord {
    const double t_start = wall_seconds();
    const std::string start_time = utc_now();
    int threads = 1;
    PhaseTimers timers;
};

/// The unit and description of the result groups (docs/format.md's table of groups):
/// /model, /kpm, /dos, /realizations, /ldos, /ldos_map, /green, /spectral, /conductivity,
/// /eigs, /provenance. Any other name fails the internal check (TOPOKPM_REQUIRE): no group
/// is written without its meaning.
const analysis::Meaning& group_meaning(const std::string& group);

class RunResult {
public:
    /// Opens the temporary file of config.outputs.result_file (analysis::ResultWriter; with
    /// `collective`, every rank of the run opens it and makes every call below, see there)
    /// and writes /model with `model_attributes` (Model::attributes()).
    RunResult(const RunConfig& config, const AttributeList& model_attributes, bool collective = false);

    /// Attributes of `group` (one of group_meaning's), with the group's unit and description.
    void write_attributes(const std::string& group, const AttributeList& attributes);

    /// The datasets, each with its unit and description: analysis::ResultWriter's calls.
    void write_doubles(const std::string& dataset, const analysis::Meaning& meaning, const std::vector<double>& data,
                       const std::vector<std::uint64_t>& dims);
    void write_rows(const std::string& dataset, const analysis::Meaning& meaning, const double* local,
                    std::size_t count, const std::vector<analysis::RowRun>& runs,
                    const std::vector<std::uint64_t>& dims);
    void write_complex(const std::string& dataset, const analysis::Meaning& meaning, const std::complex<double>* data,
                       std::size_t count, const std::vector<std::uint64_t>& dims);
    void write_int64(const std::string& dataset, const analysis::Meaning& meaning,
                     const std::vector<std::int64_t>& data, const std::vector<std::uint64_t>& dims);
    void write_uint64(const std::string& dataset, const analysis::Meaning& meaning,
                      const std::vector<std::uint64_t>& data, const std::vector<std::uint64_t>& dims);

    /// Writes /provenance: program ("topokpm <program>"), program_version, git_revision,
    /// command_line, input_file, input_file_text, threads_per_rank, devices, start_time,
    /// end_time (now); then `program_attributes` (operator, layout, rates: the program's
    /// own); then seconds_<phase> of each of the record's phases and seconds_total (since
    /// its start). Then publishes the file (analysis::ResultWriter::commit with `guard`).
    void commit(const RunRecord& record, const std::string& devices, const AttributeList& program_attributes,
                const files::Guard* guard);

private:
    const RunConfig& config_;
    analysis::ResultWriter out_;
};

}  // namespace topokpm::app
