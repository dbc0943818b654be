// `pipeplan plan`: search for the fastest pipeline plan under a memory cap.
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::cli {

void register_plan_command(CLI::App& app);

}  // namespace pipeplan::cli
