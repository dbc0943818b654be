// Bytes of training state per parameter, mixed-precision Adam: bf16 weights
// (2), fp32 gradients (4), fp32 master weights, first and second moments
// (12): 18 bytes, or 6 + 12/d with the distributed optimizer / ZeRO-1 over d
// data-parallel ranks (reference.md; Rajbhandari et al. 2020).
#pragma once

#include <cstdint>

#include "models/training_shape.h"

namespace pipeplan::models {

struct StateBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};

// Adam's state a parameter: fp32 master weights and two moments, 12 bytes;
// 8 with the moments in bf16 (RuntimeFlags::optimizer_states_in_bf16), 2
// fewer with the master weights in bf16 (master_weights_in_bf16).
double optimizer_bytes_per_param(const RuntimeFlags& runtime);

// `gradient_bytes`: 4 (fp32 gradient buffers, Megatron's default) or 2
// (--grad-reduce-in-bf16); `optimizer_bytes` as optimizer_bytes_per_param.
StateBytes state_bytes_per_param(ZeroStage zero, int dp, double gradient_bytes = 4, double optimizer_bytes = 12);

// The shape's own: as above over its d x c replicas, except ZeRO-2/3
// pipelined (TrainingShape::pipelined), which hold the bf16 weights and the
// accumulated gradients whole through the step and shard the optimizer and
// the reduced gradients: 2 + g + (g + 12)/d.
StateBytes state_bytes(const TrainingShape& shape);
// The routed experts': as above over their expert data-parallel replicas
// (TrainingShape::expert_replicas).
StateBytes expert_state_bytes(const TrainingShape& shape);

}  // namespace pipeplan::models
