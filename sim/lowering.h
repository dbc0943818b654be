// The lowering pass: adds the point-to-point communication a compute-only
// schedule implies. After a compute action whose result is needed by a stage
// on another rank it inserts a SEND; the matching RECV goes on the other
// rank. Stages that share a rank exchange nothing.
#pragma once

#include <string_view>

#include "sim/schedule.h"

namespace pipeplan::sim {

// Where a RECV goes in its rank's list.
enum class RecvPlacement {
  // PyTorch's _add_send_recv: the ranks are walked in rounds, each taking
  // its next compute action once its input's producer has been taken; a
  // RECV is appended to the receiver's list in the round its SEND is, so
  // receives are posted early (what `schedule --lowered` and PyTorch's
  // compute_comms CSV show).
  kPyTorch,
  // Just before the compute action that consumes it (as Megatron receives).
  kBeforeUse,
};

// "pytorch" | "before-use"; throws InputError naming --recv-placement.
RecvPlacement parse_recv_placement(std::string_view text);

// Returns the lowered copy; a schedule that already has comm actions is
// returned unchanged. An overlapped pair receives both inputs before it and
// sends both results after it. Throws ScheduleError if the compute order
// cannot be lowered (it deadlocks).
Schedule lower_communication(const Schedule& schedule, RecvPlacement placement);

// The inverse: drops every SEND/RECV (for the compute-only CSV form).
Schedule strip_communication(const Schedule& schedule);

}  // namespace pipeplan::sim
