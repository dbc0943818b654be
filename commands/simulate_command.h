// `pipeplan simulate`: replay a schedule with durations, link costs and memory.
#pragma once

#include <CLI/CLI.hpp>

#include "commands/command_output.h"

namespace pipeplan::commands {

void register_simulate_command(CLI::App& app, OutputSink sink = print_output);

}  // namespace pipeplan::commands
