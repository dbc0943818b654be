// PyTorch's unit-step count of a schedule (_simulate_comms_compute in
// torch/distributed/pipelining/schedules.py): the lowered schedule replayed
// in steps, ranks in ascending order, each rank taking its next action
// (compute, SEND or RECV alike) when what it needs was taken in an earlier
// step, or by a lower rank in this step, else idling; a second pass per step
// lets a rank use what higher ranks took in it. The count is the longest
// rank's number of steps, which PyTorch's tests compare.
#pragma once

#include "sim/schedule.h"

namespace pipeplan::sim {

// `lowered` carries its SEND/RECV actions. An overlapped pair (which
// PyTorch's simulator does not take) counts as one step once both halves
// could run. Throws ScheduleError when no rank can move (a deadlock).
int pytorch_step_count(const Schedule& lowered);

}  // namespace pipeplan::sim
