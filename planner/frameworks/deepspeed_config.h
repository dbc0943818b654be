// The DeepSpeed config (ds_config JSON) that runs a plan: batch sizes,
// bf16 and the ZeRO stage, with the keys of DeepSpeed's configuration JSON
// (docs/_pages/config-json.md, v0.16); the pipeline, tensor parallelism and
// recomputation are arguments of PipelineModule and Megatron-DeepSpeed,
// said in the notes.
#pragma once

#include "planner/frameworks/framework_config.h"
#include "planner/plan.h"

namespace pipeplan::planner {

// Refused where DeepSpeed does not run the plan as planned (plan_refusal).
FrameworkConfig deepspeed_config(const PlanCandidate& plan, int global_batch, int seq_len);

}  // namespace pipeplan::planner
