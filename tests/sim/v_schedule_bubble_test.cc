// Bubbles of the V-shaped schedules on equal times. Sources: Zero Bubble
// (Qi et al., ICLR 2024, Sec. 6; the authors' comparison table "assuming
// T_F = T_B = T_W": ZBV bubble rate 0); DualPipe README (deepseek-ai):
// DualPipeV bubble (PP/2 - 1)(F&B + B - 3W) on PP/2 devices, with F, B, W
// per chunk, B the full backward and F&B an overlapped pair (here F + B).
#include <gtest/gtest.h>

#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

TEST(VSchedules, ZbvHasNoBubbleOnEqualTimes) {
  for (int p : {1, 2, 3, 4, 8, 16}) {
    for (int m : {2 * p, 3 * p, 4 * p}) {
      // Per rank 2 chunks: chunk F = I = W = 1.
      const SimulationReport report = testing::simulate_uniform("ZBV", p, m, 2, {2, 2, 2});
      EXPECT_NEAR(report.bubble_rate, 0.0, 1e-12) << "p=" << p << " m=" << m;
      EXPECT_NEAR(report.cost_s, 6.0 * m, 1e-9);
    }
  }
}

TEST(VSchedules, DualPipeVBubbleMatchesDualPipeFormula) {
  for (int p : {2, 3, 4, 6, 8}) {
    for (int m : {2 * p, 2 * p + 3, 4 * p}) {
      const double f = 1, w = 1, full_b = 2;  // chunk times: F = I = W = 1
      const SimulationReport report = testing::simulate_uniform("DualPipeV", p, m, 2, {2 * f, 2 * (full_b - w), 2 * w});
      const double expected = (p - 1) * ((f + full_b) + full_b - 3 * w);
      EXPECT_NEAR(report.cost_s - report.ideal_s, expected, 1e-9) << "p=" << p << " m=" << m;
    }
  }
}

}  // namespace
}  // namespace pipeplan::sim
