// The exact partitioners against brute force: every way to cut n layers
// into S non-empty contiguous stages, on random small instances.
#include "step/partitioner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "common/error.h"
#include "step/min_max_dp.h"

namespace pipeplan::step {
namespace {

struct Instance {
  std::vector<double> time;    // per layer
  std::vector<double> bytes;   // per layer, per in-flight micro-batch
  std::vector<double> fixed;   // per layer, static
  std::vector<double> flight;  // per stage position, non-increasing (as 1F1B's min(p - r, m))
};

double sum(const std::vector<double>& values, int i, int j) {
  double total = 0;
  for (int k = i; k < j; ++k) total += values[static_cast<std::size_t>(k)];
  return total;
}

// Min over all splits of the max stage cost, over those that fit; infinity
// if none. Layers 0 and n - 1 are the embedding and the output layer: with
// more than one stage, neither makes a stage alone.
double brute_force(int n, int stages, const std::function<double(int, int, int)>& cost,
                   const std::function<bool(int, int, int)>& fits) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> cut(static_cast<std::size_t>(stages) + 1, 0);
  cut.back() = n;
  std::function<void(int, double)> place = [&](int stage, double worst) {
    if (stage == stages) {
      best = std::min(best, worst);
      return;
    }
    const int start = cut[static_cast<std::size_t>(stage)];
    const int latest_end = stage + 1 == stages ? n : n - (stages - stage - 1);
    const int earliest_end = stage + 1 == stages ? n : start + 1;
    for (int end = earliest_end; end <= latest_end; ++end) {
      if (!fits(stage, start, end)) continue;
      const bool edge_alone = stages > 1 && ((start == 0 && end == 1) || (start == n - 1 && end == n));
      if (edge_alone) continue;
      cut[static_cast<std::size_t>(stage) + 1] = end;
      place(stage + 1, std::max(worst, cost(stage, start, end)));
    }
  };
  place(0, 0);
  return best;
}

Instance random_instance(std::mt19937& rng, int n, int stages) {
  std::uniform_real_distribution<double> value(0.5, 5.0);
  Instance instance;
  for (int k = 0; k < n; ++k) {
    instance.time.push_back(value(rng));
    instance.bytes.push_back(value(rng));
    instance.fixed.push_back(value(rng));
  }
  for (int s = 0; s < stages; ++s) instance.flight.push_back(stages - s);
  return instance;
}

double max_stage_cost(const StageSplit& split, const std::function<double(int, int)>& cost) {
  double worst = 0;
  for (int s = 0; s < split.stages(); ++s) worst = std::max(worst, cost(split.first_layer(s), split.end_layer(s)));
  return worst;
}

TEST(Partitioner, TimeMatchesBruteForce) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 3 + trial % 10;
    const int stages = 1 + trial % std::min(n - 2, 5);
    const Instance instance = random_instance(rng, n, stages);
    auto time = [&](int i, int j) { return sum(instance.time, i, j); };
    PartitionProblem problem{n, stages, [&](int, int i, int j) { return time(i, j); }, {}};
    const auto split = min_max_partition(problem);
    ASSERT_TRUE(split.has_value());
    const double expected = brute_force(n, stages, problem.cost, [](int, int, int) { return true; });
    EXPECT_DOUBLE_EQ(max_stage_cost(*split, time), expected) << "trial " << trial;
    EXPECT_EQ(split->stages(), stages);
  }
}

