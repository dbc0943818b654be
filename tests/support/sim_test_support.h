// Helpers for tests: generate a schedule and simulate it on uniform costs.
#pragma once

#include <string>

#include "common/error.h"
#include "sim/generators/registry.h"
#include "sim/search/zero_bubble_search.h"
#include "sim/simulate.h"

namespace pipeplan::sim::testing {

struct UniformCosts {
  double tf = 1.0;  // per rank, per micro-batch (seconds, any unit: tests compare ratios)
  double tb = 1.0;
  double tw = 0.0;
  double tcomm = 0.0;
  std::int64_t act_bytes = 0;
  std::int64_t wgrad_bytes = 0;
  std::int64_t static_bytes = 0;
  std::int64_t send_bytes = 0;
};

inline SimulationReport simulate_uniform(const Schedule& schedule, const UniformCosts& c,
                                         SimulationOptions options = {}) {
  RankCosts costs;
  costs.forward_s = {c.tf};
  costs.backward_input_s = {c.tb};
  costs.backward_weight_s = {c.tw};
  costs.activation_bytes = {c.act_bytes};
  costs.weight_grad_bytes = {c.wgrad_bytes};
  costs.static_bytes = {c.static_bytes};
  costs.send_bytes = {c.send_bytes};
  Topology topology;
  topology.intra_node.latency_s = c.tcomm;
  return simulate(schedule, expand_rank_costs(costs, schedule), topology, options);
}

// A family's schedule for a shape: generated or, for a searched family
// (ZBAuto), searched as its users search it, here on costs F 1, I 1,
// W 0.5 with M_B 2 and M_W 1 within 2p x M_B. Throws InputError for a
// shape the family does not run.
inline Schedule family_schedule(std::string_view name, PipelineShape shape) {
  const ScheduleFamily& family = find_schedule_family(name);
  if (!is_searched(family)) return generate_schedule(name, shape);
  if (shape.virtual_stages > 1) throw InputError("a searched schedule runs one stage per rank");
  ZeroBubbleSearchRequest request;
  request.microbatches = shape.microbatches;
  request.costs.stages.assign(static_cast<std::size_t>(shape.ranks), StageCost{1.0, 1.0, 0.5, 2, 1, 0, 0});
  request.costs.static_bytes.assign(static_cast<std::size_t>(shape.ranks), 0);
  request.memory_limit_bytes = {4LL * shape.ranks};
  return search_zero_bubble(request).schedule;
}

inline SimulationReport simulate_uniform(const std::string& name, int p, int m, int v, const UniformCosts& c,
                                         SimulationOptions options = {}) {
  return simulate_uniform(family_schedule(name, {p, m, v, 0}), c, options);
}

}  // namespace pipeplan::sim::testing
