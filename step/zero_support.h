// Where each ZeRO stage is costed. ZeRO-1 (Megatron's distributed
// optimizer) everywhere. ZeRO-2 and ZeRO-3 without pipeline parallelism as
// DeepSpeed and FSDP run them with gradient accumulation (each
// micro-batch's gradients reduce-scattered, ZeRO-3's weights gathered per
// layer and pass); under pipelining as PyTorch's pipelining runs FSDP
// (torchtitan: unsharded once per step, gradients reduced once per step),
// so only on the schedules PyTorch has. DeepSpeed's pipeline engine takes
// ZeRO-1 at most, as does Megatron-LM and its Zero Bubble fork (ZBH1, ZBH2).
#pragma once

#include <string_view>

#include "models/training_shape.h"
#include "sim/generators/registry.h"

namespace pipeplan::step {

// True when pipeplan costs `zero` on `pp` pipeline ranks running `schedule`.
bool zero_runs_with(models::ZeroStage zero, int pp, std::string_view schedule);
// The same for a family at hand (a search asks for every candidate).
bool zero_runs_with(models::ZeroStage zero, int pp, const sim::ScheduleFamily& family);

// Throws InputError naming what would run.
void check_zero_pipeline(models::ZeroStage zero, int pp, std::string_view schedule);

}  // namespace pipeplan::step
