// `pipeplan serve`'s search: memory per stage, the TP against PP trade-off
// in direction, the highest rate under targets, and every bad input named.
#include "planner/serve/serve_plan.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "common/error.h"
#include "models/layers.h"
#include "models/serving_costs.h"
#include "planner/serve/serve_args.h"
#include "tests/support/cli_support.h"

namespace {

using namespace pipeplan;

planner::ServeOptions llama70b_on_8_h100() {
  planner::ServeOptions options;
  options.model = models::load_model("llama3-70b");
  options.hardware = models::load_hardware("h100-sxm");
  options.gpus = 8;
  options.replicas = 1;
  options.workload.requests = 600;
  options.threads = 1;
  return options;
}

double throughput(planner::ServeOptions options, int tp, int pp, int concurrency) {
  options.tp = tp;
  options.pp = pp;
  options.workload.concurrency = concurrency;
  return planner::plan_serving(options).candidates.front().summary.output_tokens_per_s;
}

// One request at a time, a pipeline of 8 runs its tokens through one GPU's
// memory bandwidth after another while 8-way TP reads all eight at once
// (vLLM #15330: PP decode several times slower at low concurrency); with
// enough requests to fill the stages, PP catches up.
TEST(ServePlan, PipelineLosesAloneAndCatchesUpWhenFull) {
  const planner::ServeOptions options = llama70b_on_8_h100();
  const double tp_alone = throughput(options, 8, 1, 1), pp_alone = throughput(options, 1, 8, 1);
  const double tp_full = throughput(options, 8, 1, 256), pp_full = throughput(options, 1, 8, 256);
  EXPECT_LT(pp_alone, tp_alone / 3);
  EXPECT_GT(pp_full / tp_full, 0.6);
  EXPECT_GT(pp_full / tp_full, 2 * (pp_alone / tp_alone));
}

// Without tensor parallelism every stage holds its layers' BF16 weights:
// the stages add up to the model's parameters, twice over in bytes.
TEST(ServePlan, StageWeightsAddUpToTheModel) {
  planner::ServeOptions options = llama70b_on_8_h100();
  options.tp = 1;
  options.pp = 4;
  options.replicas = 2;
  options.workload.concurrency = 4;
  const planner::ServePlan plan = planner::plan_serving(options);
  const planner::ServeCandidate& best = plan.candidates.front();
  ASSERT_EQ(best.stages.size(), 4u);
  std::int64_t weights = 0;
  for (const planner::StageMemory& stage : best.stages) {
    weights += stage.weights;
    EXPECT_EQ(stage.kv_tokens, stage.kv_cache / (stage.layers * 4096));  // 2 x 8 heads x 128 x 2 bytes per layer
  }
  const models::LayerKinds kinds = models::expand_layer_kinds(options.model, {});
  EXPECT_EQ(weights, 2 * kinds.total_params);
}

TEST(ServePlan, HighestRateMeetsTheTargets) {
  planner::ServeOptions options = llama70b_on_8_h100();
  options.tp = 8;
  options.workload.requests = 300;
  options.tpot_p99_s = 0.03;
  options.ttft_p99_s = 1.0;
  const planner::ServePlan plan = planner::plan_serving(options);
  const planner::ServeCandidate& best = plan.candidates.front();
  ASSERT_TRUE(best.meets);
  EXPECT_GT(best.rate, 0);
  EXPECT_LE(best.summary.tpot_s.p99, 0.03);
  options.workload.rate = 2 * best.rate;
  options.ttft_p99_s.reset();
  options.tpot_p99_s.reset();
  EXPECT_GT(planner::plan_serving(options).candidates.front().summary.tpot_s.p99, 0.03);
}

std::string error_of(const planner::ServeOptions& options) {
  try {
    planner::plan_serving(options);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(ServePlan, BadInputIsNamed) {
  planner::ServeOptions options = llama70b_on_8_h100();
  options.workload.concurrency = 4;
  planner::ServeOptions big = options;
  big.model = models::load_model("llama3.1-405b");
  big.gpus = 2;
  big.replicas.reset();
  EXPECT_NE(error_of(big).find("does not serve on 2 x h100-sxm at any layout"), std::string::npos) << error_of(big);
  planner::ServeOptions long_prompt = options;
  long_prompt.workload.prompt = {8000, 8000};
  long_prompt.workload.output = {500, 500};
  EXPECT_NE(error_of(long_prompt).find("context of 8192"), std::string::npos);
  planner::ServeOptions no_rate = options;
  no_rate.workload.concurrency = 0;
  no_rate.workload.rate = 0;
  EXPECT_NE(error_of(no_rate).find("--rate"), std::string::npos);
  planner::ServeOptions strict = options;
  strict.tpot_p99_s = 1e-4;
  EXPECT_NE(error_of(strict).find("the best reached are p99 TTFT"), std::string::npos) << error_of(strict);
  planner::ServeOptions no_load = options;
  no_load.workload.concurrency = 0;
  EXPECT_NE(error_of(no_load).find("latency targets"), std::string::npos);
}

TEST(ServeArgs, CommandLines) {
  EXPECT_EQ(planner::hugging_face_id(models::load_model("llama3-70b")), "meta-llama/Meta-Llama-3-70B");
  EXPECT_EQ(planner::hugging_face_id(models::load_model("deepseek-v3")), "deepseek-ai/DeepSeek-V3");
  planner::ServeOptions options = llama70b_on_8_h100();
  planner::ServeCandidate plan;
  plan.tp = 4;
  plan.pp = 2;
  const planner::ServeCommands commands = planner::serve_commands(options, plan);
  EXPECT_NE(commands.vllm.find("--tensor-parallel-size 4 --pipeline-parallel-size 2"), std::string::npos);
  EXPECT_NE(commands.sglang.find("--tp-size 4 --pp-size 2"), std::string::npos);
  EXPECT_NE(commands.trtllm.find("--tp_size 4 --pp_size 2"), std::string::npos);
}

TEST(ServeCli, BadInputIsOneLineAndExit2) {
  namespace cli = pipeplan::testing;
  const std::string trace =
      cli::write_temp("serve-cli-requests.csv", "arrival_s,prompt_tokens,output_tokens\n0,8,8\n");
  const std::string long_row =
      cli::write_temp("serve-cli-long.csv", "arrival_s,prompt_tokens,output_tokens\n0,8,8\n1,8000,800\n");
  const std::string h100 = "--hardware h100-sxm ";
  for (const std::string& args :
       {h100 + "--rate 0", h100 + "--rate -3", h100 + "--concurrency 2 --rate 1", h100 + "--weights int4 --rate 1",
        h100 + "--prompt-tokens 9000 --rate 1", h100 + "--request-trace /no/such.csv",
        h100 + "--rate 1 --ttft-p99 1ms --tpot-p99 1ms", h100 + "--request-trace " + trace + " --seed 2",
        h100 + "--concurrency 2 --seed 3", h100 + "--request-trace " + long_row, h100 + "--rate 1 --block-size 7",
        h100 + "--rate 1 --tp 0", h100 + "--rate 1 --seed -1", std::string("--hardware a100-80gb --rate 1 --weights fp8"),
        h100 + "--rate 1e-300"}) {
    const cli::CommandResult result = cli::run("serve --model llama3-70b --gpus 8 " + args);
    EXPECT_EQ(result.code, 2) << args << "\n" << result.err;
    EXPECT_EQ(cli::lines(result.err), 1u) << args << "\n" << result.err;
  }
}

}  // namespace
