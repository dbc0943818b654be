// A command writes all its files or none, and no two options name one file:
// OutputFiles itself, and `plan` with --out beside a framework file it refuses.
#include "commands/output_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/error.h"
#include "tests/support/cli_support.h"

namespace pipeplan::testing {
namespace {

namespace fs = std::filesystem;

TEST(OutputFiles, WritesEveryFileOrNone) {
  const std::string dir = temp_path("output_files");
  fs::remove_all(dir);
  fs::create_directories(dir);
  commands::OutputFiles files;
  files.add(dir + "/a.txt", "first", "--a");
  files.add(dir + "/missing/b.txt", "second", "--b");
  try {
    files.write_all();
    FAIL() << "a file in a missing folder was written";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("--b: cannot write", 0), 0u) << error.what();
  }
  EXPECT_TRUE(fs::is_empty(dir)) << "the first file (or its temporary) was left behind";

  commands::OutputFiles good;
  good.add(dir + "/a.txt", "first", "--a");
  good.add(dir + "/b.txt", "second", "--b");
  good.write_all();
  EXPECT_EQ(slurp(dir + "/a.txt"), "first");
  EXPECT_EQ(slurp(dir + "/b.txt"), "second");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2u);
}

TEST(OutputFiles, TwoOptionsMayNotNameOneFile) {
  const std::string dir = temp_path("output_files_same");
  fs::create_directories(dir);
  commands::OutputFiles files;
  files.add(dir + "/x.txt", "one", "--out");
  EXPECT_THROW(files.add(dir + "/./x.txt", "two", "--trace"), InputError);
  EXPECT_THROW(files.add(dir + "/sub/../x.txt", "two", "--trace"), InputError);
  files.add(dir + "/y.txt", "two", "--trace");
}

TEST(OutputFiles, PlanWritesNoFileWhenOneIsRefused) {
  const std::string dir = temp_path("plan_refused_files");
  fs::remove_all(dir);
  fs::create_directories(dir);
  // ZBH1 has no Megatron-core or torchtitan form: neither --out nor the TOML is written.
  expect_refused("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 4096 --pp 4 "
                 "--schedule ZBH1 --out " + dir + "/plan.yaml --megatron-bridge-out " + dir + "/bridge.yaml",
                 "--megatron-bridge-out: Megatron-Bridge cannot run the best plan: schedule ZBH1");
  expect_refused("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 4096 "
                 "--framework megatron-bridge --out " + dir + "/same.yaml --megatron-bridge-out " + dir + "/same.yaml",
                 "--out and --megatron-bridge-out both name");
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(CountOptions, NegativeAndZeroCountsAreRefused) {
  const std::string plan = "plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --seq 4096 ";
  expect_refused(plan + "--top -1", "--top: -1 is below 1");
  expect_refused(plan + "--top 0", "--top: 0 is below 1");
  expect_refused(plan + "--threads -5", "--threads: -5 is below 0");
  expect_refused(plan + "--threads 1.5", "--threads: 1.5 is not a whole number");
  const std::string goodput = "goodput --plan " + kConfigs + "/plans/llama3.1-405b-16384-h100.yaml --tokens 15.6T ";
  expect_refused(goodput + "--seed -1", "--seed: -1 is below 0");
  expect_refused(goodput + "--threads -1", "--threads: -1 is below 0");
  expect_refused(goodput + "--runs -3", "--runs: -3 is below 0");
  expect_refused("study " + kConfigs + "/studies/bubble_vs_microbatches.yaml --jobs -2", "--jobs: -2 is below 0");
}

}  // namespace
}  // namespace pipeplan::testing
