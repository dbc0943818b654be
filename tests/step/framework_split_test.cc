// The split DeepSpeed's PipelineModule makes itself, checked against the
// dynamic program it runs: deepspeed/runtime/utils.py partition_balanced
// (v0.16) over the binary weights of partition_method='type:transformer'
// (pipe/module.py _partition_layers), on the layer list of
// Megatron-DeepSpeed's GPTModelPipe: casts and the embedding before the
// blocks, the final norm, the tied output layer and a cast after them.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "step/framework_support.h"
#include "step/stage_split.h"

namespace pipeplan::step {
namespace {

// The program as DeepSpeed writes it: parts j of the first i items keep the
// heaviest and lightest part closest; ties take the latest cut (>=); the
// cuts read back from the end.
std::vector<int> balanced_cuts(const std::vector<int>& weights, int parts) {
  const int n = static_cast<int>(weights.size());
  const double inf = std::numeric_limits<double>::infinity();
  using Table = std::vector<std::vector<double>>;
  Table heaviest(n + 1, std::vector<double>(parts + 1, inf)), lightest = heaviest, cost = heaviest;
  std::vector<std::vector<int>> cut(n + 1, std::vector<int>(parts + 1, 0));
  std::vector<double> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + weights[i];
  heaviest[0][0] = 0;
  cost[0][0] = 0;
  for (int i = 1; i <= n; ++i) {
    for (int j = 1; j <= std::min(i, parts); ++j) {
      for (int k = 0; k < i; ++k) {
        const double part = prefix[i] - prefix[k];
        const double high = std::max(heaviest[k][j - 1], part), low = std::min(lightest[k][j - 1], part);
        const double spread = high - low;
        if (cost[i][j] >= spread) {
          cost[i][j] = spread;
          heaviest[i][j] = high;
          lightest[i][j] = low;
          cut[i][j] = k;
        }
      }
    }
  }
  std::vector<int> cuts{n};
  for (int j = parts; j >= 1; --j) cuts.push_back(cut[cuts.back()][j]);
  return {cuts.rbegin(), cuts.rend()};
}

// Blocks per stage DeepSpeed's program gives: `before` and `after` layers of
// weight 0 around the blocks.
std::vector<int> deepspeed_blocks(int blocks, int stages, int before, int after) {
  std::vector<int> weights(static_cast<std::size_t>(before), 0);
  weights.insert(weights.end(), static_cast<std::size_t>(blocks), 1);
  weights.insert(weights.end(), static_cast<std::size_t>(after), 0);
  const std::vector<int> cuts = balanced_cuts(weights, stages);
  std::vector<int> counts;
  for (int s = 0; s < stages; ++s) {
    int count = 0;
    for (int i = cuts[s]; i < cuts[s + 1]; ++i) count += weights[i];
    counts.push_back(count);
  }
  return counts;
}

TEST(FrameworkSplit, DeepSpeedsOwnSplitIsItsBalancedProgramsOnEveryLayerList) {
  for (int blocks = 2; blocks <= 40; ++blocks) {
    for (int stages = 2; stages <= std::min(blocks, 12); ++stages) {
      const std::optional<StageSplit> split = framework_split(Framework::kDeepSpeed, blocks, stages);
      ASSERT_TRUE(split.has_value());
      // bf16 GPTModelPipe: a cast and the embedding before; norm, tied
      // output and a cast after. Without the casts: one and two.
      EXPECT_EQ(split->transformer_layer_counts(), deepspeed_blocks(blocks, stages, 2, 3)) << blocks << " / " << stages;
      EXPECT_EQ(split->transformer_layer_counts(), deepspeed_blocks(blocks, stages, 1, 2)) << blocks << " / " << stages;
      EXPECT_EQ(split_refusal(Framework::kDeepSpeed, *split), nullptr);
    }
  }
}

TEST(FrameworkSplit, HandWorkedCases) {
  // 5 blocks on 2 stages: spreads 3-2 at cuts 2 or 3 blocks in; the later cut wins.
  EXPECT_EQ(deepspeed_blocks(5, 2, 1, 2), (std::vector<int>{3, 2}));
  EXPECT_EQ(framework_split(Framework::kDeepSpeed, 5, 2)->transformer_layer_counts(), (std::vector<int>{3, 2}));
  EXPECT_EQ(framework_split(Framework::kDeepSpeed, 94, 8)->transformer_layer_counts(),
            (std::vector<int>{12, 12, 12, 12, 12, 12, 11, 11}));
}

TEST(FrameworkSplit, OnlyDeepSpeedSplitsItselfAndRefusesOtherSplits) {
  for (Framework framework : {Framework::kMegatronLm, Framework::kTorchtitan, Framework::kPyTorch, Framework::kAny}) {
    EXPECT_FALSE(framework_split(framework, 32, 4).has_value());
    EXPECT_EQ(split_refusal(framework, split_from_counts({7, 9, 9, 7}, 32)), nullptr);
  }
  EXPECT_FALSE(framework_split(Framework::kDeepSpeed, 32, 1).has_value());
  EXPECT_NE(split_refusal(Framework::kDeepSpeed, split_from_counts({7, 9, 9, 7}, 32)), nullptr);
  EXPECT_EQ(split_refusal(Framework::kDeepSpeed, split_from_counts({8, 8, 8, 8}, 32)), nullptr);
  EXPECT_NE(split_refusal(Framework::kDeepSpeed, split_from_counts({2, 3}, 5)), nullptr);  // DeepSpeed's is 3, 2
}

}  // namespace
}  // namespace pipeplan::step
