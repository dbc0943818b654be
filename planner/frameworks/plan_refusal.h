// Whether a framework runs a whole plan as planned: its layout and its
// split. The framework writers and the plan command write a framework's
// config only for such a plan.
#pragma once

#include "planner/plan.h"
#include "step/framework_support.h"

namespace pipeplan::planner {

// Why `framework` cannot run `plan` as planned (step::framework_refusal on
// its layout, else step::split_refusal on its split), or null.
const char* plan_refusal(step::Framework framework, const PlanCandidate& plan, int seq_len);

}  // namespace pipeplan::planner
