// Bubble figures against their closed forms, equal stage times, no
// communication. Sources: Narayanan et al. 2021 ("Efficient Large-Scale
// Language Model Training on GPU Clusters Using Megatron-LM"): GPipe/1F1B
// bubble (p-1)/m of ideal, interleaved (1/v)(p-1)/m; as a share of the
// total (p-1)/(m+p-1); naive model parallelism idles (p-1)/p.
#include <gtest/gtest.h>

#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

using testing::simulate_uniform;
using testing::UniformCosts;

TEST(ClosedForm, NaiveIdlesThreeQuartersAtFourStages) {
  const SimulationReport report = simulate_uniform("naive", 4, 8, 0, {1.0, 2.0});
  EXPECT_NEAR(report.bubble_rate, 0.75, 1e-12);
  EXPECT_EQ(report.microbatches, 8);
  // The whole batch passes each stage once: 4 stages x 8 micro-batches x 3.
  EXPECT_NEAR(report.cost_s, 4 * 8 * 3.0, 1e-9);
}

TEST(ClosedForm, PublishedExampleFourStagesThirtyTwoMicrobatches) {
  // reference: p = 4, m = 32: 3/35 = 8.57% of total, 3/32 = 9.375% of ideal.
  for (const char* name : {"GPipe", "1F1B"}) {
    const SimulationReport report = simulate_uniform(name, 4, 32, 0, {1.0, 2.0});
    EXPECT_NEAR(report.bubble_rate, 3.0 / 35.0, 1e-12) << name;
    EXPECT_NEAR(report.bubble_over_ideal, 0.09375, 1e-12) << name;
  }
}

class GpipeAnd1f1bGrid : public ::testing::TestWithParam<std::tuple<const char*, int, int>> {};

TEST_P(GpipeAnd1f1bGrid, MatchesClosedForm) {
  const auto [name, p, m] = GetParam();
  const SimulationReport report = simulate_uniform(name, p, m, 0, {1.5, 2.5});
  EXPECT_NEAR(report.bubble_rate, (p - 1.0) / (m + p - 1.0), 1e-12);
  EXPECT_NEAR(report.bubble_over_ideal, (p - 1.0) / m, 1e-12);
  EXPECT_NEAR(report.cost_s, (m + p - 1) * 4.0, 1e-9);
  EXPECT_NEAR(report.critical_path_s, report.makespan_s, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Grid, GpipeAnd1f1bGrid,
                         ::testing::Combine(::testing::Values("GPipe", "1F1B"), ::testing::Values(1, 2, 3, 4, 8, 16),
                                            ::testing::Values(1, 2, 4, 7, 16, 32, 64)));

class InterleavedGrid : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(InterleavedGrid, BubbleOverIdealIsOneOverVOfOneF1B) {
  const auto [p, v, rounds] = GetParam();
  const int m = p * rounds;  // Megatron's form needs m % p == 0
  const SimulationReport report = simulate_uniform("Interleaved1F1B", p, m, v, {1.0, 2.0});
  EXPECT_NEAR(report.bubble_over_ideal, (p - 1.0) / (v * m), 1e-12) << "p=" << p << " v=" << v << " m=" << m;
}

INSTANTIATE_TEST_SUITE_P(Grid, InterleavedGrid,
                         ::testing::Combine(::testing::Values(2, 3, 4, 8), ::testing::Values(2, 3, 4),
                                            ::testing::Values(1, 2, 4)));

}  // namespace
}  // namespace pipeplan::sim
