// The plan report a person reads in a minute (the main job: Llama 3 70B on
// 64 H100s), and a plan kept to Megatron-LM whose every printed flag its
// argument parser defines (tests/support/megatron_flags.h).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/support/cli_support.h"
#include "tests/support/megatron_flags.h"
#include "tests/support/temp_files.h"

namespace {

using namespace pipeplan::testing;

const std::string kMainJob = "plan --model llama3-70b --hardware h100-sxm --gpus 64 --global-batch 256 --seq 8192";

TEST(PlanReport, TheDefaultReportIsAtMostFortyLinesOfAtMost120Columns) {
  const CommandResult result = run(kMainJob);
  ASSERT_EQ(result.code, 0) << result.err;
  std::istringstream lines(result.out);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) EXPECT_LE(line.size(), 120u) << line;
  EXPECT_LE(count, 40);
  for (const char* part : {"best: ", " per step, ", "fits", "best plan each framework runs:", "Megatron-LM ",
                           "torchtitan ", "DeepSpeed ", "PyTorch pipelining "}) {
    EXPECT_NE(result.out.find(part), std::string::npos) << part;
  }
  // The whole report is a flag away.
  const CommandResult verbose = run(kMainJob + " --verbose --pareto 3");
  ASSERT_EQ(verbose.code, 0);
  EXPECT_NE(verbose.out.find("Pareto front (iteration time against peak memory):"), std::string::npos);
  std::istringstream front(verbose.out.substr(verbose.out.find("Pareto front (iteration time against peak memory):")));
  std::string line;
  std::getline(front, line);  // the title
  std::getline(front, line);  // the header
  int rows = 0;
  while (std::getline(front, line) && !line.empty()) ++rows;
  EXPECT_EQ(rows, 3);
}

TEST(PlanReport, KeptToMegatronLmEveryPrintedFlagIsOneItsParserDefines) {
  const CommandResult result = run(kMainJob + " --framework megatron-lm");
  ASSERT_EQ(result.code, 0) << result.err;
  const std::size_t start = result.out.find("Megatron-LM arguments:\n");
  ASSERT_NE(start, std::string::npos) << result.out;
  std::string arguments = result.out.substr(start + 23);
  EXPECT_NE(arguments.find("--pipeline-model-parallel-size"), std::string::npos);
  EXPECT_EQ(undefined_megatron_flags(arguments), "");
  EXPECT_NE(result.out.find("within Megatron-LM core_r0.14.0"), std::string::npos);
}

TEST(PlanReport, KeptToDeepSpeedItsConfigHoldsItsBatchIdentity) {
  // DeepSpeed asserts train_batch_size = micro-batch x accumulation steps x
  // data-parallel GPUs (config-json.md); its pipeline engine runs one chunk
  // per rank in 1F1B with ZeRO-1 at most.
  const std::string file = temp_path("deepspeed.json");
  const CommandResult result = run(kMainJob + " --framework deepspeed --json --deepspeed-out " + file);
  ASSERT_EQ(result.code, 0) << result.err;
  const nlohmann::json plan = nlohmann::json::parse(result.out);
  std::ifstream in(file);
  const nlohmann::json config = nlohmann::json::parse(in);
  const nlohmann::json& best = plan["best"];
  EXPECT_EQ(config["train_batch_size"].get<int>(), config["train_micro_batch_size_per_gpu"].get<int>() *
                                                       config["gradient_accumulation_steps"].get<int>() *
                                                       best["dp"].get<int>());
  EXPECT_EQ(config["zero_optimization"]["stage"], best["zero"]);
  EXPECT_LE(best["zero"].get<int>(), 1);
  EXPECT_TRUE(best["pp"] == 1 || best["schedule"] == "1F1B");
}

TEST(PlanReport, AFrameworkThatCannotRunAFixedScheduleIsOneLineExitTwo) {
  expect_refused(kMainJob + " --framework megatron-lm --schedule ZBV", "--schedule ZBV: Megatron-LM");
  expect_refused(kMainJob + " --framework megatronlm", "--framework 'megatronlm': use megatron-lm");
}

}  // namespace
