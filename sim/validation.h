// Checks that a schedule can run: every compute action of every
// (stage, micro-batch) exactly once, F before I/B before W on each rank,
// SEND/RECV present and in order where stages sit on different ranks, and
// no deadlock (a cycle in the dependency graph). Throws ScheduleError with
// the first violation; a deadlock comes with the rank-by-step grid.
#pragma once

#include "sim/action_index.h"
#include "sim/schedule.h"

namespace pipeplan::sim {

// Accepts the compute-only form (communication implied, as the lowering
// pass will add it) or the lowered form (SEND/RECV checked as written).
// Returns the action index for reuse by the caller.
ActionIndex validate_schedule(const Schedule& schedule);

// Every check but the deadlock: each action once, in order, SEND/RECV
// where needed. A replay then finds a deadlock in linear time (a rank
// waits for an input never produced); validate_schedule explains it.
ActionIndex validate_structure(const Schedule& schedule);

}  // namespace pipeplan::sim
