// `mpirun -np 2 pipeplan validate` on the CPU backend (OpenMPI, started by
// the test): for 1F1B, ZBH1 and Interleaved1F1B the pipelined gradients
// match the unpipelined reference and the comparison, the two-timeline
// trace and the summary are written; a stalled rank is named within the
// timeout; plans that cannot run are refused before anything runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/support/cli_support.h"

namespace {

using namespace pipeplan::testing;

const std::string kMpirun = "mpirun --allow-run-as-root --oversubscribe -np ";

bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

std::string tiny_plan(const std::string& schedule, int virtual_stages) {
  const std::string plan = temp_path(schedule + "-plan.yaml");
  const CommandResult result =
      run("plan --model tiny --hardware cpu --gpus 2 --global-batch 4 --seq 32 --pp 2 --tp 1 --micro-batch-size 1 "
          "--schedule " + schedule + " --virtual " + std::to_string(virtual_stages) + " --out " + plan);
  EXPECT_EQ(result.code, 0) << result.err;
  return plan;
}

class ValidateCli : public ::testing::TestWithParam<std::pair<const char*, int>> {
 protected:
  void SetUp() override {
#ifndef PIPEPLAN_HAVE_MPI
    GTEST_SKIP() << "built without MPI";
#endif
    ASSERT_TRUE(have_mpirun()) << "MPI builds are tested under mpirun: install openmpi-bin";
  }
};

TEST_P(ValidateCli, GradientsMatchAndTheComparisonIsWritten) {
  const auto [schedule, virtual_stages] = GetParam();
  const std::string dir = temp_path(std::string(schedule) + "-validation");
  const CommandResult result = run_with(kMpirun + "2 ", "validate --plan " + tiny_plan(schedule, virtual_stages) +
                                                            " --check-gradients --iterations 3 --out " + dir);
  ASSERT_EQ(result.code, 0) << result.err << result.out;
  const nlohmann::json comparison = nlohmann::json::parse(slurp(dir + "/comparison.json"));
  for (const char* key : {"measured_iteration_s", "predicted_iteration_s", "iteration_error_pct",
                          "measured_bubble_rate", "predicted_bubble_rate"}) {
    EXPECT_TRUE(comparison.contains(key)) << key;
  }
  EXPECT_GT(comparison["measured_iteration_s"].get<double>(), 0);
  EXPECT_GT(comparison["predicted_iteration_s"].get<double>(), 0);
  EXPECT_EQ(comparison["schedule"], schedule);
  ASSERT_EQ(comparison["per_rank"].size(), 2u);
  for (const auto& rank : comparison["per_rank"]) {
    for (const char* key : {"busy_s", "idle_s", "peak_activation_bytes", "peak_memory_bytes"}) {
      EXPECT_GT(rank[key]["measured"].get<double>(), key == std::string("idle_s") ? -1e-9 : 0.0) << key;
      EXPECT_TRUE(rank[key].contains("error_pct")) << key;
    }
  }
  const auto& gradients = comparison["gradient_check"];
  EXPECT_TRUE(gradients["passed"].get<bool>()) << gradients.dump();
  EXPECT_LT(gradients["max_relative_error"].get<double>(), 1e-5);
  EXPECT_EQ(gradients["parameters"].get<int>(), 27);  // tiny: 4 blocks x 6, embedding, final norm, LM head

  // The trace holds both timelines: measured ranks 0-1, simulated 2-3.
  const nlohmann::json trace = nlohmann::json::parse(slurp(dir + "/trace.json"));
  std::set<std::string> processes;
  std::set<int> pids;
  for (const auto& event : trace["traceEvents"]) {
    pids.insert(event["pid"].get<int>());
    if (event["name"] == "process_name") processes.insert(event["args"]["name"].get<std::string>());
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(processes, (std::set<std::string>{"measured rank 0", "measured rank 1", "simulated rank 0",
                                              "simulated rank 1"}));
  EXPECT_NE(slurp(dir + "/summary.txt").find("gradients vs unpipelined reference: match"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Schedules, ValidateCli,
                         ::testing::Values(std::make_pair("1F1B", 1), std::make_pair("ZBH1", 1),
                                           std::make_pair("Interleaved1F1B", 2), std::make_pair("ZBAuto", 1)),
                         [](const auto& info) { return std::string(info.param.first); });

class ValidateCliFaults : public ValidateCli {};

TEST_F(ValidateCliFaults, AStalledRankIsNamedWithinTheTimeout) {
  const CommandResult result = run_with(kMpirun + "2 ", "validate --plan " + tiny_plan("1F1B", 1) +
                                                            " --timeout 2 --inject-stall 1 --out " +
                                                            temp_path("stall"), 60);
  EXPECT_NE(result.code, 0);
  EXPECT_NE(result.code, 124) << "timed out: the stall was waited on";
  EXPECT_NE(result.err.find("rank 1"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("stalled or died"), std::string::npos) << result.err;
}

TEST_F(ValidateCliFaults, APlanForOtherRanksIsRefusedBeforeRunning) {
  const CommandResult result =
      run_with(kMpirun + "3 ", "validate --plan " + tiny_plan("1F1B", 1) + " --out " + temp_path("three"), 60);
  EXPECT_NE(result.code, 0);
  EXPECT_NE(result.err.find("the plan needs 2 ranks (t=1 x c=1 x p=2 x d=1) but 3 were launched"), std::string::npos)
      << result.err;
}

TEST_F(ValidateCliFaults, StagesThatDoNotFitAreRefusedBeforeRunning) {
  // Llama 3 8B in 2 stages fits two H200s but not this machine's memory.
  const std::string plan = temp_path("8b-plan.yaml");
  ASSERT_EQ(run("plan --model llama3-8b --hardware h200-sxm --gpus 2 --global-batch 2 --seq 128 --pp 2 --tp 1 "
                "--out " + plan).code,
            0);
  const CommandResult result = run_with(kMpirun + "2 ", "validate --plan " + plan + " --out " + temp_path("8b"), 60);
  EXPECT_NE(result.code, 0);
  EXPECT_NE(result.err.find("free per rank"), std::string::npos) << result.err;
}

}  // namespace
