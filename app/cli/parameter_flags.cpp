#include "app/cli/parameter_flags.hpp"

#include <map>

#include "runtime/base/error.hpp"

namespace topokpm::app {
namespace {

/// Parameter name (as lower layers write it) -> command-line flag.
const std::map<std::string, std::string>& flag_table()
{
    static const std::map<std::string, std::string> table = {
    {"boundary", "--boundary"},
    {"bounds", "--bounds"},
    {"cell_vectors", "--cell-vectors"},
    {"comm_mode", "--comm-mode"},
    {"decomposition", "--decomposition"},
    {"device", "--device"},
    {"disorder", "--disorder"},
    {"conductivity", "--conductivity"},
    {"dot_depth", "--dot-depth"},
    {"dot_period", "--dot-period"},
    {"dot_potential", "--dot-potential"},
    {"dot_radius", "--dot-radius"},
    {"eig_count", "--extremal/--count"},
    {"eig_method", "--method"},
    {"eig_shift", "--shift"},
    {"eig_tolerance", "--tolerance"},
    {"eig_window", "--window"},
    {"energy_points", "--energy-points"},
    {"energy_range", "--energy-range"},
    {"epsilon", "--epsilon"},
    {"exchange_mass", "--exchange-mass"},
    {"export_matrix", "--export-matrix"},
    {"gpus", "--gpus"},
    {"green_eta", "--green"},
    {"k_points", "--k-points"},
    {"kernel", "--kernel"},
    {"lanczos_steps", "--lanczos-steps"},
    {"lattice", "--lattice"},
    {"ldos", "--ldos"},
    {"lorentz_lambda", "--lorentz-lambda"},
    {"m", "--m"},
    {"magnetic_flux", "--magnetic-flux"},
    {"matrix", "--matrix"},
    {"memory_limit", "--memory-limit"},
    {"model", "--model"},
    {"model_file", "--model-file"},
    {"moments", "--moments"},
    {"orbital_positions", "--orbital-positions"},
    {"output", "--output"},
    {"precision", "--precision"},
    {"probing_distance", "--probing-distance"},
    {"probing_draws", "--probing-draws"},
    {"ranks", "--ranks"},
    {"sell_chunk_height", "--sell-C"},
    {"sell_sigma", "--sell-sigma"},
    {"t", "--t"},
    {"tblock_lines", "--tblock-lines"},
    {"temperature", "--temperature"},
    {"vectors", "--vectors"},
    {"weights", "--weights"},
    };
    return table;
}

}  // namespace

std::string name_flags(const std::string& message)
{
    std::string out;
    out.reserve(message.size());
    for (std::size_t i = 0; i < message.size();) {
        const std::size_t close = message[i] == '{' ? message.find('}', i) : std::string::npos;
        if (close != std::string::npos) {
            const auto it = flag_table().find(message.substr(i + 1, close - i - 1));
            if (it != flag_table().end()) {
                out += it->second;
                i = close + 1;
                continue;
            }
        }
        out += message[i++];
    }
    return out;
}

void with_flag_names(const std::function<void()>& f)
{
    try {
        f();
    } catch (const InputError& e) {
        throw InputError(name_flags(e.what()));
    } catch (const ResourceError& e) {
        throw ResourceError(name_flags(e.what()));
    } catch (const IoError& e) {
        throw IoError(name_flags(e.what()));
    } catch (const NumericalError& e) {
        throw NumericalError(name_flags(e.what()));
    }
}

}  // namespace topokpm::app
