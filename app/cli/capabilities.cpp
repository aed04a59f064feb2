#include "app/cli/capabilities.hpp"

#include "runtime/base/error.hpp"

namespace topokpm::app {
namespace {

/// One restricted option value: when `chosen`, the run must be `supported`, else it is
/// refused with "`value`: `where`" (one line naming the options and the allowed values).
struct Capability {
    const char* value;
    bool (*chosen)(const RunShape&);
    bool (*supported)(const RunShape&);
    const char* where;
};

bool one_cpu_rank(const RunShape& s) { return s.ranks == 1 && !s.gpu; }

/// In order: the first refused row gives the message, so a combination of several refused
/// values gets the same message from every program.
constexpr Capability kTable[] = {
    {"--matrix naive", [](const RunShape& s) { return s.matrix == MatrixKind::Naive; }, one_cpu_rank,
     "the unfused reference runs on one CPU rank only (not with --device cuda, under mpirun, or with --plan "
     "--ranks P > 1 or --gpus G > 0); use --matrix auto, sell, crs or free"},
    {"--precision single", [](const RunShape& s) { return s.precision == Precision::Single; },
     [](const RunShape& s) { return s.program == Program::Dos && s.matrix != MatrixKind::Naive; },
     "implemented for --matrix sell, crs or free (or auto) in kpm-dos, on CPU and GPU ranks (not in kpm-eigs, whose "
     "residuals are below float's rounding); use --precision double"},
    {"--conductivity", [](const RunShape& s) { return s.conductivity; },
     [](const RunShape& s) { return !s.gpu || s.ranks == 1; },
     "the two-index moments run on CPU ranks (one, or several under mpirun) or on one GPU (--device cuda without "
     "mpirun, --plan --ranks 1 --gpus 1); not on GPU ranks under mpirun or with --plan --ranks P > 1 --gpus G > 0; "
     "use --device cpu"},
    {"--device cuda", [](const RunShape& s) { return s.gpu; },
     [](const RunShape& s) { return s.program == Program::Dos; }, "kpm-eigs runs on the CPU so far; use --device cpu"},
};

}  // namespace

RunShape run_shape(const RunConfig& cfg, int ranks)
{
    RunShape s;
    s.program = cfg.program;
    s.matrix = cfg.storage.matrix;
    s.precision = cfg.storage.precision;
    s.gpu = cfg.storage.device == DeviceKind::Cuda;
    s.ranks = ranks;
    s.conductivity = !cfg.kpm.conductivity.empty();
    if (cfg.runtime.plan.enabled) {
        s.ranks = cfg.runtime.plan.ranks;
        s.gpu = s.gpu || cfg.runtime.plan.gpus > 0;
    }
    return s;
}

std::string refusal(const RunShape& shape)
{
    for (const Capability& c : kTable)
        if (c.chosen(shape) && !c.supported(shape)) return detail::concat(c.value, ": ", c.where);
    return {};
}

void require_supported(const RunConfig& cfg, int ranks)
{
    const std::string why = refusal(run_shape(cfg, ranks));
    if (!why.empty()) throw InputError(why);
}

}  // namespace topokpm::app
