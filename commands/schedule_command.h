// `pipeplan schedule`: generate or read a schedule, validate it, print its
// rank-by-step grid and write it as a PyTorch schedule CSV.
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::commands {

void register_schedule_command(CLI::App& app);

}  // namespace pipeplan::commands
