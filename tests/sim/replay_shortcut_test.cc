// simulate() skips the event-queue engine when the uncontended replay shows
// no transfer waiting for its link, and takes the critical path from that
// replay: both must give exactly the engine's figures and the dependency
// graph's critical path, on every schedule family, with links that queue
// (large messages, shared inter-node links) and links that never do.
#include <gtest/gtest.h>

#include "common/error.h"
#include "sim/action_index.h"
#include "sim/dependency_graph.h"
#include "sim/engine.h"
#include "sim/generators/registry.h"
#include "sim/lowering.h"
#include "sim/memory_observer.h"
#include "sim/simulate.h"
#include "sim/usage_observer.h"
#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

struct Links {
  const char* name;
  double latency_s;
  double bandwidth;
  int ranks_per_node;
};

PipelineCosts uneven_costs(const Schedule& schedule) {
  RankCosts costs{{}, {}, {}, {}, {}, {}, {}};
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    costs.forward_s.push_back(1.0 + 0.25 * rank);
    costs.backward_input_s.push_back(1.5 + 0.1 * (rank % 3));
    costs.backward_weight_s.push_back(0.75);
    costs.activation_bytes.push_back(1000 + 10 * rank);
    costs.weight_grad_bytes.push_back(300);
    costs.static_bytes.push_back(5000);
    costs.send_bytes.push_back(1'000'000);
  }
  PipelineCosts expanded = expand_rank_costs(costs, schedule);
  // Communication inside the passes (an all-to-all) that overlapped pairs
  // hide, more than the other pass's compute on some stages.
  for (std::size_t stage = 0; stage < expanded.stages.size(); ++stage) {
    StageCost& cost = expanded.stages[stage];
    cost.forward_comm_s = cost.forward_s * (stage % 2 == 0 ? 0.3 : 0.9);
    cost.backward_input_comm_s = cost.backward_input_s * 0.2;
  }
  expanded.hidden_comm_slowdown = 0.1;
  return expanded;
}

TEST(ReplayShortcut, GivesTheEnginesFiguresAndTheGraphsCriticalPath) {
  const Links cases[] = {{"latency only", 0.2, std::numeric_limits<double>::infinity(), 0},
                         {"links that queue", 0.05, 0.6e6, 0},
                         {"shared inter-node links", 0.05, 2e6, 2}};
  int compared = 0;
  for (const ScheduleFamily& family : schedule_families()) {
    for (const auto& [p, m] : {std::pair{2, 4}, std::pair{4, 8}, std::pair{4, 12}}) {
      Schedule schedule;
      try {
        schedule = testing::family_schedule(family.name, {p, m, 0, 0});
      } catch (const pipeplan::InputError&) {
        continue;  // a shape the family does not run
      }
      const PipelineCosts costs = uneven_costs(schedule);
      for (const Links& links : cases) {
        Topology topology;
        topology.intra_node = {links.latency_s, links.bandwidth};
        topology.inter_node = topology.intra_node;
        topology.ranks_per_node = links.ranks_per_node;
        const SimulationReport report = simulate(schedule, costs, topology);
        // The reference: the engine on the lowered form, the graph's path.
        const Schedule lowered = lower_communication(schedule, RecvPlacement::kBeforeUse);
        UsageObserver usage(schedule.ranks, schedule.stages);
        MemoryObserver memory(costs, schedule.ranks, false);
        std::vector<EngineObserver*> observers{&usage, &memory};
        const EngineResult engine = run_engine(lowered, costs, topology, {true}, observers);
        const std::string where = std::string(family.name) + " " + links.name;
        EXPECT_DOUBLE_EQ(report.makespan_s, engine.makespan_s) << where;
        EXPECT_EQ(report.transfers, engine.transfers) << where;
        EXPECT_EQ(report.links, engine.links) << where;
        EXPECT_EQ(report.actions, lowered.action_count()) << where;
        for (int rank = 0; rank < schedule.ranks; ++rank) {
          const RankReport& r = report.ranks_detail[static_cast<std::size_t>(rank)];
          EXPECT_DOUBLE_EQ(r.busy_s, usage.ranks()[static_cast<std::size_t>(rank)].busy_s) << where;
          EXPECT_DOUBLE_EQ(r.span_s, usage.ranks()[static_cast<std::size_t>(rank)].span_s()) << where;
          EXPECT_EQ(r.peak_activation_bytes, memory.ranks()[static_cast<std::size_t>(rank)].peak_activation_bytes)
              << where;
        }
        const ActionIndex index(schedule);
        const DependencyGraph graph =
            build_dependency_graph(schedule, index, CommSemantics::kOverlap, {&costs, &topology});
        EXPECT_NEAR(report.critical_path_s, earliest_starts(graph).length_s, 1e-9) << where;
        std::size_t on_path = 0;
        for (const CriticalSegment& segment : report.critical_path) on_path += segment.actions;
        EXPECT_GE(on_path, 1u) << where;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 60);
}

}  // namespace
}  // namespace pipeplan::sim
