// Helpers for tests: generate a schedule and simulate it on uniform costs.
#pragma once

#include <string>

#include "sim/generators/registry.h"
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

inline SimulationReport simulate_uniform(const std::string& name, int p, int m, int v, const UniformCosts& c,
                                         SimulationOptions options = {}) {
  return simulate_uniform(generate_schedule(name, {p, m, v, 0}), c, options);
}

}  // namespace pipeplan::sim::testing
