// `pipeplan plan`: search for the fastest pipeline plan under a memory cap.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/command_output.h"

namespace pipeplan::cli {

void register_plan_command(CLI::App& app, OutputSink sink = print_output);

}  // namespace pipeplan::cli
