// `mpirun -np P pipeplan validate --plan FILE --backend cpu --out DIR`: run
// a plan's schedule for real, one pipeline rank per MPI process, and set
// the measured timeline and memory beside the simulated.
#pragma once

#include <CLI/CLI.hpp>

namespace pipeplan::cli {

void register_validate_command(CLI::App& app);

}  // namespace pipeplan::cli
