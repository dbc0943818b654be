// FLOPs per layer (F, B, W) and per iteration against Zero Bubble Table 1,
// Narayanan et al. 2021 Eq. 3 and Korthikanti et al. 2022 App. A; the
// tensor-parallel collectives per layer.
#include <gtest/gtest.h>

#include <cmath>

#include "models/layers.h"

namespace pipeplan::models {
namespace {

TrainingShape shape_of(int s, int b, int t, Recompute recompute = Recompute::kNone, bool sp = false) {
  TrainingShape shape;
  shape.seq_len = s;
  shape.micro_batch_size = b;
  shape.tp = t;
  shape.recompute = recompute;
  shape.sequence_parallel = sp;
  return shape;
}

void expect_relative(double value, double expected) {
  EXPECT_NEAR(value / expected, 1.0, 1e-9) << "got " << value << " expected " << expected;
}

TEST(ModelFlops, ZeroBubbleTable1PerLayer) {
  // Qi et al. 2024 Table 1 (FFN = 4h, MHA): F = sbh(24h + 4s),
  // B = sbh(24h + 8s), W = 24sbh^2, summed over the t ranks.
  const ModelConfig model = load_model("megatron-22b");
  const double h = model.hidden;
  for (const auto& [s, b, t] : {std::tuple{2048, 1, 1}, std::tuple{1024, 4, 8}}) {
    const LayerCost layer = expand_layers(model, shape_of(s, b, t)).layers[1];
    const double sbh = static_cast<double>(s) * b * h;
    expect_relative(layer.forward.flops() * t, sbh * (24 * h + 4 * s));
    expect_relative(layer.backward_input.flops() * t, sbh * (24 * h + 8 * s));
    expect_relative(layer.backward_weight.flops() * t, 24 * sbh * h);
    EXPECT_EQ(layer.backward_weight.attention_flops(), 0);
    EXPECT_EQ(layer.recompute_flops, 0);
  }
}

TEST(ModelFlops, SelectiveRecomputeRedoesTheAttentionCore) {
  // Korthikanti et al. 2022 Sec. 5: selective recompute re-runs only the
  // attention core, 4bs^2h (QK^T and scores x V over the full square).
  const ModelConfig model = load_model("megatron-22b");
  const double h = model.hidden;
  const double s = 2048;
  const LayerCost layer = expand_layers(model, shape_of(2048, 1, 1, Recompute::kSelective)).layers[1];
  expect_relative(layer.recompute_flops, 4 * s * s * h);
  expect_relative(layer.backward_input.flops(), s * h * (24 * h + 8 * s) + 4 * s * s * h);
}

double total(const ModelConfig& model, int global_batch, int t, Recompute recompute, bool hardware) {
  const TrainingShape shape = shape_of(model.context, 1, t, recompute);
  const ModelLayers layers = expand_layers(model, shape);
  const double per_microbatch =
      hardware ? hardware_flops_per_microbatch(layers, shape) : model_flops_per_microbatch(layers, shape);
  return per_microbatch * global_batch;
}

TEST(ModelFlops, NarayananEq3WithFullRecompute) {
  // Narayanan et al. 2021 Eq. 3: 96 B s l h^2 (1 + s/(6h) + V/(16lh)) per
  // iteration, the forward recomputed once; batch sizes of their Table 1.
  for (const auto& [name, batch] : {std::pair{"gpt3-175b", 1536}, std::pair{"megatron-1t", 3072}}) {
    const ModelConfig model = load_model(name);
    const double s = model.context;
    const double l = model.layers;
    const double h = model.hidden;
    const double v = static_cast<double>(model.vocab);
    const double expected = 96 * batch * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
    expect_relative(total(model, batch, 1, Recompute::kFull, true), expected);
    expect_relative(total(model, batch, 8, Recompute::kFull, true), expected);
  }
}

TEST(ModelFlops, KorthikantiAppendixAModelFlops) {
  // Korthikanti et al. 2022 App. A: model FLOPs (no recomputation counted)
  // 72 B L s h^2 (1 + s/(6h) + V/(12hL)), whatever is recomputed.
  const ModelConfig model = load_model("turing-530b");
  const int batch = 1920;  // Smith et al. 2022 Sec. 3.2: MT-NLG's global batch size
  const double s = model.context;
  const double l = model.layers;
  const double h = model.hidden;
  const double v = static_cast<double>(model.vocab);
  const double expected = 72 * batch * l * s * h * h * (1 + s / (6 * h) + v / (12 * h * l));
  for (Recompute recompute : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    expect_relative(total(model, batch, 8, recompute, false), expected);
  }
  expect_relative(total(model, batch, 8, Recompute::kNone, true), expected);
}

TEST(ModelFlops, MixtureOfExpertsForwardIsTwiceActiveMatrixParams) {
  // Kaplan et al. 2020 Sec. 2.1: a forward pass costs 2N FLOPs per token for
  // N (non-embedding) matrix parameters; for a MoE layer N counts the top-k
  // experts and the router; here summed over t = 2 ranks. Mixtral: attention
  // 2(4096^2 + 4096 x 1024), 2 of 8 experts of 3 x 4096 x 14336, router
  // 4096 x 8.
  const ModelConfig model = load_model("mixtral-8x7b");
  const double tokens = 4096;
  const LayerCost layer = expand_layers(model, shape_of(4096, 1, 2)).layers[1];
  const double matrices = 2.0 * (4096.0 * 4096 + 4096.0 * 1024) + 2 * 3 * 4096.0 * 14336 + 4096.0 * 8;
  double gemm = 0;
  for (const GemmWork& work : layer.forward.gemms) gemm += work.flops() * work.count;
  expect_relative(gemm * 2, 2 * tokens * matrices);
}

TEST(ModelFlops, OutputLayerProjection) {
  // The vocabulary projection: 2 s b h V each for F, B and W (the V/(16lh)
  // term of Narayanan Eq. 3); the embedding is a gather without GEMMs.
  const ModelConfig model = load_model("llama3-8b");
  const ModelLayers layers = expand_layers(model, shape_of(8192, 1, 4));
  const double expected = 2.0 * 8192 * model.hidden * static_cast<double>(model.vocab) / 4;
  expect_relative(layers.layers.back().forward.flops(), expected);
  expect_relative(layers.layers.back().backward_weight.flops(), expected);
  EXPECT_EQ(layers.layers.front().forward.flops(), 0);
}

TEST(ModelFlops, TensorParallelCollectivesPerLayer) {
  // Korthikanti et al. 2022 Sec. 4.2.2 / Megatron: two all-reduces of the
  // b x s x h activations per layer in forward and two in backward; with
  // sequence parallelism all-gather + reduce-scatter pairs of the same size.
  const ModelConfig model = load_model("llama3-70b");
  const double payload = 2.0 * 4096 * model.hidden * 2;
  using Kind = CollectiveKind;
  const LayerCost plain = expand_layers(model, shape_of(4096, 2, 8)).layers[1];
  EXPECT_DOUBLE_EQ(plain.forward.collective_bytes(Kind::kAllReduce), 2 * payload);
  EXPECT_DOUBLE_EQ(plain.backward_input.collective_bytes(Kind::kAllReduce), 2 * payload);
  EXPECT_EQ(plain.forward.collective_bytes(Kind::kAllGather), 0);
  EXPECT_TRUE(plain.backward_weight.collectives.empty());
  // Two calls of the whole payload each, not one of twice it: each pays its latency.
  ASSERT_EQ(plain.forward.collectives.size(), 1u);
  EXPECT_EQ(plain.forward.collectives[0].count, 2);
  EXPECT_DOUBLE_EQ(plain.forward.collectives[0].bytes, payload);
  const LayerCost sp = expand_layers(model, shape_of(4096, 2, 8, Recompute::kNone, true)).layers[1];
  EXPECT_DOUBLE_EQ(sp.forward.collective_bytes(Kind::kAllGather), 2 * payload);
  EXPECT_DOUBLE_EQ(sp.forward.collective_bytes(Kind::kReduceScatter), 2 * payload);
  EXPECT_EQ(sp.forward.collective_bytes(Kind::kAllReduce), 0);
  // The backward's are the conjugates: as many of each kind.
  EXPECT_DOUBLE_EQ(sp.backward_input.collective_bytes(Kind::kAllGather), 2 * payload);
  EXPECT_DOUBLE_EQ(sp.backward_input.collective_bytes(Kind::kReduceScatter), 2 * payload);
  const LayerCost single = expand_layers(model, shape_of(4096, 2, 1)).layers[1];
  EXPECT_TRUE(single.forward.collectives.empty());
  // Full recompute re-runs the forward's collectives in the backward.
  const LayerCost full = expand_layers(model, shape_of(4096, 2, 8, Recompute::kFull)).layers[1];
  EXPECT_DOUBLE_EQ(full.backward_input.collective_bytes(Kind::kAllReduce), 4 * payload);
}

TEST(ModelFlops, BackwardGemmsAreTheTransposedShapes) {
  // A column-parallel QKV of Llama 3 70B at t = 8 on 2048 tokens:
  // X [2048 x 8192] times W [8192 x (8192 + 2 x 1024) / 8]. Its input
  // gradient sums over the 1280 output columns; its weight gradient over
  // the 2048 tokens.
  const ModelConfig model = load_model("llama3-70b");
  const LayerCost layer = expand_layers(model, shape_of(2048, 1, 8)).layers[1];
  const GemmWork qkv = layer.forward.gemms[0];
  EXPECT_DOUBLE_EQ(qkv.m, 2048);
  EXPECT_DOUBLE_EQ(qkv.n, 1280);
  EXPECT_DOUBLE_EQ(qkv.k, 8192);
  const GemmWork dgrad = layer.backward_input.gemms[0];
  EXPECT_DOUBLE_EQ(dgrad.m, 2048);
  EXPECT_DOUBLE_EQ(dgrad.n, 8192);
  EXPECT_DOUBLE_EQ(dgrad.k, 1280);
  const GemmWork wgrad = layer.backward_weight.gemms[0];
  EXPECT_DOUBLE_EQ(wgrad.m, 8192);
  EXPECT_DOUBLE_EQ(wgrad.n, 1280);
  EXPECT_DOUBLE_EQ(wgrad.k, 2048);
  // The row-parallel output projection splits its input: [2048 x 1024] x [1024 x 8192].
  const GemmWork projection = layer.forward.gemms[1];
  EXPECT_DOUBLE_EQ(projection.n, 8192);
  EXPECT_DOUBLE_EQ(projection.k, 1024);
  EXPECT_DOUBLE_EQ(qkv.flops(), dgrad.flops());
  EXPECT_DOUBLE_EQ(qkv.flops(), wgrad.flops());
}

TEST(ModelFlops, ElementwiseTrafficBackwardAboutTwiceForward) {
  const ModelConfig model = load_model("gpt3-175b");
  const LayerCost layer = expand_layers(model, shape_of(2048, 1, 8)).layers[1];
  EXPECT_GT(layer.forward.memory_bytes, 0);
  EXPECT_DOUBLE_EQ(layer.backward_input.memory_bytes, 2 * layer.forward.memory_bytes);
}

TEST(ModelFlops, LayerSequenceAndNames) {
  // Megatron's layout letters E, t..., L; DeepSeek-V3's first 3 layers are
  // dense (first_k_dense_replace = 3 in its official config).
  const ModelLayers layers = expand_layers(load_model("deepseek-v3"), shape_of(4096, 1, 8));
  ASSERT_EQ(layers.transformer_layers(), 61);
  EXPECT_EQ(layers.layers.front().kind, LayerKind::kEmbedding);
  EXPECT_EQ(layers.layers[1].name, "layer 0");
  EXPECT_EQ(layers.layers[61].name, "layer 60");
  EXPECT_EQ(layers.layers.back().kind, LayerKind::kLoss);
  EXPECT_EQ(layers.layers.back().name, "output");
  EXPECT_FALSE(layers.layers[3].moe);
  EXPECT_TRUE(layers.layers[4].moe);
  EXPECT_GT(layers.layers[4].params, layers.layers[3].params);
}

}  // namespace
}  // namespace pipeplan::models
