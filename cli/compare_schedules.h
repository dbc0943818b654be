// `pipeplan simulate --schedule all`: every schedule on the same shape and
// costs, side by side.
#pragma once

#include <ostream>

#include "cli/cost_inputs.h"
#include "cli/schedule_source.h"

namespace pipeplan::cli {

void compare_schedules(const ScheduleSource& source, const ResolvedCosts& costs, bool overlap_comm, bool json,
                       std::ostream& out);

}  // namespace pipeplan::cli
