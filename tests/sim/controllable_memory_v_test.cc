// V-Min and V-Half (Qi et al. 2024, "Pipeline Parallelism with Controllable
// Memory", arXiv 2405.15362): every rank's peak activations within the
// published bounds, (p + 4) / 3 and (p + 2) / 2 micro-batches (integer
// division; 1F1B holds p), and, with F = I = W and no messages, the bubble
// and peak the authors' own builder gives (sail-sg/zero-bubble-pipeline-
// parallelism, megatron/core/pipeline_parallel/zerobubble/scheduler/
// zbv_greedy.py, run for these shapes).
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/generators/registry.h"
#include "sim/validation.h"
#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

constexpr std::int64_t kMicrobatch = 1 << 20;  // M_B; M_W the same (a W frees it all), as the paper counts

double peak_microbatches(const SimulationReport& report) {
  std::int64_t peak = 0;
  for (const RankReport& rank : report.ranks_detail) peak = std::max(peak, rank.peak_activation_bytes);
  return static_cast<double>(peak) / kMicrobatch;
}

SimulationReport unit_run(const char* name, int p, int m) {
  return testing::simulate_uniform(name, p, m, 2, {1, 1, 1, 0, kMicrobatch, kMicrobatch});
}

TEST(ControllableMemoryV, PeaksStayWithinThePublishedBounds) {
  for (int p = 1; p <= 24; ++p) {
    for (const int m : {p, 2 * p, 3 * p, 3 * p + 1}) {
      const SimulationReport v_min = unit_run("VMin", p, m);
      const SimulationReport v_half = unit_run("VHalf", p, m);
      EXPECT_LE(peak_microbatches(v_min), (p + 4) / 3) << "p " << p << " m " << m;
      EXPECT_LE(peak_microbatches(v_half), (p + 2) / 2) << "p " << p << " m " << m;
    }
  }
}

TEST(ControllableMemoryV, MatchesTheAuthorsBuilder) {
  struct Row {
    int p, m;
    double v_min_bubble, v_min_peak, v_half_bubble, v_half_peak;
  };
  const Row rows[] = {
      {2, 4, 0.1111, 2, 0.0400, 2},  {3, 6, 0.1220, 2, 0.1220, 2},  {4, 8, 0.1864, 2, 0.0943, 3},
      {4, 5, 0.2683, 2, 0.2105, 3},  {5, 10, 0.2000, 3, 0.1549, 3}, {6, 12, 0.1910, 3, 0.1325, 4},
      {8, 24, 0.1579, 4, 0.1056, 5}, {8, 9, 0.3333, 4, 0.2394, 5},  {12, 36, 0.1595, 5, 0.1184, 7},
      {16, 48, 0.1700, 6, 0.1246, 9},
  };
  for (const Row& row : rows) {
    const SimulationReport v_min = unit_run("VMin", row.p, row.m);
    const SimulationReport v_half = unit_run("VHalf", row.p, row.m);
    EXPECT_NEAR(v_min.bubble_rate, row.v_min_bubble, 5e-5) << row.p << " " << row.m;
    EXPECT_NEAR(v_half.bubble_rate, row.v_half_bubble, 5e-5) << row.p << " " << row.m;
    EXPECT_DOUBLE_EQ(peak_microbatches(v_min), row.v_min_peak) << row.p << " " << row.m;
    EXPECT_DOUBLE_EQ(peak_microbatches(v_half), row.v_half_peak) << row.p << " " << row.m;
  }
}

TEST(ControllableMemoryV, RunTwoChunksPerRankInAV) {
  EXPECT_THROW(generate_schedule("VMin", {4, 8, 3, 0}), InputError);
  const Schedule schedule = generate_schedule("V-Half", {4, 8, 0, 0});
  EXPECT_EQ(schedule.virtual_stages(), 2);
  EXPECT_EQ(schedule.rank_of(0), 0);
  EXPECT_EQ(schedule.rank_of(7), 0);
  EXPECT_NO_THROW(validate_schedule(schedule));
}

}  // namespace
}  // namespace pipeplan::sim
