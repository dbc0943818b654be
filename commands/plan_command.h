// `pipeplan plan`: search for the fastest pipeline plan under a memory cap.
#pragma once

#include <CLI/CLI.hpp>

#include "commands/command_output.h"

namespace pipeplan::commands {

void register_plan_command(CLI::App& app, OutputSink sink = print_output);

}  // namespace pipeplan::commands
