// `plan --objective goodput`: candidates ranked by the tokens per second
// they train once failures, restarts and checkpoints are counted
// (planner/goodput/goodput.h), each checkpointed at its own optimum interval.
#pragma once

#include "planner/plan.h"
#include "step/model_simulation.h"

namespace pipeplan::planner {

// Fills candidate.goodput and effective_tokens_per_s from its replay:
// synchronous saves of its state at Daly's interval on the request's GPUs.
void add_goodput(const step::ModelSimulation& simulation, const PlanRequest& request, PlanCandidate& candidate);

// No plan on the request's GPUs trains more than this share of the time:
// the goodput with instant checkpoints and loads, e^(-R/M), R the restart's
// relaunch and set-up alone (the bound the search prunes with).
double goodput_ceiling(const PlanRequest& request);

}  // namespace pipeplan::planner
