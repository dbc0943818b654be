// Peak in-flight micro-batches and activation memory per rank.
// Sources: 1F1B holds min(p - r, m) micro-batches on rank r and GPipe m
// (reference.md; Narayanan et al. 2021); ZB-H1 worker i (1-based) peaks at
// (p-i+1)M_B + (i-1)M_W and ZB-H2 at (2p-2i+1)M_B + (2i-2)M_W (Qi et al.
// 2024, Sec. 2); interleaved rank 0 holds (1 + (p-1)/(pv)) times 1F1B's
// activations (Narayanan et al. 2021, Sec. 2.2.2); ZB-V holds p M_B on every
// rank, 1F1B's first-stage peak (Qi et al. 2024, Sec. 6); DualPipe(V)
// holds PP + 1 chunk activations per device (deepseek-ai/DualPipe README).
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

using testing::simulate_uniform;
using testing::UniformCosts;

constexpr std::int64_t kMB = 1000;  // M_B per micro-batch per rank
constexpr std::int64_t kMW = 300;   // M_W

TEST(Memory, OneFOneBHoldsMinOfPMinusRankAndM) {
  for (int p : {1, 2, 4, 8}) {
    for (int m : {1, 2, 3, 8, 16}) {
      const SimulationReport report = simulate_uniform("1F1B", p, m, 0, {1, 2, 0, 0, kMB});
      for (const RankReport& rank : report.ranks_detail) {
        const int expected = std::min(p - rank.rank, m);
        EXPECT_EQ(rank.peak_inflight_microbatches, expected) << "p=" << p << " m=" << m << " r=" << rank.rank;
        EXPECT_EQ(rank.peak_activation_bytes, expected * kMB);
      }
    }
  }
}

TEST(Memory, GpipeHoldsEveryMicrobatch) {
  const SimulationReport report = simulate_uniform("GPipe", 4, 12, 0, {1, 2, 0, 0, kMB, 0, 5000});
  for (const RankReport& rank : report.ranks_detail) {
    EXPECT_EQ(rank.peak_inflight_microbatches, 12);
    EXPECT_EQ(rank.peak_memory_bytes, 5000 + 12 * kMB);
  }
}

TEST(Memory, ZeroBubbleH1AndH2MatchPaperFormulas) {
  const int p = 6;
  const int m = 24;
  const UniformCosts costs{1, 1, 1, 0, kMB, kMW};
  const SimulationReport h1 = simulate_uniform("ZBH1", p, m, 0, costs);
  const SimulationReport h2 = simulate_uniform("ZBH2", p, m, 0, costs);
  for (int i = 1; i <= p; ++i) {
    const RankReport& r1 = h1.ranks_detail[static_cast<std::size_t>(i - 1)];
    const RankReport& r2 = h2.ranks_detail[static_cast<std::size_t>(i - 1)];
    EXPECT_EQ(r1.peak_activation_bytes, (p - i + 1) * kMB + (i - 1) * kMW) << "ZB-H1 worker " << i;
    EXPECT_EQ(r2.peak_activation_bytes, (2 * p - 2 * i + 1) * kMB + (2 * i - 2) * kMW) << "ZB-H2 worker " << i;
  }
  EXPECT_EQ(h2.ranks_detail.front().peak_inflight_microbatches, 2 * p - 1);
}

TEST(Memory, InterleavedFirstRankHoldsOnePlusPMinusOneOverPvTimes1F1B) {
  for (int p : {2, 4, 8}) {
    for (int v : {2, 3, 4}) {
      const int m = 4 * p;
      const SimulationReport report = simulate_uniform("Interleaved1F1B", p, m, v, {1, 2, 0, 0, kMB});
      const double expected = p * (1.0 + (p - 1.0) / (p * v));
      EXPECT_NEAR(report.ranks_detail.front().peak_inflight_microbatches, expected, 1e-12) << p << " " << v;
    }
  }
}

TEST(Memory, ZbvHoldsPMicrobatchesOnEveryRank) {
  for (int p : {2, 3, 4, 8}) {
    const SimulationReport report = simulate_uniform("ZBV", p, 4 * p, 2, {2, 2, 2, 0, kMB});
    for (const RankReport& rank : report.ranks_detail) {
      EXPECT_EQ(rank.peak_inflight_microbatches, p) << "p=" << p << " rank " << rank.rank;
      EXPECT_EQ(rank.peak_activation_bytes, p * kMB);
    }
  }
}

TEST(Memory, DualPipeVHoldsPpPlusOneChunks) {
  for (int p : {2, 3, 4, 8}) {
    // DualPipeV on p devices serves a PP = 2p stage pipeline.
    const SimulationReport report = simulate_uniform("DualPipeV", p, 4 * p, 2, {2, 2, 2, 0, kMB});
    EXPECT_EQ(report.ranks_detail.front().peak_inflight_chunks, 2 * p + 1) << "p=" << p;
    for (const RankReport& rank : report.ranks_detail) EXPECT_LE(rank.peak_inflight_chunks, 2 * p + 1);
  }
}

}  // namespace
}  // namespace pipeplan::sim
