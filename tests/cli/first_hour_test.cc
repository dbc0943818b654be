// What a new user meets in the first hour: errors raised inside worker
// threads reach the user as one line, plans that do not fit say so, a
// what-if on a plan file is the one computed, unmodelled savings are
// refused, the sequence and GPU count are checked, studies check their
// metrics before running, and `--schedule all` works with models and
// writes its chart.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/generators/registry.h"
#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace {

using namespace pipeplan::testing;
using nlohmann::json;

// Plan's bad input, with the default thread count and with several threads:
// an error inside the search's workers is the same one line, exit 2.
void expect_plan_refused(const std::string& args, const std::string& needle) {
  expect_refused("plan " + args, needle);
  expect_refused("plan " + args + " --threads 3", needle);
}

TEST(FirstHour, PlanErrorsInsideTheSearchAreOneLineWithAnyThreadCount) {
  const std::string base = "--model llama3-70b --hardware h100-sxm --gpus 64 --global-batch 256";
  expect_plan_refused(base + " --schedule dualpipe", "did you mean DualPipeV?");
  expect_plan_refused("--model gpt2-small --hardware cpu --gpus 2 --global-batch 4 --seq 128 --profile " + kConfigs +
                          "/profiles/llama3-8b-cpu-epyc.yaml",
                      "the profile measured 'llama3-8b'");
  expect_plan_refused(base + " --tp 3", "--tp 3 must divide llama3-70b's 64 attention heads and 8 key-value heads");
  expect_plan_refused(base + " --tp 16", "--tp 16: tensor-parallel groups of 16 GPUs do not each lie in one node or NVLink domain of 8 GPUs on h100-sxm");
  expect_plan_refused(base + " --pp 7", "--pp 7 does not divide --gpus 64");
  expect_plan_refused(base + " --pp 81", "--pp 81 exceeds llama3-70b's 80 transformer layers");
  expect_plan_refused(base + " --micro-batch-size 3", "--micro-batch-size 3 divides no batch per replica");
  expect_plan_refused(base + " --schedule GPipe --virtual 2", "GPipe runs 1 stage(s) per rank: --virtual must be 1");
  expect_plan_refused(base + " --dp 3", "--dp 3 does not divide --gpus 64");
  expect_plan_refused(base + " --zero 3 --pp 2 --schedule ZBH1",
                      "--zero 3 on 2 pipeline ranks runs as PyTorch's pipelining");
  expect_plan_refused(base + " --seq 100000", "pass --allow-long-context");
  expect_plan_refused(base + " --memory-cap 4GiB", "the smallest peak found is");
}

TEST(FirstHour, TheInfeasibleCapNamesTheLowestPeakThatObjectiveMemoryFinds) {
  const std::string base = "plan --model llama3-70b --hardware h100-sxm --gpus 64 --global-batch 256 ";
  const CommandResult refused = run(base + "--memory-cap 12GiB");
  ASSERT_EQ(refused.code, 2);
  const CommandResult lowest = run(base + "--memory-cap 40GiB --objective memory --json");
  ASSERT_EQ(lowest.code, 0) << lowest.err;
  const json best = json::parse(lowest.out)["best"];
  std::int64_t peak = 0;
  for (const auto& rank : best["peak_memory_bytes"]) peak = std::max(peak, rank.get<std::int64_t>());
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(peak) / (1 << 30));
  EXPECT_NE(refused.err.find(std::string("the smallest peak found is ") + text), std::string::npos) << refused.err;
  // The closest candidate already recomputes everything: no advice to.
  if (best["recompute"] == "full") {
    EXPECT_EQ(refused.err.find("--recompute full"), std::string::npos) << refused.err;
  }
}

