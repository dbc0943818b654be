// A mixture of experts' layout in what a plan hands on: plan files keep
// ep, etp and the routing, Megatron's arguments the chunks, and an expert
// layout a model cannot take is refused in one line naming its source.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "models/training_shape.h"
#include "planner/frameworks/megatron_args.h"
#include "planner/plan_file.h"
#include "step/stage_split.h"
#include "tests/support/cli_support.h"
#include "tests/support/temp_files.h"

namespace pipeplan {
namespace {

// A plan file of `model` on h100-sxm at 4096 tokens a sequence, its
// layout (t, p, d, b, m) and experts (ep, etp); 1F1B, no split yet.
planner::PlanFile expert_plan_file(const std::string& model, int global_batch,
                                   std::tuple<int, int, int, int, int> layout, int ep, int etp) {
  planner::PlanFile file;
  file.model = model;
  file.hardware = "h100-sxm";
  file.global_batch = global_batch;
  file.seq_len = 4096;
  planner::PlanCandidate& plan = file.plan;
  std::tie(plan.tp, plan.pp, plan.dp, plan.micro_batch_size, plan.microbatches) = layout;
  std::tie(plan.ep, plan.etp) = std::make_tuple(ep, etp);
  plan.schedule = "1F1B";
  plan.virtual_stages = 1;
  return file;
}

// Megatron takes the chunks per rank from a layout string, and from
// --num-virtual-stages-per-pipeline-rank where there is none.
TEST(MoePipeline, MegatronArgumentsGiveTheChunksOnce) {
  planner::PlanCandidate plan;
  std::tie(plan.tp, plan.pp, plan.dp, plan.micro_batch_size, plan.microbatches) = std::make_tuple(1, 2, 1, 1, 4);
  plan.schedule = "Interleaved1F1B";
  plan.virtual_stages = 2;
  plan.split = step::split_from_counts({8, 8, 8, 8}, 32);
  const std::string even = planner::megatron_arguments(plan, 4, 4096);
  EXPECT_NE(even.find("--num-virtual-stages-per-pipeline-rank 2"), std::string::npos) << even;
  EXPECT_EQ(even.find("virtual-pipeline-model-parallel-size"), std::string::npos) << even;
  plan.split = step::split_from_counts({7, 9, 8, 8}, 32);
  const std::string uneven = planner::megatron_arguments(plan, 4, 4096);
  EXPECT_NE(uneven.find("--pipeline-model-parallel-layout"), std::string::npos) << uneven;
  EXPECT_EQ(uneven.find("virtual-stages"), std::string::npos) << uneven;
}

TEST(MoePipeline, PlanFilesKeepTheExpertLayout) {
  planner::PlanFile file = expert_plan_file("deepseek-v3", 64, {2, 1, 32, 1, 2}, 16, 2);
  planner::PlanCandidate& plan = file.plan;
  std::tie(plan.routing.load_imbalance, plan.routing.capacity_factor) = std::make_tuple(1.2, 1.5);
  plan.sequence_parallel = true;
  plan.split = step::split_from_counts({61}, 61);
  const std::string path = testing::write_temp("moe-plan.yaml", planner::write_plan_yaml(file));
  const planner::PlanFile read = planner::read_plan_yaml(path);
  EXPECT_EQ(read.plan.ep, 16);
  EXPECT_EQ(read.plan.etp, 2);
  EXPECT_DOUBLE_EQ(read.plan.routing.load_imbalance, 1.2);
  EXPECT_DOUBLE_EQ(read.plan.routing.capacity_factor, 1.5);
  const models::TrainingShape shape = models::shape_of(read.plan, read.seq_len);
  EXPECT_EQ(shape.ep, 16);
  EXPECT_EQ(shape.expert_tp(), 2);
}

// An expert layout the plan file's model cannot take is refused naming the
// file, whichever of its values or the options made it.
TEST(MoePipeline, APlanFilesBadExpertLayoutNamesTheFile) {
  planner::PlanFile file = expert_plan_file("mixtral-8x7b", 64, {1, 4, 8, 1, 8}, 3, 1);
  planner::PlanCandidate& plan = file.plan;
  plan.split = step::split_from_counts({8, 8, 8, 8}, 32);
  const std::string path = testing::write_temp("bad-ep-plan.yaml", planner::write_plan_yaml(file));
  testing::expect_refused("simulate --plan " + path,
                          path + ": --ep 3 must divide the 8 experts of 'mixtral-8x7b'; use one of 1, 2, 4, 8");
  plan.ep = 8;
  const std::string good = testing::write_temp("good-ep-plan.yaml", planner::write_plan_yaml(file));
  testing::expect_refused("simulate --plan " + good + " --dp 4 --pp 8",
                          good + ": --ep 8 x --etp 1 = 8 must divide t x c x d = 4");
}

TEST(MoePipeline, BadExpertOptionsGetOneLineAndExitTwo) {
  const std::string deepseek = "plan --model deepseek-v3 --hardware h100-sxm --gpus 256 --global-batch 256 --seq 4096 ";
  testing::expect_refused(deepseek + "--ep 3", "--ep 3 must divide the 256 experts");
  testing::expect_refused(deepseek + "--tp 2 --etp 4",
                          "--etp 4: the expert tensor-parallel ranks are taken from --tp 2");
  testing::expect_refused(deepseek + "--moe-load-imbalance 0.5", "--moe-load-imbalance must be between 1");
  testing::expect_refused(deepseek + "--moe-load-imbalance inf", "--moe-load-imbalance must be between 1");
  testing::expect_refused(deepseek + "--moe-a2a-overlap --schedule 1F1B", "--moe-a2a-overlap pairs the steady state");
  testing::expect_refused(deepseek + "--ep 8 --etp 8 --tp 8 --pp 8", "expert layouts left out");
  testing::expect_refused(deepseek + "--etp 3",
                          "--etp 3: the expert tensor-parallel ranks are taken from t, and it "
                          "divides none of the t tried (1, 2, 4, 8)");
  testing::expect_refused("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 16 --ep 2",
                          "'llama3-8b' is a dense model");
  testing::expect_refused(
      "simulate --model deepseek-v3 --hardware h100-sxm --stages 4 --microbatches 8 --seq 4096 "
      "--layers 16,15,15,15 --dp 8 --ep 16",
      "--ep 16 x --etp 1 = 16 must divide t x c x d = 8");
  testing::expect_refused(
      "simulate --model deepseek-v3 --hardware h100-sxm --stages 4 --microbatches 8 --seq 4096 "
      "--layers 16,15,15,15 --tp 2 --dp 8 --ep 8 --no-sequence-parallel",
      "needs --sequence-parallel");
}

}  // namespace
}  // namespace pipeplan
