// The lowering pass: adds the point-to-point communication a compute-only
// schedule implies. After a compute action whose result is needed by a stage
// on another rank it inserts a SEND; before a compute action that needs a
// result from another rank it inserts the matching RECV. Stages that share
// a rank exchange nothing.
#pragma once

#include "sim/schedule.h"

namespace pipeplan::sim {

// Returns the lowered copy; a schedule that already has comm actions is
// returned unchanged.
Schedule lower_communication(const Schedule& schedule);

// The inverse: drops every SEND/RECV (for the compute-only CSV form).
Schedule strip_communication(const Schedule& schedule);

}  // namespace pipeplan::sim
