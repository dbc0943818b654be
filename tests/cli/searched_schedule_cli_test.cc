// A searched schedule (ZBAuto) through the commands: simulate with given
// times gives Zero Bubble's ZB-2p rate on the paper's 1.5B row (Qi et al.,
// ICLR 2024, Table 5; reference.md), keeps every rank within the limit it
// was given, and writes an order that reads back, validates and replays
// alike; with a model it fits in what each GPU leaves for activations;
// `plan --schedule ZBAuto` writes a plan that `simulate --plan` replays to
// the same figures. Bad limits get one line and exit 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/support/cli_support.h"

namespace pipeplan::testing {
namespace {

using nlohmann::json;

// Zero Bubble's 1.5B row: p 8, m 24, times in ms; M_B = 34h + 5as per s b
// (h 2304, a 24, s 1024) and W frees 32h of it.
const std::string kZeroBubble1p5b =
    "simulate --schedule ZBAuto -p 8 -m 24 --tf 18.522 --tb 18.086 --tw 9.337 --tcomm 0.601 --act-bytes 201216 "
    "--wgrad-bytes 73728";

TEST(SearchedScheduleCli, GivenTimesReachZb2pWithinTheLimit) {
  const CommandResult result = run(kZeroBubble1p5b + " --activation-limit 2p --json");
  ASSERT_EQ(result.code, 0) << result.err;
  const json report = json::parse(result.out);
  EXPECT_NEAR(report["bubble_rate"].get<double>(), 0.0433, 5e-5);
  EXPECT_NE(report["schedule_search"].get<std::string>().find("within 2p x M_B per rank"), std::string::npos);
  for (const json& rank : report["ranks_detail"]) EXPECT_LE(rank["peak_activation_bytes"].get<std::int64_t>(), 16 * 201216);
  // Without a limit or a cap it keeps to what 1F1B holds (ZB-1p: 0.1585).
  const json plain = json::parse(run(kZeroBubble1p5b + " --json").out);
  EXPECT_NEAR(plain["bubble_rate"].get<double>(), 0.1585, 5e-5);
  // A cap leaves its bytes less the static ones to the activations; with a
  // limit too, each rank keeps to the tighter.
  for (const std::string limit : {"", " --activation-limit 2p"}) {
    const CommandResult capped = run(kZeroBubble1p5b + " --static-bytes 1MiB --memory-cap 3MiB --json" + limit);
    ASSERT_EQ(capped.code, 0) << capped.err;
    const json report_capped = json::parse(capped.out);
    for (const json& rank : report_capped["ranks_detail"]) {
      EXPECT_LE(rank["peak_memory_bytes"].get<std::int64_t>(), 3 << 20) << limit;
    }
  }
}

TEST(SearchedScheduleCli, TheOrderWrittenReadsBackAndReplaysAlike) {
  const std::string csv = temp_path("zbauto.csv");
  const CommandResult searched = run(kZeroBubble1p5b + " --activation-limit 12 --csv-out " + csv + " --json");
  ASSERT_EQ(searched.code, 0) << searched.err;
  EXPECT_EQ(run("schedule --schedule-csv " + csv).code, 0);
  const CommandResult replayed = run(
      "simulate --schedule-csv " + csv +
      " --tf 18.522 --tb 18.086 --tw 9.337 --tcomm 0.601 --act-bytes 201216 --wgrad-bytes 73728 --json");
  ASSERT_EQ(replayed.code, 0) << replayed.err;
  EXPECT_DOUBLE_EQ(json::parse(replayed.out)["cost_ms"].get<double>(), json::parse(searched.out)["cost_ms"].get<double>());
}

TEST(SearchedScheduleCli, AModelsOrderFitsWhatEachGpuLeaves) {
  const CommandResult result =
      run("simulate --model llama3-8b --hardware h100-sxm -p 4 -m 16 --schedule ZBAuto --json");
  ASSERT_EQ(result.code, 0) << result.err;
  const json report = json::parse(result.out);
  EXPECT_TRUE(report["fits"].get<bool>()) << result.out.substr(0, 400);
  EXPECT_NE(report["schedule_search"].get<std::string>().find("usable memory per GPU of h100-sxm"), std::string::npos);
}

// Llama 3 8B on 8 H100s, p 4, ZBAuto: the plan's JSON report, its best
// written to `plan`.
json planned_zbauto(const std::string& plan) {
  const CommandResult planned = run(
      "plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 64 --seq 8192 --pp 4 --schedule ZBAuto "
      "--json --out " + plan);
  EXPECT_EQ(planned.code, 0) << planned.err;
  return planned.code == 0 ? json::parse(planned.out) : json::object();
}

TEST(SearchedScheduleCli, APlanWithASearchedOrderReplaysToItsFigures) {
  const std::string plan = temp_path("zbauto-plan.yaml");
  const json planned = planned_zbauto(plan);
  ASSERT_TRUE(planned.contains("best"));
  const json best = planned["best"];
  EXPECT_EQ(best["schedule"], "ZBAuto");
  for (const json& peak : best["peak_memory_bytes"]) EXPECT_LE(peak.get<double>(), 76.0 * (1 << 30));
  const CommandResult replay = run("simulate --plan " + plan + " --json");
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_NEAR(json::parse(replay.out)["iteration_time_s"].get<double>(), best["iteration_time_s"].get<double>(),
              1e-9 * best["iteration_time_s"].get<double>());
  // Another cap searches another order: the replay says it re-costed the plan.
  const json recapped = json::parse(run("simulate --plan " + plan + " --memory-cap 60GiB --json").out);
  EXPECT_EQ(recapped["plan_overrides"][0], "--memory-cap 60GiB");
}

// The memory limit as a plan axis: beside each candidate's order within the
// cap, the orders within 2p and p x M_B where those are tighter, lighter
// points on the Pareto front; a plan file carries its limit, and the replay
// searches within it.
TEST(SearchedScheduleCli, PlanSearchesTheLimitAsAnAxis) {
  const std::string plan = temp_path("zbauto-limit-plan.yaml");
  const json report = planned_zbauto(plan);
  ASSERT_TRUE(report.contains("pareto"));
  const auto largest = [](const json& peaks) {
    double most = 0;
    for (const json& peak : peaks) most = std::max(most, peak.get<double>());
    return most;
  };
  const double best_peak = largest(report["best"]["peak_memory_bytes"]);
  bool lighter_limited = false;
  for (const json& point : report["pareto"]) {
    if (point["activation_limit"].is_null()) continue;
    lighter_limited = lighter_limited || largest(point["peak_memory_bytes"]) < best_peak;
  }
  EXPECT_TRUE(lighter_limited) << report["pareto"].dump().substr(0, 600);
  // The best plan with a limit of p x M_B written in: the replay keeps to it.
  const std::string limited = write_temp("zbauto-limit-1p.yaml", slurp(plan) + "activation_limit: 1p\n");
  const CommandResult replay = run("simulate --plan " + limited + " --json");
  ASSERT_EQ(replay.code, 0) << replay.err;
  const json replayed = json::parse(replay.out);
  EXPECT_NE(replayed["schedule_search"].get<std::string>().find("p x M_B per rank (the plan's activation_limit)"),
            std::string::npos)
      << replayed["schedule_search"];
  double replayed_peak = 0;
  for (const json& rank : replayed["ranks_detail"]) {
    replayed_peak = std::max(replayed_peak, rank["peak_memory_bytes"].get<double>());
  }
  EXPECT_LT(replayed_peak, best_peak);
  std::string text = slurp(limited);
  text.replace(text.find("schedule: ZBAuto"), 16, "schedule: 1F1B");
  const std::string wrong = write_temp("limit-on-1f1b.yaml", text);
  expect_refused("simulate --plan " + wrong, "'activation_limit' bounds a searched schedule");
}

TEST(SearchedScheduleCli, BadLimitsGetOneLine) {
  const std::string times = "simulate --schedule ZBAuto -p 4 -m 8 --tf 1 --tb 1 --tw 1";
  expect_refused(times, "give --act-bytes");
  expect_refused(times + " --act-bytes 1GiB --activation-limit 0.5", "below one micro-batch's activations");
  expect_refused(times + " --act-bytes 1GiB --activation-limit 0", "--activation-limit must be bytes");
  expect_refused(times + " --act-bytes 1GiB --activation-limit -2p", "--activation-limit must be bytes");
  expect_refused(times + " --act-bytes 1GiB --virtual 2", "runs one stage per rank");
  expect_refused("simulate --schedule 1F1B -p 4 -m 8 --tf 1 --tb 1 --act-bytes 1GiB --activation-limit 2p",
                 "--activation-limit bounds a searched schedule");
  expect_refused("simulate --schedule ZBAuto -p 4 -m 8 --tf 1 --tb 1 --act-bytes 1GiB", "give --tw");
  expect_refused("schedule --schedule ZBAuto -p 4 -m 8", "searched for the stage costs");
}

TEST(SearchedScheduleCli, ACapLeavingARankNoMicroBatchCountsAsNotFitting) {
  // Under 20 GiB some candidates' ranks keep less than one micro-batch beside
  // their weights: their order holds one and they are over the cap, and the
  // search goes on to those that fit.
  const CommandResult result = run("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 "
                                   "--pp 4 --schedule ZBAuto --memory-cap 20GiB --json");
  ASSERT_EQ(result.code, 0) << result.err;
  const json best = json::parse(result.out)["best"];
  EXPECT_EQ(best["schedule"], "ZBAuto");
  for (const json& peak : best["peak_memory_bytes"]) EXPECT_LE(peak.get<double>(), 20.0 * (1 << 30));
}

TEST(SearchedScheduleCli, PlanTriesEveryScheduleWithAuto) {
  // auto: the default search's families, and ZBAuto among them (one chunk
  // per rank, so that the looped ones do not fill the top); searched is
  // ZBAuto's own name.
  const std::string plan = "plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 --pp 4 "
                           "--json --top 50 --schedule ";
  const CommandResult all = run(plan + "auto --virtual 1");
  ASSERT_EQ(all.code, 0) << all.err;
  std::set<std::string> families;
  const json all_report = json::parse(all.out);  // kept: the loop walks a member of it
  for (const json& candidate : all_report["top"]) families.insert(candidate["schedule"].get<std::string>());
  EXPECT_EQ(families.count("ZBAuto"), 1u);
  EXPECT_EQ(families.count("ZBH1"), 1u);
  const CommandResult searched = run(plan + "searched");
  ASSERT_EQ(searched.code, 0) << searched.err;
  EXPECT_EQ(json::parse(searched.out)["best"]["schedule"], "ZBAuto");
  expect_refused(plan + "searchd", "searchd");
}

}  // namespace
}  // namespace pipeplan::testing
