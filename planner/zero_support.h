// Where ZeRO-2 and ZeRO-3 are costed: without pipeline parallelism, as
// DeepSpeed and FSDP run them with gradient accumulation (each micro-batch's
// gradients reduce-scattered, ZeRO-3's weights gathered per layer and
// pass). Under pipelining the frameworks that shard do otherwise: PyTorch's
// pipelining syncs FSDP's gradients once per step and unshards once per
// step, DeepSpeed's pipeline engine takes ZeRO-1 at most, Megatron-LM's
// distributed optimizer is ZeRO-1; not modelled yet.
#pragma once

#include "models/training_shape.h"

namespace pipeplan::planner {

// True when pipeplan costs `zero` on `pp` pipeline ranks.
bool zero_runs_with(models::ZeroStage zero, int pp);

// Throws InputError naming what would run.
void check_zero_pipeline(models::ZeroStage zero, int pp);

}  // namespace pipeplan::planner
