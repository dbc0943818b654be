#include "step/stage_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "models/time_model.h"
#include "models/training_state.h"

namespace pipeplan::step {
namespace {

std::int64_t to_bytes(double bytes) { return static_cast<std::int64_t>(std::llround(bytes)); }

// Sums the layers of one stage into the simulator's per-micro-batch cost.
// A schedule whose one micro-batch carries several (naive: the whole batch)
// costs that many, in time and in bytes.
sim::StageCost stage_cost(const LayerTable& table, int i, int j, double scale) {
  sim::StageCost cost;
  cost.forward_s = table.forward_s(i, j) * scale + table.forward_overhead_s(i, j);
  cost.backward_input_s = table.backward_input_s(i, j) * scale + table.backward_overhead_s(i, j);
  cost.backward_weight_s = table.backward_weight_s(i, j) * scale;
  cost.forward_comm_s = table.forward_comm_s(i, j) * scale;
  cost.backward_input_comm_s = table.backward_input_comm_s(i, j) * scale;
  cost.forward_network_s = table.forward_network_s(i, j) * scale;
  cost.backward_input_network_s = table.backward_input_network_s(i, j) * scale;
  cost.activation_bytes = to_bytes(table.activation_bytes(i, j) * scale);
  cost.weight_grad_bytes = to_bytes(table.weight_grad_bytes(i, j) * scale);
  cost.logits_bytes = to_bytes(table.logits_bytes(i, j) * scale);
  cost.recompute_s = table.recompute_s(i, j) * scale;
  cost.recompute_bytes = to_bytes(table.recompute_bytes(i, j) * scale);
  // The boundary carries the output of the layer before it.
  cost.send_bytes = to_bytes(table.boundary_bytes(j) * scale);
  const double port = table.shared_network_bandwidth();
  if (port > 0 && cost.forward_comm_s + cost.backward_input_comm_s > 0) {
    cost.network_message_s = static_cast<double>(cost.send_bytes) / port;
  }
  return cost;
}

}  // namespace

sim::Topology pipeline_topology(const models::HardwareConfig& hardware, const models::TrainingShape& shape) {
  sim::Topology topology;
  topology.intra_node = {hardware.node_link.latency_s, hardware.node_link.bandwidth};
  topology.host = {hardware.host_link.latency_s, hardware.host_link.bandwidth};
  const int stride = std::max(1, shape.stage_stride());
  topology.ranks_per_node = std::max(1, hardware.local_gpus() / stride);
  const auto sim_link = [](const models::LinkSpec& link) { return sim::LinkSpec{link.latency_s, link.bandwidth}; };
  const std::vector<models::NetworkTier>& tiers = hardware.network_tiers;
  topology.inter_node = sim_link(models::network_tier_link(hardware, tiers.size()));
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    if (tiers[i].nodes == 0) {
      topology.inter_node = sim_link(models::network_tier_link(hardware, i));
      break;
    }
    const long long ranks = static_cast<long long>(tiers[i].nodes) * hardware.gpus_per_node / stride;
    if (ranks > topology.ranks_per_node) {
      topology.tiers.push_back({static_cast<int>(ranks), sim_link(models::network_tier_link(hardware, i))});
    }
  }
  return topology;
}

ModelStageCosts build_stage_costs(const LayerTable& table, const models::TrainingShape& shape,
                                  const StageSplit& split, const sim::Schedule& schedule) {
  return build_stage_costs(std::vector<const LayerTable*>(static_cast<std::size_t>(schedule.stages), &table), shape,
                           split, schedule);
}

ModelStageCosts build_stage_costs(const std::vector<const LayerTable*>& stage_tables,
                                  const models::TrainingShape& shape, const StageSplit& split,
                                  const sim::Schedule& schedule) {
  if (stage_tables.size() != static_cast<std::size_t>(schedule.stages)) {
    throw InputError(fmt::format("{} stages' recomputation given for a schedule of {} stages (p x v)",
                                 stage_tables.size(), schedule.stages));
  }
  if (split.stages() != schedule.stages) {
    throw InputError(fmt::format("the split has {} stages but the schedule {} (p x v)", split.stages(), schedule.stages));
  }
  if (split.layer_count() != stage_tables.front()->size()) {
    throw InputError("the split does not cover the model's layers");
  }
  ModelStageCosts result;
  result.costs.stages.reserve(static_cast<std::size_t>(schedule.stages));
  result.costs.hidden_comm_slowdown = stage_tables.front()->hidden_comm_slowdown();
  result.static_memory.resize(static_cast<std::size_t>(schedule.ranks));
  const models::StateBytes state = models::state_bytes(shape);
  const models::StateBytes expert_state = models::expert_state_bytes(shape);
  std::vector<double> working(static_cast<std::size_t>(schedule.ranks), 0.0);
  std::vector<double> fp8_copies(static_cast<std::size_t>(schedule.ranks), 0.0);
  std::vector<double> dispatcher(static_cast<std::size_t>(schedule.ranks), 0.0);
  for (int stage = 0; stage < schedule.stages; ++stage) {
    const int i = split.first_layer(stage), j = split.end_layer(stage);
    const LayerTable& table = *stage_tables[static_cast<std::size_t>(stage)];
    result.costs.stages.push_back(stage_cost(table, i, j, schedule.microbatch_scale));
    const auto rank = static_cast<std::size_t>(schedule.rank_of(stage));
    StaticMemory& memory = result.static_memory[rank];
    memory.params += to_bytes(table.params(i, j));
    memory.expert_params += to_bytes(table.expert_params(i, j));
    memory.fp8_params += to_bytes(table.fp8_params(i, j));
    fp8_copies[rank] += table.fp8_weight_copy_bytes(i, j);
    result.stage_params.push_back({table.params(i, j), table.expert_params(i, j), table.fp8_params(i, j)});
    memory.buffers += 2 * result.costs.stages.back().send_bytes;
    working[rank] = std::max(working[rank], table.working_bytes(i, j) * schedule.microbatch_scale);
    dispatcher[rank] = std::max(dispatcher[rank], table.dispatcher_buffer_bytes(i, j));
  }
  for (std::size_t rank = 0; rank < result.static_memory.size(); ++rank) {
    StaticMemory& memory = result.static_memory[rank];
    const auto expert = static_cast<double>(memory.expert_params);
    const double dense = static_cast<double>(memory.params) - expert;
    memory.weights = to_bytes(dense * state.weights + expert * expert_state.weights + fp8_copies[rank]);
    memory.gradients = to_bytes(dense * state.gradients + expert * expert_state.gradients);
    memory.optimizer = to_bytes(dense * state.optimizer + expert * expert_state.optimizer);
    memory.dispatcher_buffers = to_bytes(dispatcher[rank]);
    memory.buffers += to_bytes(working[rank]) + memory.dispatcher_buffers;
    result.costs.static_bytes.push_back(memory.total());
  }
  return result;
}

std::vector<std::vector<std::string>> rank_layer_names(const LayerTable& table, const StageSplit& split,
                                                       const sim::Schedule& schedule) {
  std::vector<std::vector<std::string>> names(static_cast<std::size_t>(schedule.ranks));
  for (int stage = 0; stage < split.stages(); ++stage) {
    auto& rank_names = names[static_cast<std::size_t>(schedule.rank_of(stage))];
    for (int layer = split.first_layer(stage); layer < split.end_layer(stage); ++layer) {
      rank_names.push_back(table.name(layer));
    }
  }
  return names;
}

}  // namespace pipeplan::step
