// --fp8-param-gather from the command line: refused without FP8 or the
// distributed optimizer, written as Megatron's flag, and refused by the
// frameworks that keep a high-precision copy of every weight.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/cli_support.h"

namespace {

using namespace pipeplan::testing;

const std::string kSimulate =
    "simulate --model llama3-8b --hardware h100-sxm --pp 2 --dp 4 -m 8 --seq 4096 --fp8-param-gather";

TEST(Fp8WeightsCli, RefusedWithoutFpEightOrTheDistributedOptimizer) {
  expect_refused(kSimulate + " --zero 1", "give --precision fp8 with it");
  expect_refused(kSimulate + " --precision fp8", "give --zero 1 with it");
  expect_refused("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 32 --seq 4096 "
                 "--fp8-param-gather --zero 2",
                 "--fp8-param-gather");
  expect_refused("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 32 --seq 4096 --precision fp8 "
                 "--fp8-param-gather --framework torchtitan",
                 "FP8 weights without a bf16 copy");
}

TEST(Fp8WeightsCli, SimulatedAndWrittenForMegatron) {
  const CommandResult fp8 = run(kSimulate + " --zero 1 --precision fp8 --json");
  ASSERT_EQ(fp8.code, 0) << fp8.err;
  EXPECT_TRUE(nlohmann::json::parse(fp8.out)["fp8_param_gather"].get<bool>());
  const CommandResult plan = run("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 32 --seq 4096 "
                                 "--precision fp8 --fp8-param-gather --zero 1 --dp 8 --json");
  ASSERT_EQ(plan.code, 0) << plan.err;
  const auto json = nlohmann::json::parse(plan.out);
  EXPECT_TRUE(json["best"]["fp8_param_gather"].get<bool>());
  EXPECT_NE(json["megatron_args"].get<std::string>().find("--fp8-param-gather"), std::string::npos);
}

}  // namespace
