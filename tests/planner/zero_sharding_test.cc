// ZeRO's stages as a searched axis: the state each rank holds against the
// ZeRO paper's formulas, and the communication each stage adds: ZeRO-2
// reduce-scatters every micro-batch's gradients, ZeRO-3 (FSDP) also gathers
// every layer's weights before its forward and its backward. Source:
// Rajbhandari et al. 2020, ZeRO, Sec. 5.1 and Figure 1 (mixed-precision
// Adam, K = 12: 16 -> 4 + 12/Nd -> 2 + 14/Nd -> 16/Nd bytes per parameter;
// 7.5B parameters on 64 GPUs: 120, 31.4, 16.6 and 1.9 GB). Under
// pipelining ZeRO-2/3 run as PyTorch's pipelining runs FSDP (torchtitan):
// unsharded once per step and held, gradients accumulated whole and
// reduce-scattered once per step.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "models/hardware.h"
#include "models/layers.h"
#include "models/model_config.h"
#include "models/time_model.h"
#include "models/training_state.h"
#include "planner/frameworks/megatron_args.h"
#include "planner/search/plan_search.h"
#include "step/model_simulation.h"

namespace pipeplan {
namespace {

using models::ZeroStage;

TEST(ZeroSharding, StateBytesAreThePapersFormulas) {
  // The paper's fp16 gradients: --grad-reduce-in-bf16's 2 bytes.
  const double psi = 7.5e9;
  const int nd = 64;
  EXPECT_DOUBLE_EQ(models::state_bytes_per_param(ZeroStage::kNone, nd, 2).total(), 16);
  EXPECT_DOUBLE_EQ(models::state_bytes_per_param(ZeroStage::kOptimizer, nd, 2).total(), 4 + 12.0 / nd);
  EXPECT_DOUBLE_EQ(models::state_bytes_per_param(ZeroStage::kGradients, nd, 2).total(), 2 + 14.0 / nd);
  EXPECT_DOUBLE_EQ(models::state_bytes_per_param(ZeroStage::kWeights, nd, 2).total(), 16.0 / nd);
  EXPECT_NEAR(psi * models::state_bytes_per_param(ZeroStage::kNone, nd, 2).total() / 1e9, 120, 0.05);
  EXPECT_NEAR(psi * models::state_bytes_per_param(ZeroStage::kOptimizer, nd, 2).total() / 1e9, 31.4, 0.05);
  EXPECT_NEAR(psi * models::state_bytes_per_param(ZeroStage::kGradients, nd, 2).total() / 1e9, 16.6, 0.05);
  EXPECT_NEAR(psi * models::state_bytes_per_param(ZeroStage::kWeights, nd, 2).total() / 1e9, 1.9, 0.05);
}

models::TrainingShape sharded(ZeroStage zero) {
  models::TrainingShape shape;
  shape.seq_len = 4096;
  shape.tp = 2;
  shape.dp = 8;
  shape.zero = zero;
  return shape;
}

TEST(ZeroSharding, EachStageAddsItsCollectivesToThePasses) {
  const models::ModelConfig model = models::load_model("llama3-8b");
  for (ZeroStage zero : {ZeroStage::kNone, ZeroStage::kOptimizer, ZeroStage::kGradients, ZeroStage::kWeights}) {
    for (const models::LayerCost& layer : models::expand_layers(model, sharded(zero)).layers) {
      const double params = static_cast<double>(layer.params_per_rank);
      using Calls = std::vector<models::CollectiveWork>;
      const Calls gradients{{models::CollectiveKind::kReduceScatter, 4 * params, 1}};
      const Calls weights{{models::CollectiveKind::kAllGather, 2 * params, 1}};
      EXPECT_EQ(layer.backward_weight.shard_collectives, zero >= ZeroStage::kGradients ? gradients : Calls{});
      EXPECT_EQ(layer.forward.shard_collectives, zero == ZeroStage::kWeights ? weights : Calls{});
      EXPECT_EQ(layer.backward_input.shard_collectives, zero == ZeroStage::kWeights ? weights : Calls{});
    }
  }
}

models::HardwareConfig toy_hardware() {
  models::HardwareConfig hw;
  hw.name = "toy";
  hw.gpu.peak_flops_bf16 = 1e15;
  hw.gpu.memory_bandwidth = 1e12;
  hw.gpu.memory = {1.0, 0};
  hw.gpu.sms = 100;
  hw.gpu.collective_sms = 10;
  hw.gpus_per_node = 8;
  hw.node_link = {100e9, 0};
  hw.network = {10e9, 0};
  return hw;
}

TEST(ZeroSharding, CollectivesHideBehindThePassAsFarAsItLasts) {
  // 8 replicas t = 1 apart: one node. An all-gather of 8 GB moves 7/8 of it
  // at 100 GB/s: 70 ms; the pass computes 1e11 bytes of elementwise work at
  // 1 TB/s: 100 ms. All hidden, slowing the compute by 10 of 100 SMs.
  models::TrainingShape shape;
  shape.dp = 8;
  shape.zero = ZeroStage::kWeights;
  models::PassWork pass;
  pass.memory_bytes = 1e11;
  pass.shard_collectives = {{models::CollectiveKind::kAllGather, 8e9, 1}};
  EXPECT_NEAR(models::pass_terms(pass, toy_hardware(), shape).shard_comm_s, 0.07 * 10 / 100, 1e-12);
  // Twice the bytes: 140 ms, 40 ms of it waited for.
  pass.shard_collectives.front().bytes = 16e9;
  EXPECT_NEAR(models::pass_terms(pass, toy_hardware(), shape).shard_comm_s, 0.04 + 0.1 * 10 / 100, 1e-12);
}

step::ModelSimulation simulate(ZeroStage zero, int pp = 1, std::string schedule = "1F1B") {
  step::PipelineSetup setup;
  setup.shape = sharded(zero);
  setup.shape.dp = 16;  // two nodes of data parallelism: the network
  setup.shape.pipelined = pp > 1;
  setup.pp = pp;
  setup.microbatches = 8;
  setup.schedule = std::move(schedule);
  setup.explain = true;
  return step::simulate_model(models::expand_layers(models::load_model("llama3-8b"), setup.shape),
                              models::load_hardware("dgx-h100-cluster"), setup);
}

TEST(ZeroSharding, ZeroThreeCostsTimeAndSavesMemory) {
  const step::ModelSimulation one = simulate(ZeroStage::kOptimizer);
  const step::ModelSimulation two = simulate(ZeroStage::kGradients);
  const step::ModelSimulation three = simulate(ZeroStage::kWeights);
  // Each micro-batch's gathers and reduce-scatters show in the breakdown.
  for (const step::StepTerms& terms : three.terms) EXPECT_GT(terms.shard_comm_s, 0);
  for (const step::StepTerms& terms : one.terms) EXPECT_EQ(terms.shard_comm_s, 0);
  EXPECT_GT(three.pipeline_s, two.pipeline_s);
  EXPECT_GT(two.pipeline_s, one.pipeline_s);
  // The step's own sync: ZeRO-2 gathers the updated weights only, ZeRO-3
  // nothing (its micro-batches gather them).
  EXPECT_LT(two.gradient_sync_s, one.gradient_sync_s);
  EXPECT_EQ(three.gradient_sync_s, 0);
  EXPECT_LT(three.memory.front().weights, one.memory.front().weights);
  EXPECT_LT(two.memory.front().gradients, one.memory.front().gradients);
}

TEST(ZeroSharding, PipelinedStagesSyncOncePerStepAndHoldTheWeightsWhole) {
  // 2 + g + (g + 12)/d bytes per parameter: bf16 weights and fp32
  // gradients whole through the step, their reduced shard and Adam's 12
  // bytes over d.
  models::TrainingShape shape = sharded(ZeroStage::kWeights);
  shape.pipelined = true;
  const models::StateBytes state = models::state_bytes(shape);
  EXPECT_DOUBLE_EQ(state.weights, 2);
  EXPECT_DOUBLE_EQ(state.gradients, 4 + 4.0 / 8);
  EXPECT_DOUBLE_EQ(state.optimizer, 12.0 / 8);
  shape.pipelined = false;
  EXPECT_DOUBLE_EQ(models::state_bytes(shape).total(), (2 + 4 + 12.0) / 8);  // fp32 gradients
  // No collective inside the passes.
  shape.pipelined = true;
  for (const models::LayerCost& layer : models::expand_layers(models::load_model("llama3-8b"), shape).layers) {
    EXPECT_TRUE(layer.forward.shard_collectives.empty());
    EXPECT_TRUE(layer.backward_weight.shard_collectives.empty());
  }
  // On two stages: ZeRO-2 and ZeRO-3 take ZeRO-1's time (one reduce-scatter
  // and one all-gather per step) and hold the gradients' shard on top.
  const step::ModelSimulation one = simulate(ZeroStage::kOptimizer, 2);
  for (ZeroStage zero : {ZeroStage::kGradients, ZeroStage::kWeights}) {
    const step::ModelSimulation sharded_step = simulate(zero, 2);
    EXPECT_DOUBLE_EQ(sharded_step.iteration_time_s, one.iteration_time_s);
    EXPECT_DOUBLE_EQ(sharded_step.gradient_sync_s, one.gradient_sync_s);
    for (const step::StepTerms& terms : sharded_step.terms) EXPECT_EQ(terms.shard_comm_s, 0);
    EXPECT_EQ(sharded_step.memory.front().weights, one.memory.front().weights);
    EXPECT_NEAR(sharded_step.memory.front().gradients, one.memory.front().gradients * (1 + 1.0 / 16), 64);
  }
}

TEST(ZeroSharding, PipelinedShardingRunsOnPyTorchsSchedulesOnly) {
  for (const char* schedule : {"GPipe", "1F1B", "Interleaved1F1B", "InterleavedZeroBubble", "ZBVZeroBubble"}) {
    EXPECT_NO_THROW(simulate(ZeroStage::kWeights, 2, schedule)) << schedule;
  }
  for (const char* schedule : {"ZBH1", "ZBH2"}) {
    try {
      simulate(ZeroStage::kWeights, 2, schedule);
      ADD_FAILURE() << schedule << " was not refused";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("Zero Bubble fork of Megatron-LM"), std::string::npos) << error.what();
    }
  }
  EXPECT_NO_THROW(simulate(ZeroStage::kOptimizer, 2, "ZBH1"));
}

TEST(ZeroSharding, TheSearchShardsWhenMemoryIsTight) {
  planner::PlanRequest request;
  request.model = models::load_model("llama3-70b");
  request.hardware = models::load_hardware("h100-sxm");
  request.gpus = 64;
  request.global_batch = 64;
  request.seq_len = 4096;
  request.cp = 1;
  request.tp = 8;
  request.pp = 1;
  request.memory_cap_bytes = 24.0 * (1 << 30);
  const planner::PlanSearchResult result = planner::search_plans(request, 1);
  ASSERT_FALSE(result.ranked.empty());
  const planner::PlanCandidate& best = result.ranked.front();
  // One stage of 70B over t = 8 holds 8.8B parameters: only ZeRO-3's
  // 2.25 bytes each fit under 24 GiB.
  EXPECT_EQ(best.zero, ZeroStage::kWeights);
  EXPECT_NE(planner::megatron_arguments(best, 64, 4096).find("ZeRO-3: not in Megatron-LM"), std::string::npos);
}

}  // namespace
}  // namespace pipeplan
