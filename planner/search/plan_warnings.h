// What a plan search says beside its answer: what to look at in the request
// itself, and the framework flags asked for that its best plan cannot use.
#pragma once

#include <string>
#include <vector>

#include "planner/plan.h"

namespace pipeplan::planner {

// Worth a look, though the search can serve them.
std::vector<std::string> request_warnings(const PlanRequest& request);

// A framework flag asked for that the best plan cannot use is said, not
// dropped in silence: appended to `warnings`.
void add_runtime_warnings(const PlanRequest& request, const PlanCandidate& best, std::vector<std::string>& warnings);

}  // namespace pipeplan::planner
