// The engine on small cases worked out by hand: transfers with latency,
// blocking communication, link queueing and links shared between nodes.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "sim/generators/registry.h"
#include "sim/lowering.h"
#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

using testing::simulate_uniform;

TEST(Engine, OneFOneBTwoRanksWithLatencyByHand) {
  // tf 1, tb 2, 0.5 per hop. Rank 0: F0 [0,1], F1 [1,2], B0 waits for the
  // gradient (rank 1 B0 ends 4.5, +0.5) [5,7], B1 [8,10]. Rank 1: F0
  // [1.5,2.5], B0 [2.5,4.5], F1 [4.5,5.5], B1 [5.5,7.5].
  const SimulationReport report = simulate_uniform("1F1B", 2, 2, 0, {1, 2, 0, 0.5});
  EXPECT_DOUBLE_EQ(report.makespan_s, 10.0);
  EXPECT_DOUBLE_EQ(report.ranks_detail[0].span_s, 10.0);
  EXPECT_DOUBLE_EQ(report.ranks_detail[1].first_start_s, 1.5);
  EXPECT_DOUBLE_EQ(report.ranks_detail[1].last_end_s, 7.5);
  EXPECT_DOUBLE_EQ(report.critical_path_s, 10.0);
  EXPECT_EQ(report.transfers, 4u);
}

TEST(Engine, BlockingCommunicationHoldsTheStream) {
  // Same case without overlap: each SEND holds its rank for 0.5.
  // Rank 0: F0 [0,1] send [1,1.5] F1 [1.5,2.5] send [2.5,3]; B0 after rank 1's
  // send [4.5,5] -> [5,7]; B1 after rank 1's last send [8,8.5] -> [8.5,10.5].
  SimulationOptions options;
  options.overlap_comm = false;
  const SimulationReport report = simulate_uniform("1F1B", 2, 2, 0, {1, 2, 0, 0.5}, options);
  EXPECT_DOUBLE_EQ(report.makespan_s, 10.5);
  EXPECT_DOUBLE_EQ(report.critical_path_s, 10.5);
  // PyTorch's placement posts rank 1's RECV_F1 right after 1F0, so the
  // blocking receive holds it until 1F1's input lands at 3 (not 2.5): B0
  // [3,5], send [5,5.5], F1 [5.5,6.5], B1 [6.5,8.5], send [8.5,9]; rank 0's
  // B0 [5.5,7.5] and B1 after the last send [9,11].
  options.recv_placement = RecvPlacement::kPyTorch;
  const SimulationReport early = simulate_uniform("1F1B", 2, 2, 0, {1, 2, 0, 0.5}, options);
  EXPECT_DOUBLE_EQ(early.makespan_s, 11);
  EXPECT_DOUBLE_EQ(early.critical_path_s, 11);
  // With overlap, a RECV's place makes no difference.
  options.overlap_comm = true;
  const double overlapped = simulate_uniform("1F1B", 2, 2, 0, {1, 2, 0, 0.5}, options).makespan_s;
  options.recv_placement = RecvPlacement::kBeforeUse;
  EXPECT_DOUBLE_EQ(simulate_uniform("1F1B", 2, 2, 0, {1, 2, 0, 0.5}, options).makespan_s, overlapped);
}

TEST(Engine, ALinkCarriesOneTransferAtATime) {
  // GPipe, 2 ranks, tf 1, tb 1, transfers take 3 (bytes / bandwidth): the
  // second forward's activation waits for the first to clear the link.
  RankCosts costs;
  costs.forward_s = {1};
  costs.backward_input_s = {1};
  costs.send_bytes = {300};
  Topology topology;
  topology.intra_node.bandwidth_bytes_per_s = 100;
  SimulationOptions options;
  options.record_timeline = true;
  const Schedule schedule = generate_schedule("GPipe", {2, 2, 1, 0});
  const SimulationReport report = simulate(schedule, expand_rank_costs(costs, schedule), topology, options);
  // Rank 1: F0 [4,5], F1 [7,8] (queued 2..4), B0 [8,9], B1 [9,10].
  // Rank 0: B0 after 9+3 = 12 -> [12,13]; B1's gradient leaves at 10 but the
  // link is busy until 12 -> arrives 15 -> [15,16].
  EXPECT_DOUBLE_EQ(report.makespan_s, 16.0);
  EXPECT_LT(report.critical_path_s, report.makespan_s);  // the critical path ignores queueing
  const auto& transfers = report.timeline->transfers;
  ASSERT_EQ(transfers.size(), 4u);
  EXPECT_DOUBLE_EQ(transfers[1].issue_s, 2.0);
  EXPECT_DOUBLE_EQ(transfers[1].start_s, 4.0);
}

TEST(Engine, RanksOnDifferentNodesShareTheNodeLinks) {
  const Schedule schedule = generate_schedule("Interleaved1F1B", {4, 8, 2, 0});
  RankCosts costs;
  Topology per_pair;
  const SimulationReport apart = simulate(schedule, expand_rank_costs(costs, schedule), per_pair);
  EXPECT_EQ(apart.links, 8);  // 0<->1, 1<->2, 2<->3, 3<->0
  Topology nodes;
  nodes.ranks_per_node = 2;  // {0,1} and {2,3}: 1->2 and 0->3 share one link, 3->0 and 2->1 the other
  const SimulationReport shared = simulate(schedule, expand_rank_costs(costs, schedule), nodes);
  EXPECT_EQ(shared.links, 6);
}

TEST(Engine, StallsAreReportedNotHung) {
  // A lowered schedule missing the SEND its peer waits for (unvalidated).
  Schedule lowered = lower_communication(generate_schedule("GPipe", {2, 1, 1, 0}), RecvPlacement::kBeforeUse);
  auto& rank0 = lowered.actions[0];
  rank0.erase(std::find(rank0.begin(), rank0.end(), Action{0, 0, OpKind::kSendForward}));
  RankCosts costs;
  EXPECT_THROW(run_engine(lowered, expand_rank_costs(costs, lowered), Topology{}, {}, {}), ScheduleError);
}

}  // namespace
}  // namespace pipeplan::sim
