// The Megatron-LM command-line arguments that run a plan.
#pragma once

#include <optional>
#include <string>

#include "planner/plan.h"

namespace pipeplan::planner {

// Where Megatron-core puts a split's blocks: the first and last stages'
// counts where the middle stages are even (one chunk per rank), else the
// layout string; nothing for an even split. Megatron-LM's flags and
// Megatron-Bridge's fields both say it this way.
struct MegatronPlacement {
  std::optional<int> first_stage_layers, last_stage_layers;
  std::string layout;  // empty: none
};
MegatronPlacement megatron_placement(const PlanCandidate& plan);

// The one recomputation frameworks set for every stage: a per-stage plan's
// heaviest (the notes say so).
models::Recompute uniform_recompute(const PlanCandidate& plan);

// Who runs a schedule Megatron-LM does not ship ("PyTorch's pipelining
// runs it"), for the notes that refuse it.
std::string schedule_runners(const std::string& schedule);

// Layer placement uses --decoder-first/last-pipeline-num-layers when the
// middle stages are even, else --pipeline-model-parallel-layout. Schedules
// Megatron-LM does not ship are named in a trailing note. With the model, a
// mixture of experts adds its expert flags and layout.
std::string megatron_arguments(const PlanCandidate& plan, int global_batch, int seq_len,
                               const models::ModelConfig* model = nullptr);

}  // namespace pipeplan::planner
