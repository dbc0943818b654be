// The Megatron-LM command-line arguments that run a plan.
#pragma once

#include <string>

#include "planner/plan_search.h"

namespace pipeplan::planner {

// Layer placement uses --decoder-first/last-pipeline-num-layers when the
// middle stages are even, else --pipeline-model-parallel-layout. Schedules
// Megatron-LM does not ship are named in a trailing note. With the model, a
// mixture of experts adds its expert flags and layout.
std::string megatron_arguments(const PlanCandidate& plan, int global_batch, int seq_len,
                               const models::ModelConfig* model = nullptr);

}  // namespace pipeplan::planner
