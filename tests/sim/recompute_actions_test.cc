// Recomputation run as passes of its own ahead of the backwards (Mario's
// placement, sim/recompute_actions.h). Hand-worked case: 1F1B with F 1 ms
// and B 2 ms of which R = 1 ms is the recomputed forward. The last stage
// starts at (p-1)F and then computes without a gap; the gradients come back
// through p-1 stages, each of which has recomputed while waiting, so each
// adds B - R instead of B:
//   (p-1)F + m(F+B) + (p-1)(B-R) = (m+p-1)(F+B) - (p-1)R.
// Memory: rank 0 holds p checkpoints (A each) when its first RECOMPUTE
// brings back X: its peak is pA + X, against pA with the recomputation
// inside the backward (one layer's working memory, static).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "common/error.h"
#include "sim/generators/registry.h"
#include "sim/lowering.h"
#include "sim/recompute_actions.h"
#include "sim/simulate.h"

namespace pipeplan::sim {
namespace {

constexpr std::int64_t kMiB = 1 << 20;

PipelineCosts costs_for(const Schedule& schedule, double recompute_s, double weight_s = 0) {
  RankCosts costs;
  costs.forward_s = {1e-3};
  costs.backward_input_s = {2e-3};
  costs.backward_weight_s = {weight_s};
  costs.activation_bytes = {kMiB};
  costs.recompute_s = {recompute_s};
  costs.recompute_bytes = {4 * kMiB};
  return expand_rank_costs(costs, schedule);
}

SimulationReport run(const Schedule& schedule, bool apart, double weight_s = 0) {
  SimulationOptions options;
  options.recompute_in_bubbles = apart;
  return simulate(schedule, costs_for(schedule, 1e-3, weight_s), Topology{}, options);
}

double busy_sum(const SimulationReport& report) {
  return std::accumulate(report.ranks_detail.begin(), report.ranks_detail.end(), 0.0,
                         [](double sum, const RankReport& rank) { return sum + rank.busy_s; });
}

TEST(RecomputeActions, EachGoesRightBeforeItsBackward) {
  const Schedule schedule = generate_schedule("1F1B", {4, 8, 0, 0});
  const RecomputeActions apart = add_recompute_actions(schedule, costs_for(schedule, 1e-3));
  EXPECT_EQ(apart.actions, 32u);
  for (const std::vector<Action>& actions : apart.schedule.actions) {
    ASSERT_EQ(actions.size(), 24u);
    for (std::size_t i = 0; i < actions.size(); ++i) {
      if (actions[i].kind != OpKind::kRecompute) continue;
      ASSERT_LT(i + 1, actions.size());
      EXPECT_EQ(actions[i + 1].kind, OpKind::kBackward);
      EXPECT_EQ(actions[i + 1].microbatch, actions[i].microbatch);
    }
  }
  // The backward no longer pays the recomputation; RECOMPUTE does.
  EXPECT_DOUBLE_EQ(apart.costs.stages[0].backward_input_s, 1e-3);
  EXPECT_DOUBLE_EQ(action_duration_s(apart.costs.stages[0], OpKind::kRecompute), 1e-3);
  EXPECT_TRUE(apart.costs.stages[0].recompute_apart);
}

TEST(RecomputeActions, GoesAheadOfTheBlockingReceive) {
  const Schedule lowered = lower_communication(generate_schedule("1F1B", {2, 2, 0, 0}), RecvPlacement::kBeforeUse);
  const RecomputeActions apart = add_recompute_actions(lowered, costs_for(lowered, 1e-3));
  const std::vector<Action>& rank0 = apart.schedule.actions[0];
  const auto at = [&](const Action& action) { return std::find(rank0.begin(), rank0.end(), action) - rank0.begin(); };
  EXPECT_EQ(at({0, 0, OpKind::kRecompute, false}) + 1, at({0, 0, OpKind::kRecvBackward, false}));
}

TEST(RecomputeActions, ShortensTheCooldownByTheRecomputationPerStage) {
  for (const auto& [p, m] : {std::pair{2, 2}, {4, 8}, {8, 32}}) {
    const Schedule schedule = generate_schedule("1F1B", {p, m, 0, 0});
    const SimulationReport inside = run(schedule, false);
    const SimulationReport apart = run(schedule, true);
    EXPECT_NEAR(inside.cost_s, (m + p - 1) * 3e-3, 1e-12) << p;
    EXPECT_NEAR(apart.cost_s, (m + p - 1) * 3e-3 - (p - 1) * 1e-3, 1e-12) << p;
    EXPECT_NEAR(busy_sum(apart), busy_sum(inside), 1e-12) << p;
    EXPECT_EQ(apart.recompute_actions, static_cast<std::size_t>(p * m));
    // Rank 0: p checkpoints, and what its RECOMPUTE brought back.
    EXPECT_EQ(inside.ranks_detail[0].peak_activation_bytes, p * kMiB) << p;
    EXPECT_EQ(apart.ranks_detail[0].peak_activation_bytes, p * kMiB + 4 * kMiB) << p;
  }
}

// A RECOMPUTE needs nothing from another rank: each backward ends no later
// than with the recomputation inside it, on every generated family, with
// the same work done.
TEST(RecomputeActions, NeverSlowerOnAnyFamily) {
  for (const ScheduleFamily& family : schedule_families()) {
    if (is_searched(family) || runs_whole_batch(family)) continue;
    const int p = 4;
    const Schedule schedule = generate_schedule(family.name, {p, 2 * p, 0, 0});
    const SimulationReport inside = run(schedule, false, 0.5e-3);
    const SimulationReport apart = run(schedule, true, 0.5e-3);
    EXPECT_LE(apart.cost_s, inside.cost_s + 1e-12) << family.name;
    EXPECT_NEAR(busy_sum(apart), busy_sum(inside), 1e-12) << family.name;
    EXPECT_GT(apart.recompute_actions, 0u) << family.name;
  }
}

TEST(RecomputeActions, KeepsAnOverlappedPairWhole) {
  const Schedule schedule = generate_schedule("DualPipeV", {4, 16, 0, 0});
  const RecomputeActions apart = add_recompute_actions(schedule, costs_for(schedule, 1e-3));
  for (const std::vector<Action>& actions : apart.schedule.actions) {
    for (std::size_t i = 0; i + 1 < actions.size(); ++i) {
      if (actions[i].overlapped) {
        EXPECT_NE(actions[i + 1].kind, OpKind::kRecompute);
      }
      if (actions[i].kind != OpKind::kRecompute) continue;
      // Its backward next, or after the forward it is paired with.
      const std::size_t backward = actions[i + 1].overlapped ? i + 2 : i + 1;
      ASSERT_LT(backward, actions.size());
      EXPECT_TRUE(produces_input_grad(actions[backward].kind));
      EXPECT_EQ(actions[backward].microbatch, actions[i].microbatch);
      EXPECT_EQ(actions[backward].stage, actions[i].stage);
    }
  }
}

TEST(RecomputeActions, RefusesNothingToRecomputeAndOffload) {
  const Schedule schedule = generate_schedule("1F1B", {2, 4, 0, 0});
  EXPECT_THROW(add_recompute_actions(schedule, costs_for(schedule, 0.0)), InputError);
  SimulationOptions options;
  options.recompute_in_bubbles = true;
  options.offload_activations = true;
  Topology topology;
  topology.host = {0.0, 50e9};
  EXPECT_THROW(simulate(schedule, costs_for(schedule, 1e-3), topology, options), InputError);
  RankCosts longer;
  longer.forward_s = {1e-3};
  longer.backward_input_s = {1e-3};
  longer.recompute_s = {2e-3};
  EXPECT_THROW(expand_rank_costs(longer, schedule), InputError);
}

}  // namespace
}  // namespace pipeplan::sim
