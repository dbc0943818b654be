// `--help` for a terminal of 120 columns: each option's description wrapped
// under its own column (CLI11 2.1 prints it on one line however long).
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::cli {

// Set before the subcommands are added: they take the app's formatter.
void use_wrapping_help(CLI::App& app);

}  // namespace pipeplan::cli
