// `pipeplan study FILE`: run a what-if study and write its tables, plots
// and report.
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::cli {

void register_study_command(CLI::App& app);

}  // namespace pipeplan::cli
