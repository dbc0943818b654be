// Outputs do not depend on the thread count: plans with --threads 1 and 3,
// studies with --jobs 1 and 2, byte for byte (the search's own run time
// aside), and simulate run twice.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "tests/support/cli_support.h"
#include "tests/support/study_output_compare.h"

namespace pipeplan::testing {
namespace {

namespace fs = std::filesystem;

std::string without_run_time(const std::string& text) {
  return std::regex_replace(text, std::regex(R"("search_time_s": [0-9.e+-]+)"), "");
}

TEST(Determinism, PlansDoNotDependOnThreads) {
  const std::string problems[] = {
      "--model llama3-70b --hardware h100-sxm --gpus 32 --global-batch 32 --seq 8192",
      "--model llama3-8b --hardware a100-80gb --gpus 16 --global-batch 64 --seq 4096",
      "--model gpt3-175b --hardware h100-sxm --gpus 256 --global-batch 512 --seq 2048",
      "--model mixtral-8x7b --hardware h200-sxm --gpus 32 --global-batch 128 --seq 4096",
      "--model megatron-22b --hardware h100-sxm --gpus 24 --global-batch 48 --seq 2048 --objective memory",
      "--model llama3-70b --hardware h100-sxm --gpus 16 --global-batch 16 --seq 8192 --memory-cap 8GiB",
  };
  for (const std::string& problem : problems) {
    const CommandResult one = run("plan " + problem + " --json --threads 1");
    const CommandResult three = run("plan " + problem + " --json --threads 3");
    EXPECT_EQ(one.code, three.code) << problem;
    EXPECT_EQ(without_run_time(one.out), without_run_time(three.out)) << problem;
    EXPECT_EQ(one.err, three.err) << problem;
  }
}

TEST(Determinism, SimulateGivesTheSameBytesTwice) {
  const std::string args =
      "simulate --model llama3-70b --hardware h100-sxm --pp 4 --tp 8 --microbatches 16 --seq 8192 --schedule all --json";
  const CommandResult first = run(args);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(first.out, run(args).out);
}

TEST(Determinism, StudiesDoNotDependOnJobs) {
  for (const fs::directory_entry& entry : fs::directory_iterator(kConfigs + "/studies")) {
    const std::string out = temp_path("determinism_" + entry.path().stem().string());
    const std::string serial = out + "_serial";
    fs::remove_all(out);
    fs::remove_all(serial);
    // Whole studies (the 405B one searches three times): a hang guard, not a speed limit.
    constexpr int kTimeout = 600;
    ASSERT_EQ(run_with("", "study " + entry.path().string() + " --out " + out + " --jobs 1", kTimeout).code, 0)
        << entry.path();
    fs::rename(out, serial);
    ASSERT_EQ(run_with("", "study " + entry.path().string() + " --out " + out + " --jobs 2", kTimeout).code, 0)
        << entry.path();
    EXPECT_GT(expect_same_files(serial, out), 3u) << entry.path();
  }
}

}  // namespace
}  // namespace pipeplan::testing
