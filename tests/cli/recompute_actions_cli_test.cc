// Recomputation in the bubbles through `simulate`: the hand-worked 1F1B
// case with given times (p 2, m 2, F 1 ms, B 2 ms of which R 1 ms: 9 ms
// with the recomputation inside the backward, 8 ms apart, and rank 0's
// peak 2 x 1 MiB + 4 MiB), a model's recomputation priced by the cost
// model, and what it refuses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/cli_support.h"

namespace pipeplan::testing {
namespace {

using nlohmann::json;

const std::string kTimes = "simulate --schedule 1F1B -p 2 -m 2 --tf 1 --tb 2 --tcomm 0 --act-bytes 1MiB";

TEST(RecomputeActionsCli, GivenTimesMatchTheHandWorkedCase) {
  const CommandResult inside = run(kTimes + " --json");
  const CommandResult apart = run(kTimes + " --tr 1 --recompute-bytes 4MiB --recompute-in-bubbles --json");
  ASSERT_EQ(inside.code, 0) << inside.err;
  ASSERT_EQ(apart.code, 0) << apart.err;
  const json a = json::parse(inside.out), b = json::parse(apart.out);
  EXPECT_NEAR(a["cost_ms"].get<double>(), 9.0, 1e-9);
  EXPECT_NEAR(b["cost_ms"].get<double>(), 8.0, 1e-9);
  EXPECT_EQ(b["recompute_actions"], 4);
  EXPECT_EQ(b["ranks_detail"][0]["peak_activation_bytes"].get<std::int64_t>(), 6 << 20);
}

TEST(RecomputeActionsCli, AModelsFullRecomputationGoesFasterAndHoldsMore) {
  const std::string model = "simulate --model llama3-8b --hardware h100-sxm -p 4 -m 8 --seq 2048 --recompute full --json";
  const CommandResult inside = run(model);
  const CommandResult apart = run(model + " --recompute-in-bubbles");
  ASSERT_EQ(inside.code, 0) << inside.err;
  ASSERT_EQ(apart.code, 0) << apart.err;
  const json a = json::parse(inside.out), b = json::parse(apart.out);
  EXPECT_LT(b["cost_ms"].get<double>(), a["cost_ms"].get<double>());
  EXPECT_GT(b["ranks_detail"][0]["peak_memory_bytes"].get<double>(),
            a["ranks_detail"][0]["peak_memory_bytes"].get<double>());
}

// plan --recompute-in-bubbles tries each recomputing candidate both ways:
// with full recomputation fixed under 40 GiB the apart one is faster and
// fits; its plan file carries it and the replay gives the plan's figures.
TEST(RecomputeActionsCli, PlanPicksItAndTheReplayAgrees) {
  const std::string plan = temp_path("bubbles-plan.yaml");
  const std::string request = "plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 64 --seq 8192 "
                              "--pp 8 --tp 1 --schedule 1F1B --recompute full --memory-cap 40GiB --json";
  const CommandResult inside = run(request);
  const CommandResult apart = run(request + " --recompute-in-bubbles --out " + plan);
  ASSERT_EQ(inside.code, 0) << inside.err;
  ASSERT_EQ(apart.code, 0) << apart.err;
  const json plain = json::parse(inside.out)["top"][0];
  const json best = json::parse(apart.out)["top"][0];
  EXPECT_TRUE(best["recompute_in_bubbles"].get<bool>());
  EXPECT_LT(best["iteration_time_s"].get<double>(), plain["iteration_time_s"].get<double>());
  const CommandResult replay = run("simulate --plan " + plan + " --json");
  ASSERT_EQ(replay.code, 0) << replay.err;
  const json replayed = json::parse(replay.out);
  EXPECT_NEAR(replayed["iteration_time_s"].get<double>(), best["iteration_time_s"].get<double>(),
              1e-9 * best["iteration_time_s"].get<double>());
  EXPECT_GT(replayed["recompute_actions"].get<int>(), 0);
  EXPECT_FALSE(replayed.contains("plan_overrides"));
  expect_refused("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 64 --recompute none "
                 "--recompute-in-bubbles",
                 "drop one");
}

TEST(RecomputeActionsCli, BadInputGetsOneLine) {
  expect_refused(kTimes + " --tr 1", "add it or drop them");
  expect_refused(kTimes + " --recompute-in-bubbles", "no stage recomputes");
  expect_refused(kTimes + " --tr 3 --recompute-in-bubbles", "--tr");
  expect_refused("simulate --model llama3-8b --hardware h100-sxm -p 4 -m 8 --seq 2048 --recompute none "
                 "--recompute-in-bubbles",
                 "no stage recomputes");
  expect_refused(kTimes + " --tr 1 --recompute-in-bubbles --offload --host-bandwidth 50GB/s", "use one of them");
}

}  // namespace
}  // namespace pipeplan::testing
