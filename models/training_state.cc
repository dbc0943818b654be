#include "models/training_state.h"

#include <algorithm>

namespace pipeplan::models {
namespace {

// Mixed-precision Adam (reference.md; Rajbhandari et al. 2020, ZeRO Sec. 3):
// bf16 weights, fp32 gradients, fp32 master weights + first + second moments.
constexpr double kWeightBytes = 2;
constexpr double kOptimizerBytes = 12;

}  // namespace

StateBytes state_bytes_per_param(ZeroStage zero, int dp, double gradient_bytes) {
  const double d = std::max(dp, 1);
  const int stage = static_cast<int>(zero);
  // Each ZeRO stage shards one more of optimizer, gradients, weights over d.
  return StateBytes{
      .weights = stage >= 3 ? kWeightBytes / d : kWeightBytes,
      .gradients = stage >= 2 ? gradient_bytes / d : gradient_bytes,
      .optimizer = stage >= 1 ? kOptimizerBytes / d : kOptimizerBytes,
  };
}

namespace {

StateBytes state_over(const TrainingShape& shape, int replicas) {
  const double gradient = shape.gradient_bytes();
  if (!shape.pipelined || shape.zero < ZeroStage::kGradients)
    return state_bytes_per_param(shape.zero, replicas, gradient);
  const double d = std::max(replicas, 1);
  return StateBytes{.weights = kWeightBytes, .gradients = gradient + gradient / d, .optimizer = kOptimizerBytes / d};
}

}  // namespace

StateBytes state_bytes(const TrainingShape& shape) { return state_over(shape, shape.weight_replicas()); }
StateBytes expert_state_bytes(const TrainingShape& shape) { return state_over(shape, shape.expert_replicas()); }

}  // namespace pipeplan::models
