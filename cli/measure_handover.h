// `pipeplan profile` and `pipeplan validate` run in pipeplan-measure, the
// program installed beside pipeplan, so that planning and simulating never
// load the profiler's backends, MPI or CUDA.
#pragma once

#include <string_view>

namespace pipeplan::cli {

// The commands pipeplan-measure runs.
bool runs_in_measure(std::string_view command);

// Replaces this process with pipeplan-measure and the same arguments (under
// mpirun too: MPI is not started yet). Returns only to report that it is
// missing or cannot start: one line naming the file looked for, exit 2.
int hand_over_to_measure(char** argv);

}  // namespace pipeplan::cli
