// `pipeplan serve`: the layout (t x p, and replicas) that serves a model's
// requests best on N GPUs, its memory per stage, latency distributions and
// the vLLM, SGLang and TensorRT-LLM command lines that run it.
#pragma once

#include <CLI/CLI.hpp>

#include "commands/command_output.h"

namespace pipeplan::commands {

void register_serve_command(CLI::App& app, OutputSink sink = print_output);

}  // namespace pipeplan::commands