TEST(Partitioner, MemoryAwareIsNeverWorseThanBruteForceAndNeverOverTheCap) {
  std::mt19937 rng(11);
  int infeasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 3 + trial % 10;
    const int stages = 1 + trial % std::min(n - 2, 5);
    const Instance instance = random_instance(rng, n, stages);
    auto memory = [&](int stage, int i, int j) {
      return sum(instance.fixed, i, j) + instance.flight[static_cast<std::size_t>(stage)] * sum(instance.bytes, i, j);
    };
    const double cap = std::uniform_real_distribution<double>(5.0, 40.0)(rng);
    auto time = [&](int i, int j) { return sum(instance.time, i, j); };
    const double expected = brute_force(n, stages, [&](int, int i, int j) { return time(i, j); },
                                        [&](int stage, int i, int j) { return memory(stage, i, j) <= cap; });
    const auto split = memory_aware_partition(n, stages, time, memory, cap, 0.0);
    if (!split) {
      EXPECT_EQ(expected, std::numeric_limits<double>::infinity()) << "trial " << trial;
      ++infeasible;
      continue;
    }
    for (int s = 0; s < split->stages(); ++s) {
      EXPECT_LE(memory(s, split->first_layer(s), split->end_layer(s)), cap) << "trial " << trial;
    }
    // Exact: the brute-force optimum under the same cap, never worse.
    EXPECT_NEAR(max_stage_cost(*split, time), expected, 1e-9 * expected) << "trial " << trial;
    // Second pass: among splits as fast, the smallest largest stage memory.
    const double leanest = brute_force(n, stages, memory, [&](int stage, int i, int j) {
      return time(i, j) <= expected * (1 + 1e-12) && memory(stage, i, j) <= cap;
    });
    double worst_memory = 0;
    for (int s = 0; s < split->stages(); ++s) {
      worst_memory = std::max(worst_memory, memory(s, split->first_layer(s), split->end_layer(s)));
    }
    EXPECT_NEAR(worst_memory, leanest, 1e-9 * leanest) << "trial " << trial;
  }
  EXPECT_GT(infeasible, 0);  // the caps reach below what fits
  EXPECT_LT(infeasible, 400);
}

TEST(Partitioner, FeasibilityMatchesBruteForce) {
  // The greedy feasibility check against every split, stage-dependent caps
  // included (memory grows with the micro-batches a position holds).
  std::mt19937 rng(13);
  int feasible = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int n = 3 + trial % 10;
    const int stages = 1 + trial % std::min(n - 2, 5);
    const Instance instance = random_instance(rng, n, stages);
    const double cap = std::uniform_real_distribution<double>(3.0, 40.0)(rng);
    auto fits = [&](int stage, int i, int j) {
      return sum(instance.fixed, i, j) + instance.flight[static_cast<std::size_t>(stage)] * sum(instance.bytes, i, j) <=
             cap;
    };
    const bool expected = brute_force(n, stages, [](int, int, int) { return 0.0; }, fits) == 0.0;
    EXPECT_EQ(any_split_fits(n, stages, fits), expected) << "trial " << trial;
    feasible += expected;
  }
  EXPECT_GT(feasible, 0);
  EXPECT_LT(feasible, 600);
}

TEST(Partitioner, NoStageHoldsOnlyTheEmbeddingOrTheOutputLayer) {
  // 4 blocks over 4 stages, the edges almost free: without the rule the
  // fastest split would give the embedding and the output layer a stage each.
  const std::vector<double> time{0.01, 1, 1, 1, 1, 0.01};
  PartitionProblem problem{6, 4, [&](int, int i, int j) { return sum(time, i, j); }, {}};
  const auto split = min_max_partition(problem);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->transformer_layer_counts(), (std::vector<int>{1, 1, 1, 1}));
  problem.stages = 5;  // more stages than blocks
  EXPECT_FALSE(min_max_partition(problem).has_value());
}

TEST(Partitioner, UniformSplitsAsEvenlyAsCountsAllow) {
  EXPECT_EQ(uniform_split(80, 4).transformer_layer_counts(), (std::vector<int>{20, 20, 20, 20}));
  EXPECT_EQ(uniform_split(126, 8).transformer_layer_counts(), (std::vector<int>{16, 16, 16, 16, 16, 16, 15, 15}));
  EXPECT_EQ(parse_partition_method("memory"), PartitionMethod::kMemory);
  EXPECT_THROW(parse_partition_method("magic"), InputError);
}

}  // namespace
}  // namespace pipeplan::step
