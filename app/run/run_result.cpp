#include "app/run/run_result.hpp"

#include <map>

#include "app/cli/build_revision.hpp"
#include "runtime/base/error.hpp"
#include "topokpm/config.hpp"

namespace topokpm::app {

const analysis::Meaning& group_meaning(const std::string& group)
{
    static const std::map<std::string, analysis::Meaning> groups = {
        {"/model", {"t", "The model Hamiltonian; its energies are in units of the hopping t."}},
        {"/kpm", {"t", "The Chebyshev expansion: its scaling, spectral bounds and sizes."}},
        {"/dos", {"1/t", "The density of states and how it was reconstructed."}},
        {"/realizations", {"1", "The disorder realizations averaged and their seeds."}},
        {"/ldos", {"1/t", "The local density of states of the selected rows."}},
        {"/ldos_map", {"1/t", "A map of the layer's local density of states at one energy."}},
        {"/green", {"1/t", "The local density of states from the Green function by sparse LU."}},
        {"/spectral", {"1/t", "The momentum-resolved spectral function A(k, E)."}},
        {"/conductivity", {"e^2/h", "The Kubo-Bastin conductivity tensor element (models.md §9)."}},
        {"/eigs", {"t", "Eigenpairs of the Hamiltonian and how they were found."}},
        {"/provenance", {"none", "How, when and by which program the file was made."}},
    };
    const auto it = groups.find(group);
    TOPOKPM_REQUIRE(it != groups.end(), "result group '", group, "' has no unit and description");
    return it->second;
}

RunResult::RunResult(const RunConfig& config, const AttributeList& model_attributes, bool collective)
    : config_(config), out_(config.outputs.result_file, collective)
{
    write_attributes("/model", model_attributes);
}

void RunResult::write_attributes(const std::string& group, const AttributeList& attributes)
{
    out_.write_attributes(group, group_meaning(group), attributes);
}

void RunResult::write_doubles(const std::string& dataset, const analysis::Meaning& meaning,
                              const std::vector<double>& data, const std::vector<std::uint64_t>& dims)
{
    out_.write_doubles(dataset, meaning, data, dims);
}

void RunResult::write_rows(const std::string& dataset, const analysis::Meaning& meaning, const double* local,
                           std::size_t count, const std::vector<analysis::RowRun>& runs,
                           const std::vector<std::uint64_t>& dims)
{
    out_.write_rows(dataset, meaning, local, count, runs, dims);
}

void RunResult::write_complex(const std::string& dataset, const analysis::Meaning& meaning,
                              const std::complex<double>* data, std::size_t count,
                              const std::vector<std::uint64_t>& dims)
{
    out_.write_complex(dataset, meaning, data, count, dims);
}

void RunResult::write_int64(const std::string& dataset, const analysis::Meaning& meaning,
                            const std::vector<std::int64_t>& data, const std::vector<std::uint64_t>& dims)
{
    out_.write_int64(dataset, meaning, data, dims);
}

void RunResult::write_uint64(const std::string& dataset, const analysis::Meaning& meaning,
                             const std::vector<std::uint64_t>& data, const std::vector<std::uint64_t>& dims)
{
    out_.write_uint64(dataset, meaning, data, dims);
}

void RunResult::commit(const RunRecord& record, const std::string& devices, const AttributeList& program_attributes,
                       const files::Guard* guard)
{
    AttributeList prov = {{"program", "topokpm " + program_name(config_.program)},
                          {"program_version", std::string(TOPOKPM_VERSION)},
                          {"git_revision", std::string(git_revision())},
                          {"command_line", config_.provenance.command_line},
                          {"input_file", config_.provenance.config_path},
                          {"input_file_text", config_.provenance.config_text},
                          {"threads_per_rank", std::int64_t(record.threads)},
                          {"devices", devices},
                          {"start_time", record.start_time},
                          {"end_time", utc_now()}};
    prov.insert(prov.end(), program_attributes.begin(), program_attributes.end());
    for (const auto& [phase, seconds] : record.timers.phases()) prov.push_back({"seconds_" + phase, seconds});
    prov.push_back({"seconds_total", wall_seconds() - record.t_start});
    write_attributes("/provenance", prov);
    out_.commit(guard);
}

}  // namespace topokpm::app
