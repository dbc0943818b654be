// The busiest expert-parallel rank's load under random top-k routing (what
// Megatron's force-balanced benchmarks run: top-k of random normal logits),
// against a hand-worked closed form and against brute force: routing tokens
// at random many times and averaging the busiest rank's share.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "models/expert_parallel.h"

namespace pipeplan::models {
namespace {

MoeConfig experts_of(int experts, int top_k) {
  MoeConfig moe;
  moe.experts = experts;
  moe.top_k = top_k;
  moe.expert_ffn = 1;
  return moe;
}

// The mean over `trials` of the busiest of `ep` ranks' routed copies over
// the average, each of `tokens` tokens drawing top_k distinct experts.
double simulated_busiest(int experts, int top_k, int ep, int tokens, int trials) {
  std::mt19937 random(12345);
  std::vector<int> order(static_cast<std::size_t>(experts));
  double sum = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<int> per_rank(static_cast<std::size_t>(ep), 0);
    for (int token = 0; token < tokens; ++token) {
      std::iota(order.begin(), order.end(), 0);
      for (int pick = 0; pick < top_k; ++pick) {  // a partial Fisher-Yates shuffle
        std::uniform_int_distribution<int> rest(pick, experts - 1);
        std::swap(order[static_cast<std::size_t>(pick)], order[static_cast<std::size_t>(rest(random))]);
        ++per_rank[static_cast<std::size_t>(order[static_cast<std::size_t>(pick)] / (experts / ep))];
      }
    }
    const double average = static_cast<double>(tokens) * top_k / ep;
    sum += *std::max_element(per_rank.begin(), per_rank.end()) / average;
  }
  return sum / trials;
}

TEST(RoutingSpread, MatchesTheHandWorkedQwen3Case) {
  // Qwen3-235B-A22B on ep 32 (128 experts, top-8), 65536 tokens a micro-batch
  // over the group: 16384 copies a rank on average, variance 65536 x 8 x
  // (1/32) x (120/127) = 15481 once the fixed sum is taken out, sd 124.4;
  // Blom's score for the largest of 32 is the normal quantile of
  // 31.625 / 32.25, 2.0672: 1 + 2.0672 x 124.4 / 16384 = 1.01570.
  EXPECT_NEAR(busiest_rank_load(experts_of(128, 8), 32, 65536, 1, 0), 1.01570, 2e-5);
  // A capacity factor caps it; one rank has no spread to wait for.
  EXPECT_DOUBLE_EQ(busiest_rank_load(experts_of(128, 8), 32, 65536, 1, 1.01), 1.01);
  EXPECT_DOUBLE_EQ(busiest_rank_load(experts_of(128, 8), 1, 65536, 1, 0), 1);
  // Every token on one rank: nothing left to chance.
  EXPECT_DOUBLE_EQ(busiest_rank_load(experts_of(128, 8), 16, 65536, 16, 0), 16);
}

TEST(RoutingSpread, MatchesBruteForceRouting) {
  // Small instances, where the spread is large: the formula's normal
  // approximation within 5 % of the simulated excess over 1.
  struct Case {
    int experts, top_k, ep, tokens;
  };
  for (const Case c : {Case{16, 4, 4, 256}, Case{64, 8, 8, 1024}, Case{32, 2, 16, 512}}) {
    const double simulated = simulated_busiest(c.experts, c.top_k, c.ep, c.tokens, 3000);
    const double formula = busiest_rank_load(experts_of(c.experts, c.top_k), c.ep, c.tokens, 1, 0);
    EXPECT_GT(simulated, 1.02) << c.ep;
    EXPECT_NEAR(formula - 1, simulated - 1, 0.05 * (simulated - 1)) << c.experts << " " << c.top_k << " " << c.ep;
  }
}

TEST(RoutingSpread, ShrinksAsOneOverTheRootOfTheTokens) {
  const MoeConfig moe = experts_of(256, 8);
  const double small = busiest_rank_load(moe, 64, 4096, 1, 0) - 1;
  const double large = busiest_rank_load(moe, 64, 4 * 4096, 1, 0) - 1;
  EXPECT_NEAR(small / large, 2, 1e-9);
}

}  // namespace
}  // namespace pipeplan::models
