// `pipeplan simulate --schedule all`: every schedule on the same shape and
// costs, side by side.
#pragma once

#include "cli/command_output.h"
#include "cli/cost_inputs.h"
#include "cli/schedule_source.h"

namespace pipeplan::cli {

CommandOutput compare_schedules(const ScheduleSource& source, const ResolvedCosts& costs, bool overlap_comm);

}  // namespace pipeplan::cli
