// `pipeplan calibrate RUNS.yaml`: fits a hardware description's free
// efficiency parameters to measured runs and writes the fitted description;
// `--report` only predicts every run and prints the residuals.
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::cli {

void register_calibrate_command(CLI::App& app);

}  // namespace pipeplan::cli
