#include "planner/frameworks/plan_refusal.h"

namespace pipeplan::planner {

const char* plan_refusal(step::Framework framework, const PlanCandidate& plan, int seq_len) {
  if (const char* reason = step::framework_refusal(framework, plan, seq_len)) return reason;
  return plan.pp > 1 ? step::split_refusal(framework, plan.split) : nullptr;
}

}  // namespace pipeplan::planner
