// The pipeplan binary end to end: help texts, outputs that agree with the
// library, files written, and bad input answered with one line on stderr
// and exit code 2 (never a crash or a hang).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace {

using namespace pipeplan::testing;

TEST(Cli, HelpListsCommandsAndOptionsWithUnitsAndDefaults) {
  const CommandResult top = run("--help");
  EXPECT_EQ(top.code, 0);
  EXPECT_NE(top.out.find("simulate"), std::string::npos);
  EXPECT_NE(top.out.find("schedule"), std::string::npos);
  const CommandResult simulate = run("simulate --help");
  EXPECT_EQ(simulate.code, 0);
  for (const char* text : {"--tf", "ms", "--act-bytes", "--link-bandwidth", "default", "--stages,--pp INT=8",
                           "--microbatches INT=24", "--no-overlap", "--trace", "--svg", "--json"}) {
    EXPECT_NE(simulate.out.find(text), std::string::npos) << text;
  }
}

TEST(Cli, DefaultRunIsARealModelsMeasuredCosts) {
  const CommandResult result = run("simulate --schedule ZBH1 --json");
  ASSERT_EQ(result.code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  // Zero Bubble Table 9, 1.5B model, ZB-H1: bubble rate 0.1585.
  EXPECT_NEAR(json["bubble_rate"].get<double>(), 0.1585, 5e-5);
  EXPECT_NE(json["cost_source"].get<std::string>().find("Zero Bubble"), std::string::npos);
  for (const char* key : {"schedule", "stages", "ranks", "microbatches", "virtual", "makespan_ms", "cost_ms",
                          "ideal_ms", "bubble_rate", "bubble_over_ideal", "critical_path_ms", "compute_actions",
                          "ranks_detail"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  ASSERT_EQ(json["ranks_detail"].size(), 8u);
  for (const char* key : {"rank", "busy_ms", "idle_ms", "span_ms", "peak_inflight_microbatches",
                          "peak_activation_bytes", "peak_memory_bytes"}) {
    EXPECT_TRUE(json["ranks_detail"][0].contains(key)) << key;
  }
}

TEST(Cli, CostsFileGivesTheSameAnswerAsOptions) {
  const CommandResult from_file = run("simulate --schedule ZBH2 --json --costs " + kConfigs + "/costs/zero_bubble_1p5b.yaml");
  const CommandResult from_options = run("simulate --schedule ZBH2 --json --tf 18.522 --tb 18.086 --tw 9.337 --tcomm 0.601");
  ASSERT_EQ(from_file.code, 0) << from_file.err;
  ASSERT_EQ(from_options.code, 0) << from_options.err;
  EXPECT_EQ(nlohmann::json::parse(from_file.out)["cost_ms"], nlohmann::json::parse(from_options.out)["cost_ms"]);
}

TEST(Cli, WritesTraceSvgAndCsvThatRoundTrip) {
  const std::string trace = temp_path("trace.json"), svg = temp_path("gantt.svg"), csv = temp_path("zbv.csv");
  const CommandResult simulated = run("simulate --schedule ZBV -p 4 -m 8 --tf 2 --tb 2 --tw 2 --tcomm 0.1 --json --trace " +
                            trace + " --svg " + svg);
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  EXPECT_TRUE(nlohmann::json::parse(slurp(trace)).contains("traceEvents"));
  EXPECT_NE(slurp(svg).find("</svg>"), std::string::npos);
  const CommandResult exported = run("schedule --schedule ZBV -p 4 -m 8 --csv-out " + csv);
  ASSERT_EQ(exported.code, 0) << exported.err;
  const CommandResult replayed = run("simulate --schedule-csv " + csv + " --tf 2 --tb 2 --tw 2 --tcomm 0.1 --json");
  ASSERT_EQ(replayed.code, 0) << replayed.err;
  const auto a = nlohmann::json::parse(simulated.out), b = nlohmann::json::parse(replayed.out);
  EXPECT_EQ(a["cost_ms"], b["cost_ms"]);
  EXPECT_EQ(a["ranks_detail"], b["ranks_detail"]);
}

TEST(Cli, SimulatesAPyTorchCsvWithCommunication) {
  const CommandResult result = run("simulate --schedule-csv " + kData + "/zb1p_2rank_with_comms.csv --tf 1 --tb 1 --tw 1");
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.out.find("bubble rate"), std::string::npos);
}

TEST(Cli, ComparesEverySchedule) {
  const CommandResult result = run("simulate --schedule all -p 4 -m 8 --tf 1 --tb 1 --tw 1 --json");
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_GE(nlohmann::json::parse(result.out)["comparison"].size(), 9u);
}

TEST(Cli, BadInputIsOneLineAndExitCodeTwo) {
  expect_refused("simulate --schedule Bogus", "valid names");
  expect_refused("simulate -p 0", "--pp must be >= 1");
  expect_refused("simulate -m 0", "--microbatches must be >= 1");
  expect_refused("simulate --tf -1 --tb 1", "negative");
  expect_refused("simulate --tf nan --tb 1", "not a finite number");
  expect_refused("simulate --tf abc --tb 1", "not a number");
  expect_refused("simulate -p 4 --tf 1,2,3 --tb 1", "lists 3 values");
  expect_refused("simulate --schedule ZBH1 --tf 1 --tb 1", "give --tw");
  expect_refused("simulate --schedule Interleaved1F1B -p 4 -m 6 --tf 1 --tb 1", "divisible");
  expect_refused("simulate --schedule DualPipeV -p 4 -m 6 --tf 1 --tb 1 --tw 1", ">= 2 x --stages");
  expect_refused("simulate --schedule ZBV -v 3 --tf 1 --tb 1 --tw 1", "--virtual 2");
  expect_refused("simulate --schedule ZBH1 --act-bytes 1GiB --wgrad-bytes 2GiB", "exceeds --act-bytes");
  expect_refused("simulate --act-bytes 1GiB --wgrad-bytes 1GiB", "1F1B runs full backwards");
  expect_refused("simulate --link-bandwidth 0GB/s", "must be a finite rate above 0");
  expect_refused("simulate --schedule-csv /nonexistent.csv", "does not exist");
  expect_refused("simulate --trace /nonexistent/dir/trace.json", "cannot write");
  expect_refused("simulate --no-such-option", "no-such-option");
  expect_refused("simulate --costs " + kData + "/costs_unknown_key.yaml", "costs_unknown_key.yaml:3:1: unknown key");
  expect_refused("simulate --costs " + kData + "/costs_malformed.yaml", "costs_malformed.yaml:2");
}

TEST(Cli, ModelShowListsLayersWithTheirCosts) {
  const CommandResult result = run("model show llama3-70b --tp 8 --seq 4096 --hardware h100-sxm --json");
  ASSERT_EQ(result.code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["name"], "llama3-70b");
  for (const char* key : {"total_params", "active_params", "embedding_params", "layers"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  ASSERT_EQ(json["layers"].size(), 82u);  // embedding, 80 blocks, output
  for (const char* key : {"name", "kind", "params", "fwd_flops", "bwd_input_flops", "bwd_weight_flops",
                          "activation_bytes", "fwd_s"}) {
    EXPECT_TRUE(json["layers"][1].contains(key)) << key;
  }
  EXPECT_EQ(run("model list").code, 0);
  EXPECT_EQ(run("hardware list").code, 0);
}

TEST(Cli, SimulatesAModelOnHardware) {
  const CommandResult result = run("simulate --model llama3-8b --hardware h100-sxm --pp 4 --microbatches 8 --seq 2048 "
                                   "--layers 7,9,9,7 --json");
  ASSERT_EQ(result.code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  for (const char* key : {"iteration_time_s", "tokens_per_s", "mfu", "layout", "stage_layers"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  EXPECT_EQ(json["layout"], "Et*7|t*9|t*9|t*7L");
  const auto& rank = json["ranks_detail"][0];
  for (const char* key : {"weights", "gradients", "optimizer", "activations", "logits", "buffers", "total"}) {
    EXPECT_TRUE(rank["memory_breakdown"].contains(key)) << key;
  }
  EXPECT_EQ(rank["memory_breakdown"]["total"], rank["peak_memory_bytes"]);
  EXPECT_EQ(rank["layers"][0], "embedding");
}

TEST(Cli, BadModelInputIsOneLineAndExitCodeTwo) {
  expect_refused("simulate --model nope --hardware h100-sxm", "llama3-70b");
  expect_refused("simulate --model llama3-8b --hardware h900", "h100-sxm");
  expect_refused("simulate --model llama3-8b", "needs --hardware");
  expect_refused("simulate --model llama3-8b --hardware h100-sxm --tp 3", "must divide");
  expect_refused("simulate --model llama3-8b --hardware h100-sxm --pp 4 --layers 8,8,8,9", "sums to 33");
  expect_refused("simulate --model llama3-8b --hardware h100-sxm --pp 3", "divisible");
  expect_refused("simulate --model llama3-8b --hardware h100-sxm --recompute some", "--recompute");
  expect_refused("simulate --model llama3-8b --hardware h100-sxm --tf 3", "--tf has no effect with --model");
  expect_refused("model show nope", "llama3-70b");
  // Counts whose product wraps in an int: p 2 x d 2^31 - 1 once ran as "-2 x h100-sxm"; a plan file's 4 x
  // (2^27 + 8) x 8 sequences wrapped to its global batch of 256 and replayed.
  expect_refused("simulate --model llama3-8b --hardware h100-sxm --pp 2 --dp 2147483647", "tp x cp x pp x dp");
  std::ifstream in(kData + "/llama3-8b-64-h100.plan.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string plan = text.str();
  plan.replace(plan.find("microbatches: 8"), 15, "microbatches: 134217736");
  expect_refused("simulate --plan " + write_temp("wrapped.plan.yaml", plan), "micro_batch_size x microbatches x dp");
}

TEST(Cli, PlanReportsTheBestPlanAndReplaysIt) {
  const std::string plan_file = temp_path("plan.yaml");
  const CommandResult planned = run("plan --model llama3-70b --hardware h100-sxm --gpus 32 --global-batch 32 "
                                    "--seq 8192 --tp 8 --pp 4 --micro-batch-size 1 --json --out " + plan_file);
  ASSERT_EQ(planned.code, 0) << planned.err;
  const auto json = nlohmann::json::parse(planned.out);
  for (const char* key : {"best", "even_split", "pareto", "candidates_evaluated", "search_time_s", "rejected",
                          "megatron_args", "top"}) {
    EXPECT_TRUE(json.contains(key)) << key;
  }
  const auto& best = json["best"];
  for (const char* key : {"tp", "pp", "dp", "micro_batch_size", "microbatches", "schedule", "virtual", "recompute",
                          "stage_layers", "layout", "iteration_time_s", "tokens_per_s", "mfu", "bubble_rate",
                          "peak_memory_bytes"}) {
    EXPECT_TRUE(best.contains(key)) << key;
  }
  EXPECT_EQ(best["peak_memory_bytes"].size(), 4u);
  EXPECT_NE(json["megatron_args"].get<std::string>().find("--pipeline-model-parallel-size 4"), std::string::npos);
  const CommandResult replayed = run("simulate --plan " + plan_file + " --json");
  ASSERT_EQ(replayed.code, 0) << replayed.err;
  const auto again = nlohmann::json::parse(replayed.out);
  EXPECT_EQ(again["iteration_time_s"], best["iteration_time_s"]);
  EXPECT_EQ(again["tokens_per_s"], best["tokens_per_s"]);
  EXPECT_EQ(again["layout"], best["layout"]);
  for (std::size_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(again["ranks_detail"][rank]["peak_memory_bytes"], best["peak_memory_bytes"][rank]);
  }
}

// The tables of candidates name the expert layout where the model has
// experts, and only there.
TEST(Cli, PlanTablesShowTheExpertAxesOfMoeModelsOnly) {
  const CommandResult moe =
      run("plan --model mixtral-8x7b --hardware h100-sxm --gpus 32 --global-batch 64 "
          "--seq 4096 --pp 4 --ep 8 --top 2 --verbose");
  ASSERT_EQ(moe.code, 0) << moe.err;
  const std::size_t header = moe.out.find(" d  ep etp z ");
  ASSERT_NE(header, std::string::npos) << moe.out;
  // The first row under it: # t c p d ep etp.
  std::istringstream row(moe.out.substr(moe.out.find('\n', header) + 1));
  int index = 0, t = 0, c = 0, p = 0, d = 0, ep = 0, etp = 0;
  row >> index >> t >> c >> p >> d >> ep >> etp;
  EXPECT_EQ(index, 1);
  EXPECT_EQ(p, 4);
  EXPECT_EQ(ep, 8);
  EXPECT_EQ(t * c * d % (ep * etp), 0);
  // The JSON of the best plan carries the all-to-all as simulate's does.
  const CommandResult json =
      run("plan --model mixtral-8x7b --hardware h100-sxm --gpus 32 --global-batch 64 "
          "--seq 4096 --pp 4 --ep 8 --json");
  ASSERT_EQ(json.code, 0) << json.err;
  const auto best = nlohmann::json::parse(json.out)["best"];
  ASSERT_TRUE(best.contains("expert_comm")) << json.out;
  EXPECT_GT(best["expert_comm"]["exposed_s"].get<double>() + best["expert_comm"]["hidden_s"].get<double>(), 0);
  EXPECT_EQ(best["moe_load_imbalance"], 1.0);
  const CommandResult dense =
      run("plan --model llama3-8b --hardware h100-sxm --gpus 16 --global-batch 64 "
          "--seq 4096 --pp 2 --top 2 --verbose");
  ASSERT_EQ(dense.code, 0) << dense.err;
  EXPECT_NE(dense.out.find(" d z "), std::string::npos) << dense.out;
  EXPECT_EQ(dense.out.find(" ep etp "), std::string::npos) << dense.out;
}

TEST(Cli, PlanRefusesWhatCannotFit) {
  expect_refused("plan --model llama3-70b --hardware h100-sxm --gpus 32 --global-batch 32 --memory-cap 4GiB",
                 "the smallest peak found is");
  expect_refused("plan --model llama3-70b --hardware h100-sxm --gpus 30 --global-batch 32 --tp 8",
                 "--tp 8 does not divide --gpus 30");
  expect_refused("plan --model llama3-70b --hardware h100-sxm --gpus 30 --global-batch 7 --pp 2",
                 "no tensor x pipeline x data layout");
  expect_refused("plan --model llama3-70b --hardware h100-sxm --gpus 32 --global-batch 0", "--global-batch");
  expect_refused("plan --model llama3-70b --hardware h100-sxm --gpus 32 --global-batch 32 --objective speed",
                 "--objective");
  expect_refused("simulate --plan /nonexistent.yaml", "does not exist");
  expect_refused("plan --model llama3-70b --hardware h100-sxm --gpus 32 --global-batch 32 --layers 18,22,22",
                 "sums to 62");
}

TEST(Cli, PlanEvaluatesAGivenSplit) {
  const CommandResult result = run("plan --model llama3-70b --hardware h100-sxm --gpus 32 --global-batch 32 "
                                   "--seq 8192 --tp 8 --layers 18,22,22,18 --json");
  ASSERT_EQ(result.code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["best"]["stage_layers"], (std::vector<int>{18, 22, 22, 18}));
  // Four stages: p = 4 with one chunk each, or p = 2 with two.
  EXPECT_EQ(json["best"]["pp"].get<int>() * json["best"]["virtual"].get<int>(), 4);
}

TEST(Cli, MalformedCsvNamesLineAndColumn) {
  const std::string csv = temp_path("bad.csv");
  std::ofstream(csv) << "0F0,0B0\n1F0,1Q0,1B0\n";
  expect_refused("simulate --schedule-csv " + csv, "bad.csv:2:5: unknown action '1Q0'");
}

TEST(Cli, DeadlockIsRefusedWithTheGrid) {
  const CommandResult result = run("simulate --schedule-csv " + kData + "/deadlock_2rank.csv --tf 1 --tb 1");
  EXPECT_EQ(result.code, 2);
  // The file named, the error on one line, then the grid of where it stops.
  EXPECT_EQ(result.err.rfind("pipeplan: error: " + kData + "/deadlock_2rank.csv: the schedule deadlocks", 0), 0u)
      << result.err;
  EXPECT_NE(result.err.find("[0B0]"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("rank 1"), std::string::npos) << result.err;
}

TEST(Cli, ParserErrorsSayWhatWasWrongAndTheFix) {
  expect_refused("simulate --seq 1024 --seq 2048 --tf 1 --tb 1", "--seq is given 2 times: give it once");
  expect_refused("simulate --plan", "--plan needs a value after it");
  expect_refused("plan --model llama3-8b --hardware h100-sxm --global-batch 8 --gpus", "--gpus needs a whole number");
  const CommandResult bare = run("");
  EXPECT_EQ(bare.code, 2);
  EXPECT_NE(bare.err.find("give a command, e.g. pipeplan simulate"), std::string::npos) << bare.err;
  // A tensor-parallel size that splits no head evenly: the sizes that do.
  expect_refused("simulate --model llama3-70b --hardware h100-sxm --tp 3 --pp 4",
                 "must divide the 64 attention heads and 8 key/value heads of 'llama3-70b'; use one of 1, 2, 4, 8");
}

}  // namespace
