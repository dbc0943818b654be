// `pipeplan model list|show`.
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::commands {

void register_model_command(CLI::App& app);

}  // namespace pipeplan::commands
