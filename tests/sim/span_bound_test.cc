// The schedule's span bounds: for given stage costs (lower_bound_s) and for
// any split of the same work (any_split_bound_s: the average rank's work
// and the first rank's chain), checked by hand and
// against each other on random costs.
#include "sim/span_bound.h"

#include <gtest/gtest.h>

#include <random>

#include "sim/generators/registry.h"
#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

PipelineCosts uniform_costs(int stages, double forward, double input, double weight) {
  PipelineCosts costs;
  for (int stage = 0; stage < stages; ++stage) costs.stages.push_back({forward, input, weight, 0, 0, 0, 0});
  return costs;
}

// The bound for any split of these stages' work.
double any_split_bound_s(const SpanBound& bound, const PipelineCosts& costs) {
  double forward = 0, input = 0, weight = 0;
  for (const StageCost& cost : costs.stages) {
    forward += cost.forward_s;
    input += cost.backward_input_s;
    weight += cost.backward_weight_s;
  }
  return bound.any_split_bound_s(forward, input, weight);
}

TEST(SpanBound, AnySplitBoundIsEachRanksShareOfEveryPass) {
  // 1F1B on 4 ranks, 8 micro-batches, F = 1 and B = 2 on every stage: every
  // rank runs 8 x (1 + 2) = 24, and so does the average rank.
  const Schedule one_f_one_b = generate_schedule("1F1B", {4, 8, 1, 0});
  const SpanBound bound(one_f_one_b);
  EXPECT_DOUBLE_EQ(any_split_bound_s(bound, uniform_costs(4, 1.0, 1.5, 0.5)), 24.0);
  // The same work split unevenly: the stage sums are the same, the bound too,
  // and the busiest rank's compute is above it.
  PipelineCosts uneven = uniform_costs(4, 1.0, 1.5, 0.5);
  uneven.stages[0].forward_s = 0.5;
  uneven.stages[3].forward_s = 1.5;
  EXPECT_DOUBLE_EQ(any_split_bound_s(bound, uneven), 24.0);
  EXPECT_DOUBLE_EQ(bound.lower_bound_s(uneven), 8 * (1.5 + 2.0));
  // Interleaved, 2 chunks per rank: 8 stages' work over 4 ranks.
  const Schedule interleaved = generate_schedule("Interleaved1F1B", {4, 8, 2, 0});
  EXPECT_DOUBLE_EQ(any_split_bound_s(SpanBound(interleaved), uniform_costs(8, 1.0, 1.0, 1.0)),
                   8 * 2 * 3.0);
}

TEST(SpanBound, AnySplitBoundHoldsTheFirstRanksChain) {
  // One micro-batch through 1F1B on 4 ranks, F = 1 and B = 1.5 + 0.5 on
  // every stage: the average rank computes (4 + 6 + 2) / 4 = 3, but stage
  // 0's rank waits for the forward and backward through all four stages:
  // 4 x (1 + 2) = 12, whatever the split.
  const SpanBound bound(generate_schedule("1F1B", {4, 1, 1, 0}));
  const PipelineCosts costs = uniform_costs(4, 1.0, 1.5, 0.5);
  EXPECT_DOUBLE_EQ(any_split_bound_s(bound, costs), 12.0);
  EXPECT_DOUBLE_EQ(bound.lower_bound_s(costs), 12.0);
  // With W split off (ZB-H1), the chain runs F and I: 4 x (1 + 1.5) = 10.
  EXPECT_DOUBLE_EQ(any_split_bound_s(SpanBound(generate_schedule("ZBH1", {4, 1, 1, 0})), costs), 10.0);
}

TEST(SpanBound, AnySplitBoundNeverExceedsTheSplitsOwnBound) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> duration(0.1, 2.0);
  for (const ScheduleFamily& family : schedule_families()) {
    const int virtual_stages = family.default_virtual_stages;
    const int ranks = family.name == "naive" ? 1 : 4;
    const Schedule schedule = testing::family_schedule(family.name, {ranks, 8, virtual_stages, 0});
    const SpanBound bound(schedule);
    for (int draw = 0; draw < 20; ++draw) {
      PipelineCosts costs;
      for (int stage = 0; stage < schedule.stages; ++stage) {
        costs.stages.push_back({duration(random), duration(random), duration(random), 0, 0, 0, 0});
      }
      const double any_split = any_split_bound_s(bound, costs);
      EXPECT_GT(any_split, 0) << family.name;
      EXPECT_LE(any_split, bound.lower_bound_s(costs) * (1 + 1e-12)) << family.name;
    }
  }
}

}  // namespace
}  // namespace pipeplan::sim
