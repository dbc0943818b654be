// `pipeplan goodput --plan FILE`: the run, not the step. A plan's step time
// and checkpoint under the cluster's failures: the checkpoint interval,
// the goodput and the time to train a token budget, with Monte Carlo runs.
#pragma once

#include <CLI/CLI.hpp>

#include "commands/command_output.h"

namespace pipeplan::commands {

void register_goodput_command(CLI::App& app, OutputSink sink = print_output);

}  // namespace pipeplan::commands
