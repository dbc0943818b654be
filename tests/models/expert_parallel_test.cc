// Expert parallelism in the cost model, against closed forms worked by
// hand: tokens per expert and the grouped GEMMs they make, the all-to-all's
// bytes and time, expert memory over ep, the experts' own replicas, and
// totals ep and etp leave alone. Model shapes from the official configs
// (configs/models/deepseek-v3.yaml: hidden 7168, 256 routed experts of
// 2048 and one shared, top-8, the first 3 layers dense).
#include "models/expert_parallel.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "common/error.h"
#include "models/hardware.h"
#include "models/layers.h"
#include "models/time_model.h"
#include "models/training_state.h"

namespace pipeplan::models {
namespace {

constexpr double kHidden = 7168, kExpertFfn = 2048, kTopK = 8, kExperts = 256;

TrainingShape deepseek_shape(int ep, int etp) {
  TrainingShape shape;
  shape.seq_len = 4096;
  shape.tp = 2;
  shape.sequence_parallel = true;
  shape.dp = 32;
  shape.ep = ep;
  shape.etp = etp;
  return shape;
}

const LayerCost& moe_layer(const ModelLayers& layers) { return layers.layers[4]; }  // after E and 3 dense

// The grouped GEMMs: the forward's GEMMs of `batch` experts in one kernel.
std::vector<GemmWork> grouped(const PassWork& pass) {
  std::vector<GemmWork> result;
  for (const GemmWork& gemm : pass.gemms) {
    if (gemm.batch > 1) result.push_back(gemm);
  }
  return result;
}

// The busiest of ep ranks over the average when `tokens` tokens route at
// random (routing_spread_test checks it against brute force).
double busiest(const ModelConfig& model, int ep, double tokens, double skew = 1) {
  return busiest_rank_load(model.moe, ep, tokens, skew, 0);
}

TEST(ExpertParallel, TokensPerExpertMakeOneGroupedGemmPerMatrix) {
  const ModelConfig model = load_model("deepseek-v3");
  // t = 2 with sequence parallelism: each rank routes 4096 / 2 = 2048
  // tokens; their 8 copies spread over 256 experts, 256 / 8 = 32 on this
  // rank, which receives from 8 ranks: 2048 x 8 x 8 / 256 = 512 tokens each
  // on average, and the busiest of the 8 ranks' draws of 8 x 2048 tokens.
  const double ep8_load = busiest(model, 8, 8 * 2048);
  EXPECT_GT(ep8_load, 1.005);
  const std::vector<GemmWork> ep8 = grouped(moe_layer(expand_layers(model, deepseek_shape(8, 1))).forward);
  ASSERT_EQ(ep8.size(), 2u);
  EXPECT_EQ(ep8[0], (GemmWork{512 * ep8_load, 2 * kExpertFfn, kHidden, 1, 32, false, true}));  // gate | up
  EXPECT_EQ(ep8[1], (GemmWork{512 * ep8_load, kHidden, kExpertFfn, 1, 32, false, true}));      // down
  // etp = 2: the tokens are gathered over the two ranks splitting each
  // expert (twice the rows, half the columns).
  const double etp2_load = busiest(model, 8, 8 * 4096);
  const std::vector<GemmWork> etp2 = grouped(moe_layer(expand_layers(model, deepseek_shape(8, 2))).forward);
  ASSERT_EQ(etp2.size(), 2u);
  EXPECT_EQ(etp2[0], (GemmWork{1024 * etp2_load, kExpertFfn, kHidden, 1, 32, false, true}));
  EXPECT_EQ(etp2[1], (GemmWork{1024 * etp2_load, kHidden, kExpertFfn / 2, 1, 32, false, true}));
  // The busiest rank's share sets the pace: 1.25 x the average, and its
  // own draws' spread.
  TrainingShape skewed = deepseek_shape(8, 1);
  skewed.routing.load_imbalance = 1.25;
  EXPECT_DOUBLE_EQ(grouped(moe_layer(expand_layers(model, skewed)).forward)[0].m,
                   512 * busiest(model, 8, 8 * 2048, 1.25));
  // A capacity factor drops what is over it.
  skewed.routing.capacity_factor = 1.1;
  EXPECT_DOUBLE_EQ(grouped(moe_layer(expand_layers(model, skewed)).forward)[0].m, 512 * 1.1);
  // Model FLOPs count every token at the average load: the busiest rank's
  // excess is time, not useful work.
  skewed.routing.capacity_factor = 0;
  EXPECT_NEAR(model_flops_per_microbatch(expand_layers(model, skewed), skewed) /
                  model_flops_per_microbatch(expand_layers(model, deepseek_shape(8, 1)), deepseek_shape(8, 1)),
              1.0, 1e-12);
  skewed.recompute = Recompute::kFull;
  EXPECT_NEAR(model_flops_per_microbatch(expand_layers(model, skewed), skewed) /
                  model_flops_per_microbatch(expand_layers(model, deepseek_shape(8, 1)), deepseek_shape(8, 1)),
              1.0, 1e-12);
}

TEST(ExpertParallel, DroppedTokensAreNotModelWork) {
  // A capacity factor of 0.8 on balanced routing: every expert runs 0.8 of
  // its average tokens, and only that work counts towards the model FLOPs
  // (three passes of the routed experts' GEMMs).
  const ModelConfig model = load_model("deepseek-v3");
  const TrainingShape full = deepseek_shape(8, 1);
  TrainingShape dropping = full;
  dropping.routing.capacity_factor = 0.8;
  const LayerCost kept = moe_layer(expand_layers(model, full));
  double routed = 0;
  for (const GemmWork& gemm : grouped(kept.forward)) routed += gemm.flops();
  // 58 expert layers; every rank does 1/(t c) of the work. The kept GEMMs
  // run the busiest rank's load, whose excess over the average is not
  // model work either.
  const double expected = 58 * 3 * 0.2 * routed / busiest(model, 8, 8 * 2048) * full.tp * full.cp;
  EXPECT_NEAR(model_flops_per_microbatch(expand_layers(model, full), full) -
                  model_flops_per_microbatch(expand_layers(model, dropping), dropping),
              expected, 1e-9 * expected);
}

TEST(ExpertParallel, AllToAllBytesAreHiddenTimesTopKEachWay) {
  const ModelConfig model = load_model("deepseek-v3");
  const LayerCost layer = moe_layer(expand_layers(model, deepseek_shape(8, 1)));
  // Dispatch and combine in the forward, their gradients in the input
  // gradient: each rank's send buffer is its 2048 tokens x 8 copies x 7168
  // x 2 bytes, of which (ep - 1) / ep leaves it, and the busiest rank's
  // spread over that; 8 copies from 4 of 8 groups (node-limited routing).
  const double load = busiest(model, 8, 8 * 2048);
  const CollectiveWork expected{CollectiveKind::kAllToAll, 2048 * kTopK * kHidden * 2 * load, 2, kTopK, 256, 8, 4};
  ASSERT_EQ(layer.forward.expert_collectives.size(), 1u);
  EXPECT_EQ(layer.forward.expert_collectives[0], expected);
  ASSERT_EQ(layer.backward_input.expert_collectives.size(), 1u);
  EXPECT_EQ(layer.backward_input.expert_collectives[0], expected);
  EXPECT_TRUE(layer.backward_weight.expert_collectives.empty());
  // Per token and direction: hidden x bytes x top_k.
  EXPECT_DOUBLE_EQ(expected.bytes / 2048 / load, kHidden * 2 * kTopK);
  // The routed experts' tensor-parallel collectives go with the tokens:
  // only attention and the shared expert keep theirs (2 of each).
  EXPECT_DOUBLE_EQ(layer.forward.collective_bytes(CollectiveKind::kAllGather), 2 * 4096 * kHidden * 2);
  // etp = 2 gathers the dispatched tokens over the pair and scatters the
  // outputs back (the pair's 4096 tokens drawing their experts).
  const LayerCost etp2 = moe_layer(expand_layers(model, deepseek_shape(8, 2)));
  const double gathered = 2 * 2048 * kTopK * kHidden * 2 * busiest(model, 8, 8 * 4096);
  ASSERT_EQ(etp2.forward.expert_collectives.size(), 3u);
  EXPECT_EQ(etp2.forward.expert_collectives[1], (CollectiveWork{CollectiveKind::kAllGather, gathered, 1}));
  EXPECT_EQ(etp2.forward.expert_collectives[2], (CollectiveWork{CollectiveKind::kReduceScatter, gathered, 1}));
  // A dense layer has none.
  EXPECT_TRUE(expand_layers(model, deepseek_shape(8, 1)).layers[1].forward.expert_collectives.empty());
}

TEST(ExpertParallel, AllToAllTimeIsTheSlowerTierOfItsPeers) {
  const HardwareConfig h100 = load_hardware("h100-sxm");  // 8 a node: NVLink 360 GB/s bus, 3 us; network 45 GB/s, 5 us
  const double bytes = 1e9;
  // Eight peers in a node: 7/8 of the buffer over NVLink in 7 steps.
  EXPECT_NEAR(all_to_all_s(bytes, 8, 1, h100), bytes * 7 / 8 / 360e9 + 7 * 3e-6, 1e-12);
  // 64 peers: 7/64 to the node's peers, 56/64 over the network at once.
  EXPECT_NEAR(all_to_all_s(bytes, 64, 1, h100), bytes * 56 / 64 / 45e9 + 63 * 5e-6, 1e-12);
  // Eight peers two apart span two nodes: 3/8 in the node, 4/8 across.
  EXPECT_NEAR(all_to_all_s(bytes, 8, 2, h100), bytes * 4 / 8 / 45e9 + 7 * 5e-6, 1e-12);
  EXPECT_EQ(all_to_all_s(bytes, 1, 1, h100), 0);
}

TEST(ExpertParallel, ExpertWeightsDivideOverEp) {
  const ModelConfig model = load_model("deepseek-v3");
  const double expert = 3 * kHidden * kExpertFfn;  // gate, up, down
  for (int ep : {1, 8, 64}) {
    TrainingShape shape;
    shape.dp = 64;
    shape.ep = ep;
    const LayerCost layer = moe_layer(expand_layers(model, shape));
    EXPECT_DOUBLE_EQ(static_cast<double>(layer.expert_params_per_rank), kExperts / ep * expert) << ep;
    // The shared expert and the router stay whole on every rank.
    const double others = static_cast<double>(layer.params_per_rank - layer.expert_params_per_rank);
    EXPECT_DOUBLE_EQ(others, static_cast<double>(moe_layer(expand_layers(model, TrainingShape{})).params_per_rank) -
                                 kExperts * expert)
        << ep;
  }
}

TEST(ExpertParallel, ExpertStateShardsOverTheExpertReplicas) {
  // t 2 x d 32 = 64 ranks a stage: the dense weights have d = 32 replicas;
  // with ep 8 the experts have 64 / 8 = 8 (etp 1), or 4 with etp 2.
  TrainingShape shape = deepseek_shape(8, 1);
  shape.zero = ZeroStage::kOptimizer;
  EXPECT_EQ(shape.expert_replicas(), 8);
  EXPECT_DOUBLE_EQ(state_bytes(shape).optimizer, 12.0 / 32);
  EXPECT_DOUBLE_EQ(expert_state_bytes(shape).optimizer, 12.0 / 8);
  EXPECT_DOUBLE_EQ(expert_state_bytes(shape).weights, 2.0);
  shape.etp = 2;
  EXPECT_EQ(shape.expert_replicas(), 4);
  // Without expert parallelism and etp = t the experts are replicated as the
  // dense weights are.
  shape.ep = 1;
  EXPECT_EQ(shape.expert_replicas(), shape.weight_replicas());
}

TEST(ExpertParallel, LayoutLeavesParametersAndModelFlopsAlone) {
  const ModelConfig model = load_model("deepseek-v3");
  const ModelLayers whole = expand_layers(model, deepseek_shape(1, 2));
  for (const auto& [ep, etp] : {std::pair{8, 1}, std::pair{64, 1}, std::pair{16, 2}, std::pair{32, 2}}) {
    const ModelLayers layers = expand_layers(model, deepseek_shape(ep, etp));
    EXPECT_EQ(layers.total_params, whole.total_params);
    EXPECT_EQ(layers.active_params, whole.active_params);
    EXPECT_NEAR(model_flops_per_microbatch(layers, deepseek_shape(ep, etp)) /
                    model_flops_per_microbatch(whole, deepseek_shape(1, 2)),
                1.0, 1e-12)
        << ep << " " << etp;
  }
}

TEST(ExpertParallel, ZooMoeTotalsMatchTheModelCards) {
  // Model cards: Qwen3-235B-A22B 235B total, 22B activated; Mixtral 8x22B
  // 141B, 39B active; GPT-OSS 120B 116.83B total, 5.13B active without the
  // 0.58B input embedding (201088 x 2880).
  const auto totals = [](const char* name) { return expand_layers(load_model(name), TrainingShape{}); };
  const ModelLayers qwen = totals("qwen3-235b-a22b");
  EXPECT_NEAR(static_cast<double>(qwen.total_params) / 235e9, 1.0, 0.005);
  EXPECT_NEAR(static_cast<double>(qwen.active_params) / 22e9, 1.0, 0.02);
  const ModelLayers mixtral = totals("mixtral-8x22b");
  EXPECT_NEAR(static_cast<double>(mixtral.total_params) / 141e9, 1.0, 0.005);
  EXPECT_NEAR(static_cast<double>(mixtral.active_params) / 39e9, 1.0, 0.01);
  const ModelLayers oss = totals("gpt-oss-120b");
  EXPECT_NEAR(static_cast<double>(oss.total_params) / 116.83e9, 1.0, 0.001);
  EXPECT_NEAR(static_cast<double>(oss.active_params - oss.embedding_params) / 5.13e9, 1.0, 0.005);
}

void expect_refused(const ModelConfig& model, const TrainingShape& shape, const std::string& needle) {
  try {
    check_expert_parallel(model, shape);
    ADD_FAILURE() << "accepted: " << needle;
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
  }
}

TEST(ExpertParallel, RefusesLayoutsTheFoldingCannotRun) {
  const ModelConfig deepseek = load_model("deepseek-v3");
  TrainingShape shape = deepseek_shape(3, 1);
  expect_refused(deepseek, shape,
                 "--ep 3 must divide the 256 experts of 'deepseek-v3'; use one of 1, 2, 4, 8, 16, 32, 64");
  shape = deepseek_shape(128, 1);
  expect_refused(deepseek, shape, "--ep 128 x --etp 1 = 128 must divide t x c x d = 64");
  shape = deepseek_shape(8, 4);
  expect_refused(deepseek, shape, "--etp 4: the expert tensor-parallel ranks are taken from the attention's t = 2");
  shape = deepseek_shape(8, 1);
  shape.sequence_parallel = false;
  expect_refused(deepseek, shape, "needs --sequence-parallel");
  shape = deepseek_shape(8, 1);
  shape.zero = ZeroStage::kGradients;
  expect_refused(deepseek, shape, "--zero 2 shards over the d x c weight replicas");
  shape = deepseek_shape(8, 1);
  shape.routing.load_imbalance = 0.9;
  expect_refused(deepseek, shape, "--moe-load-imbalance must be between 1 (balanced) and 32");
  shape.routing.load_imbalance = 33;  // 256 experts / top-8: all the tokens on one rank at most
  expect_refused(deepseek, shape, "--moe-load-imbalance must be between 1 (balanced) and 32");
  shape.routing.load_imbalance = std::numeric_limits<double>::infinity();
  expect_refused(deepseek, shape, "--moe-load-imbalance must be between 1");
  shape.routing.load_imbalance = 9;  // within 32, but over what 8 ranks can have
  expect_refused(deepseek, shape, "--moe-load-imbalance 9 is over what --ep 8 allows");
  shape.routing.load_imbalance = 8;
  EXPECT_NO_THROW(check_expert_parallel(deepseek, shape));
  shape = deepseek_shape(1, 2);
  shape.routing.load_imbalance = 1.5;
  expect_refused(deepseek, shape, "with --ep 1 every rank runs every expert");
  shape = deepseek_shape(8, 1);
  shape.routing.capacity_factor = -1;
  expect_refused(deepseek, shape, "--moe-capacity-factor must be > 0");
  shape.routing.capacity_factor = std::numeric_limits<double>::infinity();
  expect_refused(deepseek, shape, "--moe-capacity-factor must be > 0");
  TrainingShape dense;
  dense.dp = 8;
  dense.ep = 2;
  expect_refused(load_model("llama3-8b"), dense, "'llama3-8b' is a dense model");
  // The valid ones pass.
  EXPECT_NO_THROW(check_expert_parallel(deepseek, deepseek_shape(64, 1)));
  EXPECT_NO_THROW(check_expert_parallel(deepseek, deepseek_shape(32, 2)));
}

TEST(ExpertParallel, TopKAboveTheExpertsIsRefusedNamingTheField) {
  ModelConfig model = load_model("mixtral-8x7b");
  model.moe.top_k = 9;
  try {
    (void)expand_layers(model, TrainingShape{});
    ADD_FAILURE() << "accepted top_k 9 of 8 experts";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("moe.top_k (9) must be between 1 and moe.experts (8)"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace pipeplan::models

namespace pipeplan::models {
namespace {

// DeepEP moves tokens over NVLink in a node and over RDMA between nodes
// (deepseek-ai/DeepEP README): a PCIe server cannot run it at all, and a
// network without RDMA only within a node (8 GPUs of an H100 node: ep 8
// at etp 1 stays, ep 16 or ep 8 at etp 2 leaves). The all-to-all
// dispatcher runs anywhere.
TEST(ExpertParallel, DeepEpNeedsNvlinkAndRdmaAcrossNodes) {
  HardwareConfig ethernet = load_hardware("dgx-h100-cluster");
  TrainingShape shape = deepseek_shape(16, 1);
  shape.routing.dispatcher = MoeDispatcher::kDeepEp;
  EXPECT_EQ(dispatcher_refusal(ethernet, shape), nullptr);
  ethernet.network_rdma = false;
  EXPECT_NE(dispatcher_refusal(ethernet, shape), nullptr);
  shape.ep = 8;
  EXPECT_EQ(dispatcher_refusal(ethernet, shape), nullptr);
  shape.etp = 2;
  EXPECT_NE(dispatcher_refusal(ethernet, shape), nullptr);
  shape.routing.dispatcher = MoeDispatcher::kAllToAll;
  EXPECT_EQ(dispatcher_refusal(ethernet, shape), nullptr);
  const HardwareConfig pcie = load_hardware("l40s");
  EXPECT_FALSE(pcie.node_nvlink);
  shape = deepseek_shape(2, 1);
  shape.routing.dispatcher = MoeDispatcher::kDeepEp;
  std::string refusal = "DeepEP taken on PCIe";
  try {
    check_dispatcher(pcie, shape);
  } catch (const InputError& error) {
    refusal = error.what();
  }
  EXPECT_NE(refusal.find("--moe-dispatcher deepep on l40s: its node has no NVLink"), std::string::npos) << refusal;
}

}  // namespace
}  // namespace pipeplan::models
