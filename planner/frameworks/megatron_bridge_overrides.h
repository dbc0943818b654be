// The Megatron-Bridge recipe overrides (YAML) that run a plan: the
// ConfigContainer fields of Megatron-Bridge v0.6.0 (NeMo 2's training
// moved there), Megatron-core's under `model`, merged over a recipe as an
// override file is (OmegaConf.merge).
#pragma once

#include "models/model_config.h"
#include "planner/frameworks/framework_config.h"
#include "planner/plan.h"

namespace pipeplan::planner {

// Sets every field the plan decides, the recipe's conflicting ones cleared
// (a layout string with no first/last counts, and the reverse), so that
// the merge does not depend on the recipe. The model itself is the
// recipe's. Refused: schedules Megatron-core does not run. With the model,
// a mixture of experts adds its expert sizes and dispatcher.
FrameworkConfig megatron_bridge_overrides(const PlanCandidate& plan, int global_batch, int seq_len,
                                          const models::ModelConfig* model = nullptr);

}  // namespace pipeplan::planner
