// The plan search kept to one framework (PlanRequest::framework): the fixed
// choices of a request checked against what that framework runs, before
// anything is searched. The candidates themselves are kept to it as they
// are enumerated (step::frameworks_running).
#pragma once

#include "planner/plan.h"

namespace pipeplan::planner {

// Throws InputError naming the first fixed option (--schedule, --zero,
// --cp, --recompute, --rank-order, a runtime flag...) that the request's
// framework cannot run with any of the searched choices, what it runs in
// its place, and the version its rules were read from.
void check_framework_choices(const PlanRequest& request);

}  // namespace pipeplan::planner
