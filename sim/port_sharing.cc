#include "sim/port_sharing.h"

#include <algorithm>

namespace pipeplan::sim {
namespace {

double shared_delay_s(double message_s, double network_s, double pass_s) {
  if (pass_s <= 0 || network_s <= 0) return 0;
  return std::min(message_s * std::min(1.0, network_s / pass_s), network_s);
}

// The network time of the largest message on a stage's boundaries that
// cross nodes (0 where none does).
double stage_network_message_s(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology,
                               int stage) {
  double message = 0;
  if (stage > 0) message = boundary_network_s(schedule, costs, topology, stage - 1);
  if (stage + 1 < schedule.stages) message = std::max(message, boundary_network_s(schedule, costs, topology, stage));
  return message;
}

}  // namespace

double boundary_network_s(const Schedule& schedule, const PipelineCosts& costs, const Topology& topology, int stage) {
  const int src = schedule.rank_of(stage), dst = schedule.rank_of(stage + 1);
  if (src == dst || topology.same_node(src, dst)) return 0;
  const double bytes = static_cast<double>(costs.stages[static_cast<std::size_t>(stage)].send_bytes);
  return bytes / topology.spec(src, dst).bandwidth_bytes_per_s;
}

std::optional<PipelineCosts> port_shared_costs(const Schedule& schedule, const PipelineCosts& costs,
                                               const Topology& topology) {
  const bool any = std::any_of(costs.stages.begin(), costs.stages.end(), [](const StageCost& cost) {
    return cost.forward_network_s > 0 || cost.backward_input_network_s > 0;
  });
  if (!any) return std::nullopt;
  PipelineCosts shared = costs;
  for (int stage = 0; stage < schedule.stages; ++stage) {
    StageCost& cost = shared.stages[static_cast<std::size_t>(stage)];
    const double message = stage_network_message_s(schedule, costs, topology, stage);
    cost.forward_s += shared_delay_s(message, cost.forward_network_s, cost.forward_s);
    cost.backward_input_s += shared_delay_s(message, cost.backward_input_network_s, cost.backward_input_s);
    cost.forward_network_s = cost.backward_input_network_s = 0;
  }
  return shared;
}

}  // namespace pipeplan::sim
