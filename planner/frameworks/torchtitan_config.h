// The torchtitan job config (TOML) that runs a plan: its [parallelism],
// [training] and [activation_checkpoint] sections, with the names of
// torchtitan v0.2.2 (torchtitan/config/job_config.py), the last release
// that reads TOML.
#pragma once

#include "models/model_config.h"
#include "planner/frameworks/framework_config.h"
#include "planner/plan.h"

namespace pipeplan::planner {

// The split is given stage by stage as module_fqns_per_model_part (the
// embedding "tok_embeddings", block i "layers.i", the output layer "norm"
// and "output"), which torchtitan places looped or, for its V schedules, in
// a V, as the plan does. Orders PyTorch has no class for (VHalf, VMin,
// ZBAuto) run from the CSV `simulate --plan --csv-out` writes. Refused:
// schedules torch.distributed.pipelining does not run, shapes its
// schedules or meshes reject. With the model, a mixture of experts adds
// its expert degrees.
FrameworkConfig torchtitan_config(const PlanCandidate& plan, int global_batch, int seq_len,
                                  const models::ModelConfig* model = nullptr);

}  // namespace pipeplan::planner
