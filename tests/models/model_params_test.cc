// Parameter counts of the zoo against published totals and Narayanan et al.
// 2021 Eq. 2; per-rank shares; training-state bytes per parameter.
#include <gtest/gtest.h>

#include <cstdint>

#include "models/layers.h"
#include "models/training_shape.h"
#include "models/training_state.h"

namespace pipeplan::models {
namespace {

ModelLayers expand(const std::string& name, int tp = 1) {
  TrainingShape shape;
  shape.tp = tp;
  return expand_layers(load_model(name), shape);
}

void expect_within(double value, double published, double tolerance) {
  EXPECT_NEAR(value / published, 1.0, tolerance) << "ours " << value << " published " << published;
}

TEST(ModelParams, LlamaTotalsMatchPublished) {
  // Meta, "The Llama 3 Herd of Models" (2024) and the model cards: 8.03B,
  // 70.6B, 405.9B parameters (reference.md, published totals).
  expect_within(static_cast<double>(expand("llama3-8b").total_params), 8.03e9, 0.005);
  expect_within(static_cast<double>(expand("llama3-70b").total_params), 70.6e9, 0.005);
  expect_within(static_cast<double>(expand("llama3.1-405b").total_params), 405.9e9, 0.005);
}

TEST(ModelParams, Nemotron4HasItsShapesParameters) {
  // arXiv 2406.11704 Table 1 (reference.md): 96 layers, hidden 18432, 96
  // heads of 192 with 8 KV heads, FFN 73728 in two matrices (squared ReLU),
  // no biases, untied 256000-token embeddings. By hand: per block q|k|v
  // 18432 x 21504 + o 18432^2 + 2 x 18432 x 73728 + two LayerNorms of
  // 2 x 18432 = 3,454,083,072; x 96, + 2 x 256000 x 18432 + the final
  // LayerNorm = 341,029,195,776 (the report's "340B").
  const auto layers = expand("nemotron4-340b");
  EXPECT_EQ(layers.total_params, 341'029'195'776);
  EXPECT_EQ(layers.layers[1].params, 3'454'083'072);
}

TEST(ModelParams, Gpt2SmallMatchesTheReleasedCheckpointExactly) {
  // openai-community/gpt2: 124,439,808 parameters = tied wte 50257 x 768 +
  // wpe 1024 x 768 + 12 blocks of 7,087,872 (two LayerNorms, c_attn and
  // c_proj with biases, c_fc and c_proj with biases) + the final LayerNorm.
  EXPECT_EQ(expand("gpt2-small").total_params, 124439808);
}

TEST(ModelParams, LlamaDenseModelsUseEveryParameter) {
  const ModelLayers layers = expand("llama3-8b");
  EXPECT_EQ(layers.active_params, layers.total_params);
}

TEST(ModelParams, MixtralTotalAndActive) {
  // Mistral AI, "Mixtral of Experts" (Jiang et al. 2024) Sec. 2: 47B total,
  // 13B active; the model card: 46.7B total, 12.9B active (reference.md).
  const ModelLayers layers = expand("mixtral-8x7b");
  expect_within(static_cast<double>(layers.total_params), 46.7e9, 0.005);
  expect_within(static_cast<double>(layers.active_params), 12.9e9, 0.005);
}

TEST(ModelParams, DeepSeekV3TotalAndActive) {
  // DeepSeek-V3 Technical Report (arXiv:2412.19437) abstract: 671B total,
  // 37B activated per token; MTP module excluded as there (reference.md).
  const ModelLayers layers = expand("deepseek-v3");
  expect_within(static_cast<double>(layers.total_params), 671e9, 0.005);
  expect_within(static_cast<double>(layers.active_params), 37e9, 0.02);
  EXPECT_FALSE(layers.layers[3].moe);  // first_k_dense_replace = 3 in the official config
  EXPECT_TRUE(layers.layers[4].moe);
}

TEST(ModelParams, MegatronModelsMatchNarayananTable1) {
  // Narayanan et al. 2021 Table 1: 174.6B (96 layers, h 12288), 529.6B
  // (105, 20480), 1008.0B (128, 25600), to the 0.1B printed.
  EXPECT_NEAR(static_cast<double>(expand("gpt3-175b").total_params) / 1e9, 174.6, 0.05);
  EXPECT_NEAR(static_cast<double>(expand("turing-530b").total_params) / 1e9, 529.6, 0.05);
  EXPECT_NEAR(static_cast<double>(expand("megatron-1t").total_params) / 1e9, 1008.0, 0.05);
}

// Narayanan et al. 2021 Eq. 2: P = 12lh^2 (1 + 13/(12h) + (V + s)/(12lh)),
// i.e. 12lh^2 + 13lh + (V + s)h; it leaves out the final LayerNorm (2h).
std::int64_t narayanan_eq2(std::int64_t l, std::int64_t h, std::int64_t vocab, std::int64_t s) {
  return 12 * l * h * h + 13 * l * h + (vocab + s) * h;
}

TEST(ModelParams, GptStyleModelsMatchNarayananEq2Exactly) {
  for (const char* name : {"gpt3-175b", "megatron-1t", "megatron-22b"}) {
    const ModelConfig model = load_model(name);
    const ModelLayers layers = expand(name);
    const std::int64_t h = model.hidden;
    EXPECT_EQ(layers.total_params, narayanan_eq2(model.layers, h, model.vocab, model.context) + 2 * h) << name;
  }
}

TEST(ModelParams, Llama70bEmbeddingTableBytes) {
  // reference.md: Llama 3 70B embedding table 128256 x 8192 x 2 B = 2.1 GB.
  EXPECT_EQ(expand("llama3-70b").embedding_params * 2, 2'101'346'304);
}

TEST(ModelParams, PerRankSharesDivideMatricesAndReplicateNorms) {
  // Llama 3 8B shapes (official config): h 4096, 32 heads, 8 KV heads of
  // 128, FFN 14336, vocab 128256; Megatron splits every matrix over t = 8.
  const std::int64_t h = 4096;
  const std::int64_t t = 8;
  const ModelLayers layers = expand("llama3-8b", static_cast<int>(t));
  const std::int64_t attention = (h * h + 2 * h * 1024 + h * h) / t;
  const std::int64_t mlp = 3 * h * 14336 / t;
  EXPECT_EQ(layers.layers[1].params_per_rank, attention + mlp + 2 * h);
  EXPECT_EQ(layers.layers.front().params_per_rank, 128256 / t * h);
  EXPECT_EQ(layers.layers.back().params_per_rank, 128256 / t * h + h);
}

TEST(ModelParams, PerRankSharesSumToTotalWithoutTensorParallelism) {
  const ModelLayers layers = expand("mixtral-8x7b");
  std::int64_t sum = 0;
  for (const LayerCost& layer : layers.layers) sum += layer.params_per_rank;
  EXPECT_EQ(sum, layers.total_params);
}

TEST(ModelParams, TiedEmbeddingsCountedOnceInTotal) {
  // GPT-3 ties the output layer to the input embedding (Eq. 2 counts V h
  // once); the last stage still holds a copy.
  const ModelConfig model = load_model("gpt3-175b");
  const std::int64_t h = model.hidden;
  const ModelLayers layers = expand("gpt3-175b");
  const LayerCost& output = layers.layers.back();
  EXPECT_EQ(output.params, 2 * h);  // the final LayerNorm only
  EXPECT_EQ(output.params_per_rank, 2 * h + model.vocab * h);
  std::int64_t sum = 0;
  for (const LayerCost& layer : layers.layers) sum += layer.params;
  EXPECT_EQ(sum, layers.total_params);
}

TEST(ModelParams, BiasesOfRowParallelLayersStayWhole) {
  // Megatron: column-parallel biases (QKV, fc1) are split, row-parallel
  // ones (attention output, fc2) are whole on every rank.
  const ModelConfig model = load_model("megatron-22b");
  const std::int64_t h = model.hidden;
  const std::int64_t t = 4;
  const LayerCost layer = expand("megatron-22b", static_cast<int>(t)).layers[1];  // a copy: the expansion is a temporary
  const std::int64_t matrices = 12 * h * h / t;
  const std::int64_t biases = (3 * h + 4 * h) / t + 2 * h;
  EXPECT_EQ(layer.params_per_rank, matrices + biases + 4 * h);
}

TEST(ModelParams, TrainingStateBytesPerParameterByZeroStage) {
  // reference.md: mixed-precision Adam 18 bytes/param (2 + 4 + 12); the
  // distributed optimizer / ZeRO-1 6 + 12/d. Rajbhandari et al. 2020 Sec. 5:
  // ZeRO-2 also shards gradients, ZeRO-3 also weights: with fp32 gradients
  // 2 + 16/d and 18/d.
  EXPECT_DOUBLE_EQ(state_bytes_per_param(ZeroStage::kNone, 8).total(), 18.0);
  EXPECT_DOUBLE_EQ(state_bytes_per_param(ZeroStage::kOptimizer, 8).total(), 6.0 + 12.0 / 8);
  EXPECT_DOUBLE_EQ(state_bytes_per_param(ZeroStage::kGradients, 8).total(), 2.0 + 16.0 / 8);
  EXPECT_DOUBLE_EQ(state_bytes_per_param(ZeroStage::kWeights, 8).total(), 18.0 / 8);
  EXPECT_DOUBLE_EQ(state_bytes_per_param(ZeroStage::kOptimizer, 1).total(), 18.0);
  // --grad-reduce-in-bf16: 2-byte gradient buffers.
  EXPECT_DOUBLE_EQ(state_bytes_per_param(ZeroStage::kOptimizer, 8, 2).total(), 4.0 + 12.0 / 8);
  EXPECT_DOUBLE_EQ(state_bytes_per_param(ZeroStage::kGradients, 8, 2).gradients, 2.0 / 8);
}

// Megatron's precision-aware optimizer with bf16 moments: fp32 master
// weights (4) and two 2-byte moments, 8 bytes of state for Adam's 12, in
// its distributed optimizer only (elsewhere the flag does not apply).
TEST(ModelParams, Bf16OptimizerStatesHoldEightBytesInTheDistributedOptimizer) {
  RuntimeFlags flags;
  flags.optimizer_states_in_bf16 = true;
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_param(flags), 8.0);
  EXPECT_DOUBLE_EQ(optimizer_bytes_per_param(RuntimeFlags{}), 12.0);
  TrainingShape shape;
  shape.dp = 8;
  shape.zero = ZeroStage::kOptimizer;
  shape.apply(flags);
  EXPECT_TRUE(shape.runtime.optimizer_states_in_bf16);
  EXPECT_DOUBLE_EQ(state_bytes(shape).total(), 6.0 + 8.0 / 8);
  shape.zero = ZeroStage::kNone;
  shape.apply(flags);
  EXPECT_FALSE(shape.runtime.optimizer_states_in_bf16);
  EXPECT_DOUBLE_EQ(state_bytes(shape).total(), 18.0);
}

}  // namespace
}  // namespace pipeplan::models
