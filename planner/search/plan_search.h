// The search over pipeline plans: tensor-, pipeline- and data-parallel
// sizes, micro-batch size, schedule (with its chunks per rank),
// recomputation and the split, every candidate costed by the simulator
// under a memory cap with the figures `simulate --plan` gives (the
// replay's, or the engine's when a link queues). Candidates are bounded
// first (the busiest rank's compute plus the step's overheads; static memory
// plus one micro-batch) and replayed best bound first; one whose bounds can
// reach neither the top nor the Pareto front is skipped, which changes
// neither (tests compare with the unpruned search).
#pragma once

#include <cstddef>

#include "planner/plan.h"

namespace pipeplan::planner {

// Throws InputError for requests no plan can serve (GPUs or batch not
// divisible by anything, nothing fixed that fits).
PlanSearchResult search_plans(const PlanRequest& request, std::size_t top_k);

}  // namespace pipeplan::planner
