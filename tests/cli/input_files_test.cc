// The files a user writes or edits (plan files, hardware descriptions):
// each bad field refused at its line, what a file leaves optimistic said
// beside the figures, a stale plan flagged on replay.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace {

using namespace pipeplan::testing;
using nlohmann::json;

TEST(InputFiles, MemoryCapsAreRealAndKeptInThePlan) {
  const std::string base = "plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 2048 ";
  expect_refused(base + "--memory-cap 200GiB", "more than the 80.00 GiB of a h100-sxm GPU");
  expect_refused(base + "--memory-cap 80", "--memory-cap 80 is 80 bytes: give a unit");
  expect_refused("simulate --model llama3-8b --hardware h100-sxm --pp 4 --memory-cap 100GB", "more than the 80.00 GiB");
  const std::string plan = temp_path("capped-plan.yaml");
  ASSERT_EQ(run(base + "--memory-cap 30GiB --out " + plan).code, 0);
  EXPECT_NE(slurp(plan).find("memory_cap_bytes: 32212254720"), std::string::npos) << slurp(plan);
  const json replay = json::parse(run("simulate --plan " + plan + " --json").out);
  EXPECT_EQ(replay["memory_limit_bytes"], 32212254720LL);
  // Another GPU's default is its own usable memory.
  const json other = json::parse(run("simulate --plan " + plan + " --hardware h200-sxm --json").out);
  EXPECT_GT(other["memory_limit_bytes"].get<double>(), 100e9);
}

TEST(InputFiles, PlanFilesRefuseUnknownKeysAndKeepChunksAcrossLoopedSchedules) {
  const std::string plan =
      written_plan("looped-plan.yaml", "--pp 4 --schedule Interleaved1F1B --virtual 2 --precision fp8");
  ASSERT_FALSE(plan.empty());
  const std::string text = slurp(plan);
  const std::string typo = write_temp("typo-plan.yaml", text + "tp_comm_overlp: true\n");
  expect_refused("simulate --plan " + typo, "unknown key 'tp_comm_overlp' in the plan");
  // LoopedBFS in place of Interleaved1F1B keeps the plan's 2 chunks per rank.
  const CommandResult looped = run("simulate --plan " + plan + " --schedule LoopedBFS --json");
  ASSERT_EQ(looped.code, 0) << looped.err;
  const json replay = json::parse(looped.out);
  EXPECT_EQ(replay["virtual"], 2);
  EXPECT_EQ(replay["precision"], "fp8");
  EXPECT_NE(run("simulate --plan " + plan).out.find(", fp8\n"), std::string::npos);
}

TEST(InputFiles, PlanFileFieldsAreRefusedAtTheirLine) {
  const std::string plan = written_plan("fields-plan.yaml", "--pp 2 --tp 2 --schedule 1F1B");
  ASSERT_FALSE(plan.empty());
  const std::string text = slurp(plan);
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string edited = text;
    const std::size_t at = edited.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) edited.replace(at, from.size(), to);
    return "simulate --plan " + write_temp("edited-plan.yaml", edited);
  };
  const std::string layout =
      text.substr(text.find("layout: "), text.find('\n', text.find("layout: ")) - text.find("layout: "));
  expect_refused(with("pp: 2", "pp: -8"), "edited-plan.yaml:8:5: 'pp' must be >= 1 (got -8)");
  expect_refused(with("seq: 2048", "seq: -5"), "'seq' must be >= 1 (got -5)");
  expect_refused(with("recompute: none", "recompute: some"), "'recompute' must be none, selective or full, got 'some'");
  expect_refused(with("schedule: 1F1B", "schedule: Foo"), "edited-plan.yaml:12:11: unknown schedule 'Foo'");
  expect_refused(with(layout, "layout: \"Et*16|t*16|tL\""), "'layout' has 3 stages but pp x virtual is 2 x 1 = 2");
  expect_refused(with(layout, "layout: \"Et*16|t*17L\""), ": 'layout' 'Et*16|t*17L': it holds 33 blocks");
  // Replayed as written, a plan gives its own prediction back; a stale one
  // is flagged.
  const json fresh = json::parse(run("simulate --plan " + plan + " --json").out);
  EXPECT_FALSE(fresh.contains("notes"));
  const std::string predicted = "iteration_time_s: ";
  const std::size_t at = text.find(predicted) + predicted.size();
  const std::string stale = with(text.substr(at, text.find('\n', at) - at), "1.0");
  const CommandResult flagged = run(stale);
  EXPECT_NE(flagged.out.find("note: the plan file predicted 1.000 s per iteration"), std::string::npos)
      << flagged.out;
}

TEST(InputFiles, HardwareFilesSayWhatTheyLeaveOptimistic) {
  // Without gpu.efficiency.matmul GEMMs run at the tiles' full peak; without
  // runtime nothing is paid outside the kernels: said beside the figures.
  const std::string bare = write_temp("bare-gpu.yaml", R"(name: bare
gpu: {peak_flops: {bf16: 989TFLOP/s}, memory: 80GiB, memory_bandwidth: 3.35TB/s}
node: {gpus: 8, link_bandwidth: 450GB/s}
network: {bandwidth: 400Gb/s}
)");
  const CommandResult result = run("simulate --model llama3-8b --hardware " + bare + " --pp 2 --seq 2048 --json");
  ASSERT_EQ(result.code, 0) << result.err;
  const std::string source = json::parse(result.out)["cost_source"];
  EXPECT_NE(source.find("bare gives no gpu.efficiency.matmul: GEMMs at 100 % of peak"), std::string::npos) << source;
  EXPECT_NE(source.find("bare gives no runtime"), std::string::npos) << source;
  const CommandResult shipped = run("simulate --model llama3-8b --hardware h100-sxm --pp 2 --seq 2048 --json");
  EXPECT_EQ(json::parse(shipped.out)["cost_source"], "analytical model");
  // Hints that agree with the rule they state.
  const auto refused_hw = [](const std::string& yaml, const std::string& needle) {
    expect_refused("simulate --model llama3-8b --pp 2 --hardware " + write_temp("bad-hw.yaml", yaml), needle);
  };
  refused_hw("base: h100-sxm\nnode: {gpus: -8}\n", "node.gpus: '-8' must be a whole number >= 1");
  refused_hw("base: h100-sxm\ngpu: {efficiency: {matmul: {max: -0.5}}}\n", "give a fraction between 0 and 1");
  refused_hw("", "bad-hw.yaml:1:1: the file is empty");
  refused_hw("base: h100-sxm\ngpu: {peak_flops: {bf16: 0}}\n", "gpu.peak_flops.bf16 must be above 0");
}

}  // namespace
