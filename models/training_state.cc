#include "models/training_state.h"

#include <algorithm>

namespace pipeplan::models {
namespace {

// Mixed-precision Adam (reference.md; Rajbhandari et al. 2020, ZeRO Sec. 3):
// bf16 weights, fp32 gradients, fp32 master weights + first + second moments.
constexpr double kWeightBytes = 2;
constexpr double kOptimizerBytes = 12;

}  // namespace

double optimizer_bytes_per_param(const RuntimeFlags& runtime) {
  // Each moment in bf16 goes from 4 bytes to 2, and so do the master weights.
  return kOptimizerBytes - (runtime.optimizer_states_in_bf16 ? 4 : 0) - (runtime.master_weights_in_bf16 ? 2 : 0);
}

StateBytes state_bytes_per_param(ZeroStage zero, int dp, double gradient_bytes, double optimizer_bytes) {
  const double d = std::max(dp, 1);
  const int stage = static_cast<int>(zero);
  // Each ZeRO stage shards one more of optimizer, gradients, weights over d.
  return StateBytes{
      .weights = stage >= 3 ? kWeightBytes / d : kWeightBytes,
      .gradients = stage >= 2 ? gradient_bytes / d : gradient_bytes,
      .optimizer = stage >= 1 ? optimizer_bytes / d : optimizer_bytes,
  };
}

namespace {

StateBytes state_over(const TrainingShape& shape, int replicas) {
  const double gradient = shape.gradient_bytes();
  const double optimizer = optimizer_bytes_per_param(shape.runtime);
  if (!shape.pipelined || shape.zero < ZeroStage::kGradients)
    return state_bytes_per_param(shape.zero, replicas, gradient, optimizer);
  const double d = std::max(replicas, 1);
  return StateBytes{.weights = kWeightBytes, .gradients = gradient + gradient / d, .optimizer = optimizer / d};
}

}  // namespace

StateBytes state_bytes(const TrainingShape& shape) { return state_over(shape, shape.weight_replicas()); }
StateBytes expert_state_bytes(const TrainingShape& shape) { return state_over(shape, shape.expert_replicas()); }

}  // namespace pipeplan::models
