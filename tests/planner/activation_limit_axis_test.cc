// The memory limit as a plan axis (ScheduleChoice::activation_limit): a
// searched order's candidates within Zero Bubble's 2p and p x M_B beside
// the cap's own. A limited point of the Pareto front written to a plan file
// reads back with its limit, and its replay gives the search's figures.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "planner/plan_file.h"
#include "planner/report/plan_replay.h"
#include "tests/support/plan_request_support.h"
#include "tests/support/temp_files.h"

namespace pipeplan::planner {
namespace {

TEST(ActivationLimitAxis, ALimitedPointReplaysToItsFigures) {
  PlanRequest request = testing::plan_request("llama3-8b", "h100-sxm", 8, 64, 8192);
  request.pp = 4;
  request.schedule = "ZBAuto";
  const PlanSearchResult result = search_plans(request, 5);
  ASSERT_FALSE(result.ranked.empty());
  const PlanCandidate* limited = nullptr;
  for (const PlanCandidate& point : result.pareto) {
    if (point.activation_limit && (limited == nullptr || point.max_peak_bytes < limited->max_peak_bytes)) {
      limited = &point;
    }
  }
  ASSERT_NE(limited, nullptr) << "no limited point on the Pareto front";
  // Lighter than the fastest plan, which keeps only to the cap.
  EXPECT_LT(limited->max_peak_bytes, result.ranked.front().max_peak_bytes);
  EXPECT_FALSE(result.ranked.front().activation_limit.has_value());

  const std::filesystem::path path = pipeplan::testing::temp_path("limit_axis_plan.yaml");
  std::ofstream(path) << write_plan_yaml({"llama3-8b", "h100-sxm", 64, 8192, *limited, "", ""});
  const PlanFile read = read_plan_yaml(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(read.plan.activation_limit.has_value());
  EXPECT_EQ(read.plan.activation_limit->spelled(), limited->activation_limit->spelled());
  const step::ModelSimulation replayed = replay_plan(read, request.model, request.hardware);
  EXPECT_NEAR(replayed.iteration_time_s, limited->iteration_time_s, 1e-9 * limited->iteration_time_s);
  EXPECT_EQ(replayed.peak_memory_bytes(), limited->max_peak_bytes);
}

TEST(ActivationLimitAxis, LimitsReadBackAsWritten) {
  for (const char* text : {"2p", "1p", "1.5p", "16", "12GiB"}) {
    const sim::ActivationLimit limit = sim::parse_activation_limit(text, "test");
    const sim::ActivationLimit again = sim::parse_activation_limit(limit.spelled(), "test");
    EXPECT_EQ(again.unit, limit.unit) << text;
    EXPECT_EQ(again.value, limit.value) << text;
  }
}

}  // namespace
}  // namespace pipeplan::planner
