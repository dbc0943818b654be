// `pipeplan simulate`: replay a schedule with durations, link costs and memory.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command_output.h"

namespace pipeplan::cli {

void register_simulate_command(CLI::App& app, OutputSink sink = print_output);

}  // namespace pipeplan::cli
