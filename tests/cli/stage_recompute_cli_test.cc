// Per-stage recomputation through the commands: `plan` finds it where the
// cap binds early stages, `simulate --plan` replays it to the plan's
// figures, `simulate --recompute a,b,...` takes a list of its own (each
// stage's settings costed alike with the uniform runs), and bad lists get
// one line and exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace pipeplan::testing {
namespace {

using nlohmann::json;

const std::string kEightStages =
    "--model llama3-8b --hardware h100-sxm --pp 8 --schedule 1F1B --seq 8192 --micro-batch-size 1";

TEST(StageRecomputeCli, PlanWritesItAndSimulateReplaysIt) {
  const std::string plan = temp_path("per_stage_plan.yaml");
  const CommandResult planned =
      run("plan " + kEightStages + " --gpus 8 --global-batch 64 --memory-cap 32GiB --json --out " + plan);
  ASSERT_EQ(planned.code, 0) << planned.err;
  const json best = json::parse(planned.out)["best"];
  EXPECT_EQ(best["recompute"], "per-stage");
  ASSERT_EQ(best["stage_recompute"].size(), 8u);
  EXPECT_EQ(best["stage_recompute"][0], "full");
  EXPECT_EQ(best["stage_recompute"][7], "none");
  EXPECT_NE(slurp(plan).find("recompute: [full"), std::string::npos);
  const CommandResult replayed = run("simulate --plan " + plan + " --json");
  ASSERT_EQ(replayed.code, 0) << replayed.err;
  const json report = json::parse(replayed.out);
  EXPECT_EQ(report["recompute"], "per-stage");
  EXPECT_NEAR(report["iteration_time_s"].get<double>(), best["iteration_time_s"].get<double>(),
              1e-9 * best["iteration_time_s"].get<double>());
  EXPECT_FALSE(report.contains("notes")) << report["notes"];
  // validate runs one setting everywhere: it says so.
  expect_refused("validate --plan " + plan + " --backend cpu", "recomputes per stage (full,full,full,full,none");
  // Another stage count takes a list of its own.
  const CommandResult four = run("simulate --plan " + plan + " --stages 4 --layers 8,8,8,8 --recompute full,full,none,none --json");
  ASSERT_EQ(four.code, 0) << four.err;
  EXPECT_EQ(json::parse(four.out)["stage_recompute"], json::array({"full", "full", "none", "none"}));
  expect_refused("simulate --plan " + plan + " --stages 4 --layers 8,8,8,8", "give one per stage");
  // One --recompute for every stage replaces the plan's list.
  const json uniform = json::parse(run("simulate --plan " + plan + " --recompute full --json").out);
  EXPECT_EQ(uniform["recompute"], "full");
  EXPECT_GT(uniform["iteration_time_s"].get<double>(), report["iteration_time_s"].get<double>());
}

TEST(StageRecomputeCli, AListCostsEachStageAsItsUniformRunDoes) {
  // Two stages of 1F1B: a list naming one setting per stage costs stage 0
  // as the uniform full run does and stage 1 as the uniform none run does.
  const std::string common = "simulate --model llama3-8b --hardware h100-sxm -p 2 -m 8 --seq 4096 --layers 16,16 --json";
  const json full = json::parse(run(common + " --recompute full").out);
  const json none = json::parse(run(common + " --recompute none").out);
  const CommandResult mixed_run = run(common + " --recompute full,none");
  ASSERT_EQ(mixed_run.code, 0) << mixed_run.err;
  const json mixed = json::parse(mixed_run.out);
  EXPECT_EQ(mixed["stage_recompute"], json::array({"full", "none"}));
  const auto busy = [](const json& report, int rank) { return report["ranks_detail"][rank]["busy_ms"].get<double>(); };
  EXPECT_DOUBLE_EQ(busy(mixed, 0), busy(full, 0));
  EXPECT_DOUBLE_EQ(busy(mixed, 1), busy(none, 1));
  const auto peak = [](const json& report, int rank) {
    return report["ranks_detail"][rank]["peak_activation_bytes"].get<std::int64_t>();
  };
  EXPECT_EQ(peak(mixed, 0), peak(full, 0));
  EXPECT_EQ(peak(mixed, 1), peak(none, 1));
}

TEST(StageRecomputeCli, BadListsGetOneLine) {
  const std::string common = "simulate --model llama3-8b --hardware h100-sxm -p 2 -m 4 --seq 2048";
  expect_refused(common + " --recompute full,none,none", "--recompute names 3 stages");
  expect_refused(common + " --recompute full,,none", "an empty stage");
  expect_refused(common + " --recompute full,most", "--recompute must be none, selective or full");
  expect_refused(common + " --recompute full,none --recompute-modules layernorm",
                 "--recompute-modules applies to the selective stages");
  expect_refused(common + " --recompute full,none --explain", "--explain");
}

}  // namespace
}  // namespace pipeplan::testing
