// Which frameworks run ZeRO-2 and ZeRO-3 with pipeline parallelism: FSDP
// under PyTorch's pipelining schedules (torchtitan's FSDP x PP). Megatron-LM's
// distributed optimizer is ZeRO-1, DeepSpeed's pipeline engine takes ZeRO-1
// at most, and the Zero Bubble fork of Megatron-LM (ZBH1, ZBH2) builds on the
// former.
#pragma once

#include <string_view>

#include "models/training_shape.h"

namespace pipeplan::planner {

// True when some framework runs `zero` with the schedule family `schedule`.
bool zero_runs_with(models::ZeroStage zero, std::string_view schedule);

// Throws InputError naming the schedules that do run it.
void check_zero_schedule(models::ZeroStage zero, std::string_view schedule);

}  // namespace pipeplan::planner
