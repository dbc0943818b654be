// `pipeplan profile`: measure a model's layers (cpu or cuda backend) and,
// with `profile links`, the point-to-point links (mpi or nccl).
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::cli {

void register_profile_command(CLI::App& app);

}  // namespace pipeplan::cli
