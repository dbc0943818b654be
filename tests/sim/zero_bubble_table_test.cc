// Zero Bubble (Qi et al., ICLR 2024, "Zero Bubble Pipeline Parallelism"),
// Tables 9 and 5: measured T_F, T_B, T_W, T_comm (ms) and the bubble rates
// of 1F1B, ZB-H1 and ZB-H2, to 4 decimals. Their bubble rate is
// (cost - m(T_F+T_B+T_W)) / cost with cost the largest per-stage span.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/sim_test_support.h"

namespace pipeplan::sim {
namespace {

struct TableRow {
  const char* model;
  int p, m;
  double tf, tb, tw, tcomm;
  double rate_1f1b, rate_zbh1, rate_zbh2;
};

constexpr TableRow kRows[] = {
    {"1.5B", 8, 24, 18.522, 18.086, 9.337, 0.601, 0.2431, 0.1585, 0.1083},
    {"14.6B", 16, 64, 11.307, 11.254, 8.101, 0.379, 0.2082, 0.1088, 0.0516},
};

double rounded(double x) { return std::round(x * 1e4) / 1e4; }

TEST(ZeroBubbleTable, ReproducesPublishedBubbleRates) {
  for (const TableRow& row : kRows) {
    const testing::UniformCosts costs{row.tf, row.tb, row.tw, row.tcomm};
    const double ideal = row.m * (row.tf + row.tb + row.tw);
    for (auto [name, expected] : {std::pair{"1F1B", row.rate_1f1b}, std::pair{"ZBH1", row.rate_zbh1},
                                  std::pair{"ZBH2", row.rate_zbh2}}) {
      const SimulationReport report = testing::simulate_uniform(name, row.p, row.m, 0, costs);
      EXPECT_DOUBLE_EQ(rounded(report.bubble_rate), expected) << row.model << " " << name;
      // Their definition, from the cost directly.
      EXPECT_NEAR(report.bubble_rate, (report.cost_s - ideal) / report.cost_s, 1e-12);
    }
  }
}

TEST(ZeroBubbleTable, HandcraftedBubblesMatchTheirFormulas) {
  // Sec. 2: with no communication, 1F1B (p-1)(T_F+T_B+T_W), ZB-H1
  // (p-1)(T_F+T_B-T_W), ZB-H2 (p-1)(T_F+T_B-2T_W) (when T_F+T_B >= 2T_W).
  const int p = 6;
  const int m = 24;
  const double tf = 3, tb = 2.5, tw = 1.5;
  const testing::UniformCosts costs{tf, tb, tw, 0};
  const double ideal = m * (tf + tb + tw);
  EXPECT_NEAR(testing::simulate_uniform("1F1B", p, m, 0, costs).cost_s - ideal, (p - 1) * (tf + tb + tw), 1e-9);
  EXPECT_NEAR(testing::simulate_uniform("ZBH1", p, m, 0, costs).cost_s - ideal, (p - 1) * (tf + tb - tw), 1e-9);
  EXPECT_NEAR(testing::simulate_uniform("ZBH2", p, m, 0, costs).cost_s - ideal, (p - 1) * (tf + tb - 2 * tw), 1e-9);
}

}  // namespace
}  // namespace pipeplan::sim
