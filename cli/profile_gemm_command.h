// `pipeplan profile gemm`: the matrix-product rate shape by shape (cpu or
// cuda backend), beside the time model's estimate for a hardware file.
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::cli {

// Adds `gemm` under the `profile` command and returns it.
CLI::App* register_profile_gemm_command(CLI::App& profile);

}  // namespace pipeplan::cli
