// Parsing and running a program's commands with one mapping of errors to
// exit codes: 0 success, 2 bad input (options, files, schedules; one line,
// plus the grid of a schedule that deadlocks), 1 internal error.
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::cli {

inline constexpr const char* kVersion = "pipeplan 0.1.0";

int run_app(CLI::App& app, int argc, char** argv);

}  // namespace pipeplan::cli
