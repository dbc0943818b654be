// `pipeplan simulate`: replay a schedule with durations, link costs and memory.
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::cli {

void register_simulate_command(CLI::App& app);

}  // namespace pipeplan::cli
