// Activation memory per micro-batch on one tensor-parallel rank (M_B), what
// W still needs (M_W), and the output layer's logits.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "models/layers.h"

namespace pipeplan::models {
namespace {

struct Case {
  int s;
  int b;
  int t;
  bool sp;
  Recompute recompute;
};

TrainingShape shape_of(const Case& c, bool flash = false) {
  TrainingShape shape;
  shape.seq_len = c.s;
  shape.micro_batch_size = c.b;
  shape.tp = c.t;
  shape.sequence_parallel = c.sp;
  shape.recompute = c.recompute;
  shape.flash_attention = flash;
  return shape;
}

// Korthikanti et al. 2022 Table 2 (bytes per transformer layer, 16-bit
// activations, 1-byte dropout masks, FFN = 4h): no parallelism
// sbh(34 + 5as/h); TP sbh(10 + 24/t + 5as/(ht)); TP + SP (sbh/t)(34 + 5as/h);
// selective recompute sbh(10 + 24/t) with TP, 34sbh/t with TP + SP; full
// recompute 2sbh (the layer input; with SP that input is sequence-sharded,
// so 2sbh/t, Sec. 4.2.2).
std::int64_t korthikanti(const Case& c, std::int64_t h, std::int64_t a) {
  const std::int64_t s = c.s;
  const std::int64_t b = c.b;
  const std::int64_t t = c.t;
  const std::int64_t sbh = s * b * h;
  const std::int64_t scores = 5 * a * s * s * b;
  const bool sp = c.sp && t > 1;
  switch (c.recompute) {
    case Recompute::kNone:
      return sp ? (34 * sbh + scores) / t : 10 * sbh + 24 * sbh / t + scores / t;
    case Recompute::kSelective:
      return sp ? 34 * sbh / t : 10 * sbh + 24 * sbh / t;
    case Recompute::kFull:
      return sp ? 2 * sbh / t : 2 * sbh;
  }
  return 0;
}

class ModelActivationKorthikanti : public ::testing::TestWithParam<Case> {};

TEST_P(ModelActivationKorthikanti, TransformerLayerMatchesExactly) {
  const Case c = GetParam();
  for (const char* name : {"megatron-22b", "gpt3-175b"}) {
    const ModelConfig model = load_model(name);
    const ModelLayers layers = expand_layers(model, shape_of(c));
    for (int index = 1; index <= 2; ++index) {
      EXPECT_EQ(layers.layers[index].activation_bytes, korthikanti(c, model.hidden, model.heads))
          << name << " s=" << c.s << " b=" << c.b << " t=" << c.t << " sp=" << c.sp;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ModelActivationKorthikanti,
    ::testing::Values(Case{2048, 1, 1, false, Recompute::kNone}, Case{1024, 4, 1, false, Recompute::kNone},
                      Case{2048, 1, 8, false, Recompute::kNone}, Case{2048, 2, 4, true, Recompute::kNone},
                      Case{512, 3, 8, true, Recompute::kNone}, Case{2048, 1, 8, true, Recompute::kSelective},
                      Case{2048, 1, 8, false, Recompute::kSelective}, Case{1024, 2, 1, false, Recompute::kSelective},
                      Case{2048, 1, 8, false, Recompute::kFull}, Case{2048, 4, 8, true, Recompute::kFull},
                      Case{2048, 1, 1, false, Recompute::kFull}),
    [](const ::testing::TestParamInfo<Case>& info) {
      const Case& c = info.param;
      return fmt::format("s{}_b{}_t{}{}_{}", c.s, c.b, c.t, c.sp ? "_sp" : "", recompute_name(c.recompute));
    });

TEST(ModelActivation, FlashAttentionDropsTheScoreTerm) {
  // Korthikanti's 5as^2b is the softmax output, its dropout mask and the
  // dropped scores; flash attention keeps only fp32 row statistics
  // (Dao et al. 2022 Alg. 2: the log-sum-exp L, one per row and head).
  const ModelConfig model = load_model("megatron-22b");
  const std::int64_t a = model.heads;
  for (const Case c : {Case{2048, 1, 1, false, Recompute::kNone}, Case{2048, 2, 8, true, Recompute::kNone}}) {
    const std::int64_t s = c.s;
    const std::int64_t b = c.b;
    const std::int64_t without = expand_layers(model, shape_of(c, false)).layers[1].activation_bytes;
    const std::int64_t with = expand_layers(model, shape_of(c, true)).layers[1].activation_bytes;
    EXPECT_EQ(without - with, 5 * a * s * s * b / c.t - 4 * a * s * b / c.t);
  }
}

TEST(ModelActivation, WeightGradientBytesOfGptLayer) {
  // Qi et al. 2024 (Zero Bubble) Sec. 3 accounting: W keeps each linear's
  // input and output gradient: QKV 2 + 6, out-projection 2 + 2, fc1 2 + 8,
  // fc2 8 + 2 = 32sbh bytes per layer without TP.
  const ModelConfig model = load_model("megatron-22b");
  const Case c{2048, 2, 1, false, Recompute::kNone};
  const LayerCost layer = expand_layers(model, shape_of(c)).layers[1];
  const std::int64_t sbh = std::int64_t{2048} * 2 * model.hidden;
  EXPECT_EQ(layer.weight_grad_bytes, 32 * sbh);
  EXPECT_LE(layer.weight_grad_bytes, layer.activation_bytes);
}

TEST(ModelActivation, FullRecomputeClampsWeightGradientBytes) {
  // Full recompute keeps 2sbh (Korthikanti Table 2) < 32sbh: M_W is clamped
  // to M_B and the excess, with the re-materialised layer, is transient.
  const ModelConfig model = load_model("megatron-22b");
  const std::int64_t sbh = std::int64_t{2048} * model.hidden;
  const std::int64_t a = model.heads;
  const Case c{2048, 1, 1, false, Recompute::kFull};
  const LayerCost layer = expand_layers(model, shape_of(c)).layers[1];
  EXPECT_EQ(layer.weight_grad_bytes, layer.activation_bytes);
  EXPECT_EQ(layer.working_bytes, 34 * sbh + 5 * a * 2048 * 2048 + (32 * sbh - 2 * sbh));
}

TEST(ModelActivation, OutputLayerKeepsFp32Logits) {
  // reference.md (Korthikanti Sec. 4.3 / Megatron theoretical_memory_usage):
  // fp32 logits 4sbV per micro-batch, split over t by the vocabulary-
  // parallel output layer, and again for the softmax gradient.
  const ModelConfig model = load_model("llama3-8b");
  for (int t : {1, 8}) {
    const Case c{4096, 2, t, false, Recompute::kNone};
    const LayerCost output = expand_layers(model, shape_of(c, true)).layers.back();
    const std::int64_t logits = std::int64_t{4} * 4096 * 2 * model.vocab / t;
    EXPECT_EQ(output.logits_bytes, logits);
    EXPECT_EQ(output.working_bytes, logits);
    // Plus the final norm's and the projection's (whole) inputs.
    EXPECT_EQ(output.activation_bytes, logits + 2 * 2 * std::int64_t{4096} * 2 * model.hidden);
    EXPECT_EQ(output.output_bytes, 0);
  }
}

TEST(ModelActivation, LlamaLayerFromItsShapes) {
  // Llama 3 8B (official config): h 4096, 32 query heads and 8 KV heads of
  // 128, SwiGLU FFN 14336, RMSNorm, no dropout. Per token, 2-byte elements:
  // two norm inputs, the QKV and gate/up inputs (8h); Q, K, V after rope
  // (4096 + 1024 + 1024) and the output projection's input (4096); gate,
  // up and down-projection input (3 x 14336); flash statistics 4 bytes per
  // head.
  const ModelConfig model = load_model("llama3-8b");
  const Case c{8192, 1, 1, false, Recompute::kNone};
  const LayerCost layer = expand_layers(model, shape_of(c, true)).layers[1];
  const std::int64_t per_token = 2 * (4 * 4096 + 4096 + 1024 + 1024 + 4096 + 3 * 14336) + 4 * 32;
  EXPECT_EQ(layer.activation_bytes, per_token * 8192);
}

TEST(ModelActivation, EmbeddingKeepsTokenIdsAndDropoutMask) {
  const ModelConfig model = load_model("gpt3-175b");
  const Case c{2048, 2, 1, false, Recompute::kNone};
  const LayerCost embedding = expand_layers(model, shape_of(c)).layers.front();
  // int32 token ids, 1-byte embedding-dropout mask (Korthikanti Sec. 4.3).
  EXPECT_EQ(embedding.activation_bytes, 4 * 2048 * 2 + std::int64_t{2048} * 2 * model.hidden);
}

TEST(ModelActivation, PipelinePayloadIsScatteredOverTensorRanks) {
  // reference.md: b s h x 2 bytes per boundary, divided by t with
  // Megatron's scatter/gather optimisation (Narayanan et al. 2021 Sec. 4.1).
  const ModelConfig model = load_model("llama3-70b");
  for (int t : {1, 8}) {
    const ModelLayers layers = expand_layers(model, shape_of({4096, 1, t, false, Recompute::kNone}, true));
    const std::int64_t payload = std::int64_t{4096} * model.hidden * 2 / t;
    EXPECT_EQ(layers.layers.front().output_bytes, payload);
    EXPECT_EQ(layers.layers[5].output_bytes, payload);
  }
}

TEST(ModelActivation, MixtureOfExpertsStoresPerRoutedPair) {
  // Mixtral: top-2 routing; each extra routed expert per token adds its
  // dispatched input (2h bytes), its fp32 routing weight (4 bytes) and its
  // SwiGLU tensors (3 x 2 x 14336 bytes). Megatron-core applies the weight in
  // the activation, so the expert's output is not kept.
  ModelConfig model = load_model("mixtral-8x7b");
  const TrainingShape shape = shape_of({4096, 1, 1, false, Recompute::kNone}, true);
  const std::int64_t two = expand_layers(model, shape).layers[1].activation_bytes;
  model.moe.top_k = 3;
  const std::int64_t three = expand_layers(model, shape).layers[1].activation_bytes;
  EXPECT_EQ(three - two, std::int64_t{4096} * (2 * 4096 + 4 + 3 * 2 * 14336));
}

}  // namespace
}  // namespace pipeplan::models

namespace pipeplan::models {
namespace {

TEST(ModelActivation, Fp8CastsEachGemmsInputAndOutputGradient) {
  // Transformer Engine quantizes what an FP8 GEMM reads: per element of the
  // forward's input, and of the backward's output gradient, a bf16 read and
  // an FP8 copy plus its transpose written (4 bytes). Weights and activations
  // kept are those of BF16.
  const ModelConfig model = load_model("llama3-8b");
  TrainingShape shape;
  shape.seq_len = 4096;
  shape.tp = 2;
  const LayerCost bf16 = expand_layers(model, shape).layers[1];
  shape.runtime.fp8 = true;
  const LayerCost fp8 = expand_layers(model, shape).layers[1];
  double inputs = 0, output_gradients = 0;
  for (const GemmWork& gemm : fp8.forward.gemms) {
    ASSERT_TRUE(gemm.fp8);
    inputs += gemm.m * gemm.k * gemm.count;
    output_gradients += gemm.m * gemm.n * gemm.count;
  }
  EXPECT_DOUBLE_EQ(fp8.forward.memory_bytes - bf16.forward.memory_bytes, 4 * inputs);
  EXPECT_DOUBLE_EQ(fp8.backward_input.memory_bytes - bf16.backward_input.memory_bytes, 4 * output_gradients);
  EXPECT_EQ(fp8.activation_bytes, bf16.activation_bytes);
  EXPECT_EQ(fp8.fp8_weight_copy_bytes, 2 * fp8.params_per_rank);
}

}  // namespace
}  // namespace pipeplan::models
