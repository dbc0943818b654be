// `pipeplan profile` end to end: the measured table written as YAML and fed
// to `simulate --profile` and `plan --profile`, which name it as their cost
// source; bad input refused with one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/cli_support.h"

namespace {

using namespace pipeplan::testing;

const std::string& tiny_profile_path() {
  static const std::string path = [] {
    const std::string file = temp_path("tiny-profile.yaml");
    const CommandResult result = run("profile --backend cpu --model tiny --micro-batch-size 1,2 --seq 16,32 "
                                     "--warmup 0 --repeats 2 --out " + file);
    EXPECT_EQ(result.code, 0) << result.err;
    EXPECT_NE(result.out.find("(I+W)/2F"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("transformer"), std::string::npos) << result.out;
    return file;
  }();
  return path;
}

TEST(ProfileCli, WritesAProfileThatSimulateUsesAndNames) {
  const CommandResult result = run("simulate --model tiny --hardware cpu --pp 2 --microbatches 4 -b 2 --seq 32 "
                                   "--profile " + tiny_profile_path() + " --json");
  ASSERT_EQ(result.code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  const std::string source = json.at("cost_source").get<std::string>();
  EXPECT_NE(source.find("profile " + tiny_profile_path()), std::string::npos) << source;
  EXPECT_NE(source.find("cpu fp32"), std::string::npos) << source;
}

TEST(ProfileCli, PlanWithAProfileRecordsIt) {
  const std::string plan = temp_path("plan.yaml");
  const CommandResult result = run("plan --model tiny --hardware cpu --gpus 2 --global-batch 4 --seq 32 --profile " +
                                   tiny_profile_path() + " --out " + plan);
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_NE(slurp(plan).find("profile: " + tiny_profile_path()), std::string::npos) << slurp(plan);
  // The report names its costs, and where the plan's shape left the measured ones.
  EXPECT_NE(result.out.find("costs: profile " + tiny_profile_path()), std::string::npos) << result.out;
  const CommandResult beyond =
      run("plan --model tiny --hardware cpu --gpus 2 --global-batch 16 --seq 32 --pp 2 "
          "--micro-batch-size 4 --profile " +
          tiny_profile_path());
  ASSERT_EQ(beyond.code, 0) << beyond.err;
  EXPECT_NE(beyond.out.find("at micro-batch 4 x 32: extrapolated"), std::string::npos) << beyond.out;
  const CommandResult replay = run("simulate --plan " + plan + " --json");
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_NE(replay.out.find("profile " + tiny_profile_path()), std::string::npos);
}

TEST(ProfileCli, BadInputIsRefusedWithOneLine) {
  expect_refused("profile --backend cpu --model nosuch", "nosuch");
  expect_refused("profile --backend tpu --model tiny", "--backend 'tpu'");
  expect_refused("profile --backend cuda --model tiny", "--backend cpu");
  expect_refused("profile --backend cpu --model tiny --seq 1073741824", "--seq");
  expect_refused("profile --backend cpu --model mixtral-8x7b --seq 16", "mixture");
  expect_refused("profile links --backend mpi", "mpirun -np 2");
  const std::string other = write_temp("other-schema.yaml", "schema: 9\ndevice: x\nbackend: cpu\n");
  expect_refused("simulate --model tiny --hardware cpu --pp 2 --profile " + other, "schema version 9");
  expect_refused("simulate --model llama3-8b --hardware cpu --pp 2 --profile " + tiny_profile_path(), "tiny");
  // The shipped Llama 3 8B profile with an MTP module the model file adds:
  // the measured output layer has none.
  const std::string with_mtp =
      write_temp("llama3-8b-mtp.yaml", slurp(kConfigs + "/models/llama3-8b.yaml") + "\nmtp_layers: 1\n");
  expect_refused("simulate --model " + with_mtp + " --hardware h100-sxm --pp 4 --seq 2048 --mtp-layers 1 --profile " +
                     kConfigs + "/profiles/llama3-8b-cpu-epyc.yaml",
                 "a profile measures the output layer without multi-token prediction: drop --mtp-layers");
}

}  // namespace

namespace {

using namespace pipeplan::testing;

// pipeplan maps neither the profiler nor MPI nor CUDA: profile and validate
// run in pipeplan-measure, found beside it, and its absence is one line.
TEST(ProfileCli, MeasuringCommandsNameTheProgramTheyNeedWhenItIsMissing) {
  const std::string dir = temp_path("lonely");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kBinary, dir + "/pipeplan", std::filesystem::copy_options::overwrite_existing);
  for (const char* args : {"profile --backend cuda --model tiny", "validate --plan plan.yaml"}) {
    const CommandResult result = run_with("", std::string(args), 60, dir + "/pipeplan");
    EXPECT_EQ(result.code, 2) << args;
    EXPECT_EQ(lines(result.err), 1u) << result.err;
    EXPECT_NE(result.err.find(dir + "/pipeplan-measure, which is missing"), std::string::npos) << result.err;
  }
  EXPECT_EQ(run_with("", "simulate -p 2 -m 2 --tf 1 --tb 1", 60, dir + "/pipeplan").code, 0);
}

}  // namespace
