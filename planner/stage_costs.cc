#include "planner/stage_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "models/time_model.h"
#include "models/training_state.h"

namespace pipeplan::planner {
namespace {

std::int64_t to_bytes(double bytes) { return static_cast<std::int64_t>(std::llround(bytes)); }

// Sums the layers of one stage into the simulator's per-micro-batch cost.
sim::StageCost stage_cost(const models::ModelLayers& model, const std::vector<models::LayerTimes>& times,
                          const StageSplit& split, int stage) {
  sim::StageCost cost;
  for (int layer = split.first_layer(stage); layer < split.end_layer(stage); ++layer) {
    const models::LayerCost& layer_cost = model.layers[static_cast<std::size_t>(layer)];
    const models::LayerTimes& time = times[static_cast<std::size_t>(layer)];
    cost.forward_s += time.forward_s;
    cost.backward_input_s += time.backward_input_s;
    cost.backward_weight_s += time.backward_weight_s;
    cost.activation_bytes += layer_cost.activation_bytes;
    cost.weight_grad_bytes += layer_cost.weight_grad_bytes;
    cost.logits_bytes += layer_cost.logits_bytes;
  }
  // A boundary carries the output of the layer before it (an empty stage
  // passes on what it received).
  const int before_boundary = std::max(split.end_layer(stage) - 1, 0);
  cost.send_bytes = model.layers[static_cast<std::size_t>(before_boundary)].output_bytes;
  return cost;
}

}  // namespace

sim::Topology pipeline_topology(const models::HardwareConfig& hardware, const models::TrainingShape& shape) {
  sim::Topology topology;
  topology.intra_node = {hardware.node_link.latency_s, hardware.node_link.bandwidth};
  topology.inter_node = {hardware.network.latency_s, hardware.network.bandwidth};
  const int stride = shape.tp * shape.dp;
  topology.ranks_per_node = std::max(1, hardware.gpus_per_node / std::max(1, stride));
  return topology;
}

ModelStageCosts build_stage_costs(const models::ModelLayers& layers, const models::HardwareConfig& hardware,
                                  const models::TrainingShape& shape, const StageSplit& split,
                                  const sim::Schedule& schedule) {
  if (split.stages() != schedule.stages) {
    throw InputError(fmt::format("the split has {} stages but the schedule {} (p x v)", split.stages(), schedule.stages));
  }
  if (split.layer_count() != static_cast<int>(layers.layers.size())) {
    throw InputError("the split does not cover the model's layers");
  }
  std::vector<models::LayerTimes> times;
  times.reserve(layers.layers.size());
  for (const models::LayerCost& layer : layers.layers) times.push_back(models::layer_times(layer, hardware, shape));

  ModelStageCosts result;
  result.costs.stages.reserve(static_cast<std::size_t>(schedule.stages));
  result.static_memory.resize(static_cast<std::size_t>(schedule.ranks));
  result.layers.resize(static_cast<std::size_t>(schedule.ranks));
  const models::StateBytes state = models::state_bytes_per_param(shape.zero, shape.dp);
  std::vector<std::int64_t> working(static_cast<std::size_t>(schedule.ranks), 0);
  for (int stage = 0; stage < schedule.stages; ++stage) {
    result.costs.stages.push_back(stage_cost(layers, times, split, stage));
    const auto rank = static_cast<std::size_t>(schedule.rank_of(stage));
    StaticMemory& memory = result.static_memory[rank];
    for (int layer = split.first_layer(stage); layer < split.end_layer(stage); ++layer) {
      const models::LayerCost& cost = layers.layers[static_cast<std::size_t>(layer)];
      memory.params += cost.params_per_rank;
      working[rank] = std::max(working[rank], cost.working_bytes);
      result.layers[rank].push_back(cost.name);
    }
    // Send and receive buffers for the boundary activation.
    memory.buffers += 2 * result.costs.stages.back().send_bytes;
  }
  for (std::size_t rank = 0; rank < result.static_memory.size(); ++rank) {
    StaticMemory& memory = result.static_memory[rank];
    const double params = static_cast<double>(memory.params);
    memory.weights = to_bytes(params * state.weights);
    memory.gradients = to_bytes(params * state.gradients);
    memory.optimizer = to_bytes(params * state.optimizer);
    memory.buffers += working[rank];
    result.costs.static_bytes.push_back(memory.total());
  }
  return result;
}

}  // namespace pipeplan::planner
