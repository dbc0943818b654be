// Context parallelism: each of c ranks holds s / c of every sequence (two
// chunks, for causal load balance) and the keys and values go round a ring
// (Megatron / Transformer Engine's p2p context parallelism). Checked against
// closed forms: a rank's tensors are those of a sequence c times shorter,
// its attention is 1/c of the whole, the model's FLOPs do not change, the
// ring's time is the hand sum of its steps, and the weights' replicas (so
// ZeRO's shards and the gradient reduction) are d x c.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "models/hardware.h"
#include "models/layers.h"
#include "models/model_config.h"
#include "models/time_model.h"
#include "models/training_state.h"
#include "planner/frameworks/megatron_args.h"
#include "planner/plan_file.h"
#include "planner/search/plan_search.h"
#include "tests/support/cli_support.h"

namespace pipeplan {
namespace {

models::TrainingShape shape_of(int seq, int cp) {
  models::TrainingShape shape;
  shape.seq_len = seq;
  shape.cp = cp;
  shape.tp = 4;
  shape.sequence_parallel = true;
  return shape;
}

TEST(ContextParallel, ARanksTensorsAreThoseOfASequenceCTimesShorter) {
  const models::ModelConfig model = models::load_model("llama3-70b");
  const models::ModelLayers split = models::expand_layers(model, shape_of(8192, 4));
  const models::ModelLayers shorter = models::expand_layers(model, shape_of(2048, 1));
  for (std::size_t i = 0; i < split.layers.size(); ++i) {
    const models::LayerCost& a = split.layers[i];
    const models::LayerCost& b = shorter.layers[i];
    EXPECT_EQ(a.activation_bytes, b.activation_bytes) << a.name;
    EXPECT_EQ(a.weight_grad_bytes, b.weight_grad_bytes) << a.name;
    EXPECT_EQ(a.output_bytes, b.output_bytes) << a.name;
    EXPECT_EQ(a.forward.gemms, b.forward.gemms) << a.name;
    EXPECT_EQ(a.forward.collectives, b.forward.collectives) << a.name;
    // Blocks add the ring's merges: 3 later steps, each reading and writing
    // the fp32 output of 2048 tokens x 16 heads x 128 on this rank.
    const double merges = a.kind == models::LayerKind::kTransformer ? 3.0 * 2 * 4 * 2048 * 16 * 128 : 0.0;
    EXPECT_DOUBLE_EQ(a.forward.memory_bytes, b.forward.memory_bytes + merges) << a.name;
  }
  // Attention: 2048 queries against all 8192 keys, four times the square of
  // the shorter sequence; the ring step sends this rank's K and V (2 of
  // llama3-70b's 8 KV heads per TP rank, 128 wide, bf16).
  const models::AttentionWork& core = split.layers[1].forward.attention.front();
  EXPECT_DOUBLE_EQ(core.flops(), 4 * shorter.layers[1].forward.attention.front().flops());
  EXPECT_EQ(core.ring, 4);
  EXPECT_DOUBLE_EQ(core.exchange_bytes, 2048.0 * 2 * 2 * 128 * 2);
  EXPECT_DOUBLE_EQ(split.layers[1].backward_input.attention.front().exchange_bytes, 2 * core.exchange_bytes);
}

TEST(ContextParallel, ModelFlopsDoNotDependOnC) {
  // MFU's count is the whole micro-batch's, whichever way it is split.
  const models::ModelConfig model = models::load_model("llama3-70b");
  const double whole = models::model_flops_per_microbatch(models::expand_layers(model, shape_of(8192, 1)), shape_of(8192, 1));
  for (int cp : {2, 4, 8}) {
    const double split = models::model_flops_per_microbatch(models::expand_layers(model, shape_of(8192, cp)),
                                                            shape_of(8192, cp));
    EXPECT_NEAR(split, whole, 1e-12 * whole) << cp;
  }
}

models::HardwareConfig toy_hardware() {
  models::HardwareConfig hw;
  hw.name = "toy";
  hw.gpu.peak_flops_bf16 = 1e15;
  hw.gpu.memory_bandwidth = 2e12;
  hw.gpu.attention = {0.5, 0};  // half of peak at any size
  hw.gpus_per_node = 8;
  hw.node_link = {100e9, 1e-6};
  hw.network = {10e9, 5e-6};
  return hw;
}

TEST(ContextParallel, RingStepsAreTheHandSum) {
  // 4 ranks; a step's block of 1024 queries x 1024 keys, 32 heads of 128:
  // 2 x 32 x 1024^2 x 256 FLOPs. Step 0 is causal ((1024 + 128) / 2048 of
  // it), the three others half dense, each at 0.5 of 1e15.
  const double block = 2.0 * 32 * 1024 * 1024 * 256;
  const double diagonal = block * (1024.0 + 128) / 2048 / 0.5e15;
  const double later = block / 2 / 0.5e15;
  models::TrainingShape shape;
  shape.tp = 1;
  shape.cp = 4;
  models::PassWork pass;
  // Small blocks to send: all hidden, only the SMs they hold cost (none here).
  pass.attention = {{32, 1024, 128, 128, false, 4, 1e6}};
  const models::PassTerms hidden = models::pass_terms(pass, toy_hardware(), shape);
  EXPECT_NEAR(hidden.attention_s, diagonal + 3 * later, 1e-15);
  EXPECT_NEAR(hidden.cp_comm_s, 0, 1e-15);
  // Large blocks: 1 GB at 100 GB/s + 1 us, beside steps 0, 1 and 2.
  pass.attention.front().exchange_bytes = 1e9;
  const double transfer = 1e9 / 100e9 + 1e-6;
  const models::PassTerms exposed = models::pass_terms(pass, toy_hardware(), shape);
  EXPECT_NEAR(exposed.attention_s, diagonal + 3 * later, 1e-15);
  EXPECT_NEAR(exposed.cp_comm_s, (transfer - diagonal) + 2 * (transfer - later), 1e-12);
  // Eight ranks of t = 2 span two nodes: the ring runs on the network.
  shape.tp = 2;
  pass.attention.front().ring = 8;
  const double slow = 1e9 / 10e9 + 5e-6;
  const models::PassTerms across = models::pass_terms(pass, toy_hardware(), shape);
  EXPECT_NEAR(across.attention_s, diagonal + 7 * later, 1e-15);
  EXPECT_NEAR(across.cp_comm_s, (slow - diagonal) + 6 * (slow - later), 1e-12);
}

TEST(ContextParallel, WeightReplicasAreDataTimesContextRanks) {
  // ZeRO-1 shards the optimizer over d x c (Megatron's dp-cp group): d = 2,
  // c = 2 holds what d = 4 does.
  models::TrainingShape shape;
  shape.dp = 2;
  shape.cp = 2;
  EXPECT_EQ(shape.weight_replicas(), 4);
  const models::StateBytes sharded = models::state_bytes_per_param(models::ZeroStage::kOptimizer, shape.weight_replicas());
  // bf16 weights, fp32 gradients, 12 bytes of Adam state over 4 ranks.
  EXPECT_DOUBLE_EQ(sharded.total(), 2 + 4 + 12.0 / 4);
  models::TrainingShape overlapped = shape;
  overlapped.dp = 1;
  overlapped.apply({.overlap_grad_reduce = true});
  EXPECT_TRUE(overlapped.runtime.overlap_grad_reduce);  // c = 2 ranks still reduce gradients
}

planner::PlanRequest long_context_request() {
  planner::PlanRequest request;
  request.model = models::load_model("llama3.1-70b");
  request.hardware = models::load_hardware("h100-sxm");
  request.gpus = 64;
  request.global_batch = 16;
  request.seq_len = 131072;
  return request;
}

TEST(ContextParallel, LongContextPlansUseItAndWithoutItNeedMoreMemory) {
  // Llama 3.1 70B at its 128K context on 64 H100: the search picks c > 1;
  // with c fixed at 1 the smallest peak is higher, and under a cap between
  // the two only context parallelism fits.
  const planner::PlanRequest request = long_context_request();
  const planner::PlanSearchResult open = planner::search_plans(request, 1);
  ASSERT_FALSE(open.ranked.empty());
  const planner::PlanCandidate& best = open.ranked.front();
  EXPECT_GT(best.cp, 1);
  EXPECT_EQ(best.tp * best.cp * best.pp * best.dp, 64);
  EXPECT_NE(planner::megatron_arguments(best, 16, 131072).find("--context-parallel-size " + std::to_string(best.cp)),
            std::string::npos);
  planner::PlanRequest lean = request;
  lean.objective = planner::Objective::kMemory;
  lean.memory_cap_bytes = 1e15;
  const planner::PlanSearchResult lowest = planner::search_plans(lean, 1);
  lean.cp = 1;
  const planner::PlanSearchResult lowest_without = planner::search_plans(lean, 1);
  ASSERT_FALSE(lowest.ranked.empty());
  ASSERT_FALSE(lowest_without.ranked.empty());
  const double with_cp = static_cast<double>(lowest.ranked.front().max_peak_bytes);
  const double without = static_cast<double>(lowest_without.ranked.front().max_peak_bytes);
  EXPECT_LT(with_cp, without);
  planner::PlanRequest capped = request;
  capped.memory_cap_bytes = (with_cp + without) / 2;
  EXPECT_GT(planner::search_plans(capped, 1).ranked.front().cp, 1);
  capped.cp = 1;
  const planner::PlanSearchResult refused = planner::search_plans(capped, 1);
  EXPECT_TRUE(refused.ranked.empty());
  ASSERT_TRUE(refused.lowest_peak.has_value());
  EXPECT_EQ(refused.lowest_peak->cp, 1);
}

TEST(ContextParallel, APlanFileKeepsC) {
  planner::PlanRequest request = long_context_request();
  request.cp = 4;
  request.tp = 4;
  const planner::PlanSearchResult result = planner::search_plans(request, 1);
  ASSERT_FALSE(result.ranked.empty());
  const std::string path = testing::write_temp(
      "cp-plan.yaml", planner::write_plan_yaml({"llama3.1-70b", "h100-sxm", 16, 131072, result.ranked.front(), "", ""}));
  EXPECT_EQ(planner::read_plan_yaml(path).plan.cp, 4);
}

TEST(ContextParallel, BadValuesAreRefusedNamingTheFix) {
  const auto cli_refuses = testing::expect_refused;
  const std::string plan = "plan --model llama3-70b --hardware h100-sxm --gpus 64 --global-batch 64 --seq 8192 ";
  cli_refuses(plan + "--cp 3", "--cp 3 does not divide --gpus 64");
  cli_refuses("plan --model llama3-70b --hardware h100-sxm --gpus 48 --global-batch 48 --seq 8192 --cp 3",
              "--cp 3: the sequence (8192) must divide into 2 x cp = 6 chunks");
  cli_refuses(plan + "--cp 0", "--cp must be >= 1");
  cli_refuses("simulate --model llama3-70b --hardware h100-sxm --stages 4 --microbatches 8 --cp 2 --no-flash-attention",
              "--cp 2: context parallelism runs fused (flash) attention");
  cli_refuses("plan --model llama3-8b --hardware h100-sxm --gpus 8 --global-batch 8 --seq 2048 --cp 2 --profile " +
                  std::string(PIPEPLAN_CONFIG_DIR) + "/profiles/llama3-8b-cpu-epyc.yaml",
              "use --cp 1 with --profile");
}

}  // namespace
}  // namespace pipeplan
