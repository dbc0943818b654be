// `pipeplan hardware list|show`: the built-in hardware descriptions.
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::commands {

void register_hardware_command(CLI::App& app);

}  // namespace pipeplan::commands