TEST(FirstHour, ASimulationThatDoesNotFitSaysSoEverywhere) {
  const std::string args = "simulate --model llama3-70b --hardware h100-sxm --pp 2 -m 8 --seq 8192";
  const CommandResult text = run(args);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("DOES NOT FIT in 76.00 GiB per rank"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rank 0 needs 759.28 GiB (683.28 GiB over)"), std::string::npos) << text.out;
  const json output = json::parse(run(args + " --json").out);
  EXPECT_FALSE(output["fits"].get<bool>());
  ASSERT_EQ(output["over_memory_ranks"].size(), 2u);
  EXPECT_EQ(output["over_memory_ranks"][0]["rank"], 0);
  EXPECT_EQ(output["over_memory_ranks"][0]["over_by_bytes"].get<std::int64_t>(),
            output["ranks_detail"][0]["peak_memory_bytes"].get<std::int64_t>() - output["memory_limit_bytes"].get<std::int64_t>());
  // A cap a user gives is checked too, with given times.
  const json capped = json::parse(run("simulate -p 4 -m 8 --tf 1 --tb 1 --act-bytes 1GiB --memory-cap 3GiB --json").out);
  EXPECT_FALSE(capped["fits"].get<bool>());
  EXPECT_EQ(capped["memory_limit_source"], "--memory-cap");
}

TEST(FirstHour, StudyRowsAndChartsShowTheMemoryLimit) {
  const std::string study = write_temp("fit-study.yaml",
                                       "mode: simulate\n"
                                       "base: {model: llama3-70b, hardware: h100-sxm, tp: 8, sequence-parallel: true, "
                                       "microbatches: 8, seq: 4096}\n"
                                       "sweep: {grid: {pp: [2, 4]}}\n"
                                       "metrics: [ranks_detail.*.peak_memory_bytes]\n"
                                       "plots:\n  - {name: memory, kind: bar, x: '#', y: ranks_detail.*.peak_memory_bytes, "
                                       "series: pp, y_unit: GiB}\n");
  const std::string dir = temp_path("fit-study");
  const CommandResult result = run("study " + study + " --out " + dir);
  ASSERT_EQ(result.code, 0) << result.err;
  const std::string csv = slurp(dir + "/results.csv");
  EXPECT_NE(csv.find(",fits,over_memory,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("false,\"rank 0 +"), std::string::npos) << csv;  // p = 2 does not fit
  EXPECT_NE(slurp(dir + "/memory.svg").find("class=\"limit\""), std::string::npos);
  EXPECT_NE(slurp(dir + "/report.md").find(" GiB |"), std::string::npos);  // human units, not raw bytes
}

TEST(FirstHour, APlanReplayAppliesEveryOverrideOrRefusesIt) {
  const std::string plan = temp_path("override-plan.yaml");
  ASSERT_EQ(run("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 --tp 2 --pp 4 "
                "--micro-batch-size 1 --schedule 1F1B --recompute none --out " + plan)
                .code,
            0);
  const json replay = json::parse(run("simulate --plan " + plan + " --json").out);
  const json h200 = json::parse(run("simulate --plan " + plan + " --hardware h200-sxm --schedule ZBH1 --json").out);
  EXPECT_EQ(h200["hardware"], "h200-sxm");
  EXPECT_EQ(h200["schedule"], "ZBH1");
  EXPECT_EQ(h200["plan_overrides"], json::parse(R"(["--hardware h200-sxm", "--schedule ZBH1"])"));
  EXPECT_NE(h200["iteration_time_s"], replay["iteration_time_s"]);
  const json more = json::parse(run("simulate --plan " + plan + " -m 32 --tp 4 --json").out);
  EXPECT_EQ(more["microbatches"], 32);
  EXPECT_EQ(more["gpus"], 16);  // t = 4 x p = 4
  // The plan was found for 8 GPUs and 16 sequences: what changed is said.
  EXPECT_EQ(more["plan_changes"],
            json::parse(R"(["16 GPUs where the plan has 8", "global batch 32 where the plan has 16"])"));
  EXPECT_EQ(h200["plan_changes"], json::array());
  expect_refused("simulate --plan " + plan + " --tf 3", "--tf has no effect with --plan");
  expect_refused("simulate --plan " + plan + " --pp 2", "give the new split with --layers or --layout");
  EXPECT_EQ(run("simulate --plan " + plan + " --pp 2 --layers 16,16 --json").code, 0);
}

TEST(FirstHour, APlansFrameworkFlagsCanBeTurnedOffInAReplay) {
  // The plan file keeps the flags the search applied; the --no- forms of
  // simulate turn them off again, and a conflict names where the flag came from.
  const std::string plan = temp_path("flags-plan.yaml");
  ASSERT_EQ(run("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 --tp 2 --pp 2 "
                "--tp-comm-overlap --overlap-grad-reduce --overlap-param-gather --out " + plan)
                .code,
            0);
  const json replay = json::parse(run("simulate --plan " + plan + " --json").out);
  const json off = json::parse(run("simulate --plan " + plan + " --no-tp-comm-overlap --json").out);
  EXPECT_GT(off["iteration_time_s"].get<double>(), replay["iteration_time_s"].get<double>());
  expect_refused("simulate --plan " + plan + " --zero 0", "the plan file's framework flags count too");
  EXPECT_EQ(run("simulate --plan " + plan + " --zero 0 --no-overlap-param-gather --json").code, 0);
}

TEST(FirstHour, Fp8IsRefusedWhereThereIsNoFp8AndCostsItsWeightCopies) {
  expect_refused("simulate --model llama3-8b --hardware a100-80gb --pp 2 -m 8 --precision fp8",
                 "--precision fp8: a100-80gb has no FP8 tensor cores");
  expect_refused("simulate --model llama3-8b --hardware h100-sxm --pp 2 -m 8 --precision fp4", "give bf16 or fp8");
  const json bf16 = json::parse(run("simulate --model llama3-8b --hardware h100-sxm --pp 2 -m 8 --seq 2048 --json").out);
  const json fp8 =
      json::parse(run("simulate --model llama3-8b --hardware h100-sxm --pp 2 -m 8 --seq 2048 --precision fp8 --json").out);
  EXPECT_LT(fp8["iteration_time_s"].get<double>(), bf16["iteration_time_s"].get<double>());
  // Two FP8 bytes per linear weight of the blocks, beside the BF16 ones:
  // rank 0 holds 16 of Llama 3 8B's 32 blocks of 218,112,000 parameters.
  const double copies = 2.0 * 16 * 218112000;
  EXPECT_NEAR(fp8["ranks_detail"][0]["memory_breakdown"]["weights"].get<double>() -
                  bf16["ranks_detail"][0]["memory_breakdown"]["weights"].get<double>(),
              copies, 1.0);
  const auto plan = run("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 "
                        "--precision fp8 --json");
  ASSERT_EQ(plan.code, 0) << plan.err;
  EXPECT_NE(json::parse(plan.out)["megatron_args"].get<std::string>().find("--fp8-format hybrid"), std::string::npos);
}

TEST(FirstHour, ShardingIsCostedWhereAFrameworkRunsIt) {
  // ZeRO-2/3 as DeepSpeed and FSDP run them without pipelining, as
  // PyTorch's pipelining runs FSDP with it (its schedules only); the
  // overlaps are of a once-per-step sync.
  const std::string base = "simulate --model llama3-8b --hardware h100-sxm --seq 2048 -m 8 --dp 4 ";
  expect_refused(base + "--pp 2 --zero 3 --schedule ZBH2", "ZBH2 is not one (it runs in the Zero Bubble fork");
  expect_refused(base + "--pp 1 --zero 2 --overlap-grad-reduce", "ZeRO-2/3 on one pipeline rank reduce and gather");
  for (const char* zero : {"1", "2", "3"}) {
    EXPECT_EQ(run(base + "--pp 1 --zero " + zero + " --json").code, 0) << zero;
    EXPECT_EQ(run(base + "--pp 2 --zero " + zero + " --overlap-grad-reduce --overlap-param-gather --json").code, 0)
        << zero;
  }
}

TEST(FirstHour, PipelinedShardingReplaysAndMapsToWhatFrameworksRun) {
  // A ZeRO-3 plan on one pipeline rank re-costed on four, and back.
  const std::string one = written_plan("zero3-p1.yaml", "--pp 1 --zero 3");
  ASSERT_FALSE(one.empty());
  const CommandResult four = run("simulate --plan " + one + " --pp 4 --dp 2 --layout 'Et*8|t*8|t*8|t*8L' --json");
  ASSERT_EQ(four.code, 0) << four.err;
  const json replay = json::parse(four.out);
  EXPECT_EQ(replay["zero"], 3);
  EXPECT_EQ(replay["pp"], 4);
  // Megatron-LM has no ZeRO-3: under pipelining its distributed optimizer
  // is given in its place and said so; a schedule names who runs it.
  const json plan = json::parse(
      run("plan --model llama3-8b --hardware h100-sxm --gpus 16 --global-batch 64 --seq 4096 --pp 4 --zero 3 "
          "--schedule ZBVZeroBubble --overlap-grad-reduce --overlap-param-gather --json")
          .out);
  const std::string args = plan["megatron_args"];
  EXPECT_NE(args.find("--use-distributed-optimizer"), std::string::npos) << args;
  EXPECT_NE(args.find("ZeRO-3: not in Megatron-LM, whose distributed optimizer is ZeRO-1 (given in its place"),
            std::string::npos)
      << args;
  EXPECT_NE(args.find("schedule ZBVZeroBubble: not in Megatron-LM's built-in schedules (PyTorch's pipelining and the "
                      "Zero Bubble fork run it)"),
            std::string::npos)
      << args;
  // On one pipeline rank ZeRO-3 syncs per micro-batch: the overlaps do not
  // apply, and the warning says why.
  const CommandResult flat =
      run("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 32 --seq 4096 "
          "--pp 1 --overlap-grad-reduce --overlap-param-gather --verbose");
  ASSERT_NE(flat.out.find("ZeRO-3"), std::string::npos) << flat.out;  // the best plan on one rank shards the weights
  EXPECT_NE(flat.out.find("warning: --overlap-grad-reduce (its ZeRO-3 on one pipeline rank syncs beside each "
                          "micro-batch's passes) does not apply"),
            std::string::npos)
      << flat.out;
}

TEST(FirstHour, OptionValuesCli11CannotReadSayWhatToGive) {
  const std::string base = "simulate --model llama3-8b --hardware h100-sxm ";
  expect_refused(base + "--zero 1.5", "--zero 1.5: give a whole number, e.g. --zero 2");
  expect_refused(base + "--tp abc", "--tp abc: give a number");
  expect_refused(base + "--schedule-csv " + kData + "/deadlock_2rank.csv",
                 "with --model the schedule is generated from --schedule");
  expect_refused(base + "--pp 4 --dp 2 --overlap-param-gather", "give --zero 1 with it");
}

TEST(FirstHour, AFixedZeroStageIsTheBestPlansOrRefused) {
  const std::string base = "plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 ";
  const json two = json::parse(run(base + "--zero 2 --json").out);
  EXPECT_EQ(two["best"]["zero"], 2);
  // Pipelined, ZeRO-2 holds more than ZeRO-1 for the same time; here the
  // best ZeRO-2 plan is one pipeline rank.
  EXPECT_EQ(two["best"]["pp"], 1);
  EXPECT_GT(two["best"]["dp"].get<int>() * two["best"]["cp"].get<int>(), 1);
  // No layout left with replicas to shard over: refused, naming what to relax.
  expect_refused(base + "--tp 8 --zero 1", "relax --tp, --zero");
}

TEST(FirstHour, SeveralChunksOnOneRankOnlyWhenAskedForInFull) {
  // One rank has no bubble for chunks to fill: p = 1 with v > 1 is searched
  // only when --pp 1 and the chunks (a schedule or --virtual) are both given.
  const std::string base = "plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 --json ";
  for (const char* asked : {"--pp 1 --virtual 2", "--pp 1 --schedule ZBV"}) {
    const CommandResult result = run(base + asked);
    ASSERT_EQ(result.code, 0) << asked << ": " << result.err;
    EXPECT_EQ(json::parse(result.out)["best"]["virtual"], 2) << asked;
  }
  const json searched = json::parse(run(base + "--schedule ZBV").out);
  EXPECT_GT(searched["best"]["pp"].get<int>(), 1);
}

TEST(FirstHour, SimulateUsesOnlyTheGpusAndMeasurementsItHas) {
  // Two nodes of 8 hold no 32-GPU layout; tensor parallelism stays in a node.
  const std::string cluster = write_temp("two-nodes.yaml", "base: h100-sxm\nname: two-nodes\nnodes: 2\n");
  expect_refused("simulate --model llama3-8b --hardware " + cluster + " --tp 8 --pp 4 --seq 2048",
                 "t x c x p x d = 32 GPUs exceeds two-nodes's 16 GPUs (2 nodes of 8)");
  expect_refused("simulate --model gpt3-175b --hardware h100-sxm --tp 16 --pp 8 --seq 2048",
                 "--tp 16: tensor-parallel groups of 16 GPUs do not each lie in one node or NVLink domain of 8 GPUs on h100-sxm");
  // Measured passes are the profile's machine's and precision's.
  const std::string profile = kConfigs + "/profiles/gpt2-small-cpu-epyc.yaml";
  expect_refused("simulate --model gpt2-small --hardware cpu --pp 2 --seq 128 --profile " + profile +
                     " --precision fp8",
                 "not FP8 ones: use --precision bf16 with --profile");
  const std::string plan = temp_path("profiled-plan.yaml");
  ASSERT_EQ(run("plan --model gpt2-small --hardware cpu --gpus 2 --global-batch 4 --seq 128 --pp 2 --profile " +
                profile + " --out " + plan)
                .code,
            0);
  expect_refused("simulate --plan " + plan + " --hardware h100-sxm", "give --profile with that hardware's own profile");
  EXPECT_EQ(run("simulate --plan " + plan + " --hardware cpu --profile " + profile).code, 0);
}

TEST(FirstHour, AStudyWithoutAnyResultIsRefused) {
  const std::string study = write_temp("no-results.yaml", "base: {tf: 1ms, tb: 1ms, tp: 4}\n"
                                                          "sweep: {grid: {microbatches: [8, 16]}}\n"
                                                          "metrics: [bubble_rate]\n");
  const CommandResult result = run("study " + study + " --out " + temp_path("no-results"));
  EXPECT_EQ(result.code, 2) << result.out;
  EXPECT_NE(result.err.find("no point of the study has a result; the first says:"), std::string::npos) << result.err;
}

TEST(FirstHour, SequenceLengthAndGpuCountAreChecked) {
  expect_refused("simulate --model llama3-70b --hardware h100-sxm --pp 4 --seq 100000",
                 "exceeds llama3-70b's context of 8192 tokens");
  expect_refused("model show gpt2-small --seq 4096 --allow-long-context", "1024 learned positions");
  const CommandResult long_context =
      run("plan --model llama3-8b --hardware h100-sxm --gpus 64 --global-batch 64 --seq 16384 --allow-long-context "
          "--recompute full --json");
  ASSERT_EQ(long_context.code, 0) << long_context.err;
  EXPECT_NE(json::parse(long_context.out)["warnings"].dump().find("beyond llama3-8b's context"), std::string::npos);
  const CommandResult odd = run("plan --model llama3-70b --hardware h100-sxm --gpus 63 --global-batch 256 --json");
  ASSERT_EQ(odd.code, 0) << odd.err;
  const json plan = json::parse(odd.out);
  EXPECT_NE(plan["warnings"].dump().find("63 GPUs do not fill whole nodes of 8"), std::string::npos);
  for (const json* candidate : {&plan["best"], &plan["top"][0]}) {
    for (const auto& layers : (*candidate)["stage_layers"]) EXPECT_GE(layers.get<int>(), 1) << candidate->dump();
  }
}

TEST(FirstHour, AStudyChecksItsMetricsOnTheFirstPointAndKeepsGoodOnes) {
  const std::string bad = write_temp("bad-metric.yaml",
                                     "base: {tf: 1ms, tb: 1ms}\nsweep: {grid: {microbatches: [8, 16]}}\n"
                                     "metrics: [bubble_rate, ranks_detail.0.peak_memory_byte]\n");
  const std::string dir = temp_path("bad-metric");
  const CommandResult refused = run("study " + bad + " --out " + dir);
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("did you mean ranks_detail.*.peak_memory_bytes?"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/results.csv"));
  // An index picks a rank; a rank only some points have leaves only its cell empty.
  const std::string uneven = write_temp("uneven.yaml",
                                        "base: {tf: 1ms, tb: 1ms}\nsweep: {grid: {stages: [2, 4]}}\n"
                                        "metrics: [bubble_rate, ranks_detail.3.busy_ms]\n");
  const std::string out = temp_path("uneven");
  ASSERT_EQ(run("study " + uneven + " --out " + out).code, 2);  // the first point (p = 2) has no rank 3
  const std::string reversed = write_temp("reversed.yaml",
                                          "base: {tf: 1ms, tb: 1ms}\nsweep: {grid: {stages: [4, 2]}}\n"
                                          "metrics: [bubble_rate, ranks_detail.3.busy_ms]\n");
  ASSERT_EQ(run("study " + reversed + " --out " + out).code, 0);
  const json results = json::parse(slurp(out + "/results.json"));
  EXPECT_TRUE(results["points"][1]["metrics"]["bubble_rate"].is_number());
  EXPECT_TRUE(results["points"][1]["metrics"]["ranks_detail.3.busy_ms"].is_null());
  EXPECT_TRUE(results["points"][1].contains("missing"));
}

TEST(FirstHour, ClosedFormsMayNameTheOutputsNumbers) {
  // The README's study: `stages` is no option it sets, but its output's.
  const std::string study = write_temp(
      "readme-study.yaml",
      "mode: simulate\nbase: {tf: 1ms, tb: 1ms, tw: 1ms}\nsweep:\n  grid:\n    schedule: [GPipe, 1F1B, ZBH2]\n"
      "    microbatches: [16, 32, 64]\nmetrics: [bubble_rate]\nplots:\n"
      "  - {name: bubble, kind: line, x: microbatches, y: bubble_rate, series: schedule, y_unit: \"%\",\n"
      "     reference: [{label: \"(p-1)/(m+p-1)\", expression: \"(stages-1)/(microbatches+stages-1)\", series: 1F1B}]}\n");
  const std::string dir = temp_path("readme-study");
  const CommandResult result = run("study " + study + " --out " + dir);
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(slurp(dir + "/bubble.svg").find("stroke-dasharray"), std::string::npos);
  const std::string typo = write_temp("typo-study.yaml", slurp(study).replace(slurp(study).find("stages-1)/"), 6, "stagez"));
  const CommandResult refused = run("study " + typo + " --out " + dir);
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("'stagez'"), std::string::npos) << refused.err;
}

TEST(FirstHour, EveryScheduleWorksWithModelsAndDrawsOneChart) {
  const std::string svg = temp_path("all.svg");
  const CommandResult times = run("simulate --schedule all -p 4 -m 8 --tf 1 --tb 1 --tw 1 --svg " + svg);
  ASSERT_EQ(times.code, 0) << times.err;
  const std::string chart = slurp(svg);
  for (const char* name : {"GPipe |", "1F1B |", "ZBH2 |", "DualPipeV |"}) EXPECT_NE(chart.find(name), std::string::npos) << name;
  const CommandResult model =
      run("simulate --schedule all --model llama3-70b --hardware h100-sxm --pp 4 --tp 8 -m 8 --json");
  ASSERT_EQ(model.code, 0) << model.err;
  const json rows = json::parse(model.out)["comparison"];
  ASSERT_EQ(rows.size(), pipeplan::sim::schedule_families().size());
  const auto searched = std::find_if(rows.begin(), rows.end(), [](const json& row) { return row["schedule"] == "ZBAuto"; });
  ASSERT_NE(searched, rows.end());  // searched within what each GPU leaves for activations
  EXPECT_FALSE(searched->contains("skipped")) << searched->dump();
  for (const auto& row : rows) {
    if (row.contains("skipped")) continue;
    for (const char* key : {"iteration_time_s", "tokens_per_s", "bubble_rate", "peak_memory_bytes", "fits"}) {
      EXPECT_TRUE(row.contains(key)) << row.dump();
    }
  }
  expect_refused("simulate --schedule all -p 4 -m 8 --tf 1 --tb 1 --trace " + temp_path("t.json"),
                 "--trace has no effect with --schedule all");
}

TEST(FirstHour, NamesAreSuggestedAndAliasesAccepted) {
  expect_refused("plan --model llama3-70b --hardware h100-sxm --gpus 8 --global-batch 8 --dpp 2",
                 "unknown option --dpp for `pipeplan plan`; did you mean --pp or --dp?");
  expect_refused("simulat", "unknown command 'simulat' for `pipeplan`; did you mean simulate?");
  expect_refused("simulate --model llama3-450b --hardware h100-sxm", "did you mean");
  EXPECT_EQ(run("model show llama3-405b --json").code, 0);          // an alias of llama3.1-405b
  EXPECT_EQ(run("model show Meta-Llama-3-70B --json").code, 0);     // a spelling of llama3-70b
  EXPECT_EQ(run("hardware show h100 --json").code, 0);              // an alias of h100-sxm
  const json hardware = json::parse(run("hardware show H100 --json").out);
  EXPECT_EQ(hardware["name"], "h100-sxm");
  EXPECT_EQ(hardware["gpu"]["usable_memory_bytes"], 81604378624LL);
  EXPECT_NE(run("model list").out.find("70.55B"), std::string::npos);
}

TEST(FirstHour, PyTorchCsvsWithRuntimeCellsAndOverlappedPairs) {
  const std::string csv = write_temp("runtime.csv", "0UNSHARD,0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD,0RESHARD\n"
                                                    "1UNSHARD,1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD,1RESHARD\n");
  const CommandResult result = run("simulate --schedule-csv " + csv + " --tf 1 --tb 1 --json");
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(json::parse(result.out)["notes"].dump().find("6 UNSHARD/RESHARD/REDUCE_GRAD cells"), std::string::npos);
  // DualPipeV's pairs: PyTorch's runtime runs their halves in turn.
  const std::string pairs = temp_path("pairs.csv");
  ASSERT_EQ(run("schedule --schedule DualPipeV -p 4 -m 8 --csv-out " + pairs).code, 0);
  const std::string costs = " --tf 1 --tb 3 --tw 1 --tcomm 0.7 --json";
  const json sequential = json::parse(run("simulate --schedule-csv " + pairs + costs).out);
  const json together = json::parse(run("simulate --schedule-csv " + pairs + costs + " --overlap-f-b together").out);
  const json generated = json::parse(run("simulate --schedule DualPipeV -p 4 -m 8" + costs).out);
  EXPECT_EQ(together["cost_ms"], generated["cost_ms"]);  // generated pairs start together
  EXPECT_LT(sequential["cost_ms"].get<double>(), together["cost_ms"].get<double>());
  // Interleaved1F1B with fewer micro-batches than ranks, as PyTorch runs it.
  EXPECT_EQ(run("schedule --schedule Interleaved1F1B -p 4 -m 3 -v 2").code, 0);
}

}  // namespace
