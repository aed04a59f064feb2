#pragma once
/// @file capabilities.hpp
/// The one table of what runs where: which option values (precision, operator kind,
/// device) a program supports on how many ranks. kpm-dos, kpm-eigs (serial or under
/// mpirun) and kpm-dos --plan all consult require_supported() before anything is built,
/// so --plan refuses exactly what the run it plans would refuse, with the same message.
/// Options that only some models take (models read from a file) are refused where the
/// options are read (app/cli/options.cpp), a 2-D decomposition of a model without a halo
/// model where the ranks' layout is decided (rank_layout, app/cli/resolved_run.hpp); what a
/// machine lacks (no GPU, no CUDA build) where the run starts.

#include <string>

#include "app/cli/run_config.hpp"

namespace topokpm::app {

/// A run as the table reads it.
struct RunShape {
    Program program = Program::Dos;
    MatrixKind matrix = MatrixKind::Sell;  ///< the kind asked for (`auto` never picks naive)
    Precision precision = Precision::Double;
    bool gpu = false;  ///< some ranks drive a GPU: --device cuda, or --plan --gpus G > 0
    int ranks = 1;     ///< the ranks of the run: mpirun's, or --plan --ranks
    bool conductivity = false;  ///< --conductivity
};

/// The shape of `cfg` run on `ranks` ranks; with --plan, of the planned run (--ranks,
/// --gpus) whatever `ranks` says.
RunShape run_shape(const RunConfig& cfg, int ranks);

/// Empty when every option value of `shape` is supported with the others; else the one
/// line that names the first value that is not (in the table's order), where it runs and
/// what to use instead: "--OPTION VALUE: ...".
std::string refusal(const RunShape& shape);

/// Throws InputError(refusal(run_shape(cfg, ranks))) when it is not empty.
void require_supported(const RunConfig& cfg, int ranks);

}  // namespace topokpm::app
