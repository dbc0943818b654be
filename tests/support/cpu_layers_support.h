// Small models and whole-model passes for the CPU backend's layer tests.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/model_config.h"
#include "models/training_shape.h"
#include "profiler/cpu/attention.h"
#include "profiler/cpu/layer.h"
#include "profiler/cpu/model_builder.h"

namespace pipeplan::profiler::layer_test {

using Layers = std::vector<std::unique_ptr<Layer>>;

// Llama-style and shrunk below the zoo's `tiny`: RMSNorm, SwiGLU, RoPE and
// grouped-query attention (2 query heads share 1 key/value head).
inline models::ModelConfig small_llama() {
  models::ModelConfig model;
  model.name = "small-llama";
  model.layers = 2;
  model.hidden = 16;
  model.ffn = 32;
  model.heads = 2;
  model.kv_heads = 1;
  model.head_dim = 8;
  model.vocab = 37;
  model.context = 16;
  model.norm = models::NormKind::kRmsNorm;
  model.mlp = models::MlpKind::kSwiglu;
  model.position = models::PositionEmbedding::kRope;
  return model;
}

// GPT-style: LayerNorm, GELU, learned positions (7 rows, 2 of them unused
// at s = 5), biases; tied embeddings and dropout, which the backend ignores.
inline models::ModelConfig small_gpt() {
  models::ModelConfig model = small_llama();
  model.name = "small-gpt";
  model.kv_heads = 2;
  model.context = 7;
  model.norm = models::NormKind::kLayerNorm;
  model.mlp = models::MlpKind::kGelu;
  model.position = models::PositionEmbedding::kLearned;
  model.biases = model.tied_embeddings = model.dropout = true;
  return model;
}

inline models::TrainingShape shape_of(int micro_batch_size, int seq_len) {
  models::TrainingShape shape;
  shape.micro_batch_size = micro_batch_size;
  shape.seq_len = seq_len;
  return shape;
}

struct RunSetup {
  models::ModelConfig model;
  models::TrainingShape shape = shape_of(2, 5);
  int microbatches = 2;
  std::uint64_t seed = 99;
};

inline Layers build_all(const RunSetup& setup) {
  return build_cpu_layers(setup.model, setup.shape, 0, setup.model.layers + 2, {setup.seed, setup.microbatches});
}

// F of micro-batch mb through every layer; returns the loss. `nudge`, if
// given, edits block 0's input first.
inline float forward_all(Layers& layers, const RunSetup& setup, int mb, const std::function<void(Matrix&)>& nudge = {}) {
  set_targets(*layers.back(), mb, sample_targets(setup.model, setup.shape, mb, setup.seed));
  Matrix x = layers[0]->forward(mb, sample_tokens(setup.model, setup.shape, mb, setup.seed));
  if (nudge) nudge(x);
  for (std::size_t i = 1; i < layers.size(); ++i) x = layers[i]->forward(mb, x);
  return x(0, 0);
}

// I of micro-batch mb backwards through every layer; returns dL/d(block 0's input).
inline Matrix backward_input_all(Layers& layers, int mb) {
  Matrix gradient = Matrix::Zero(1, 1);
  for (std::size_t i = layers.size(); i-- > 1;) gradient = layers[i]->backward_input(mb, gradient);
  EXPECT_EQ(layers[0]->backward_input(mb, gradient).size(), 0);  // the embedding has no input gradient
  return gradient;
}

inline void backward_weight_all(Layers& layers, int mb) {
  for (auto& layer : layers) layer->backward_weight(mb);
}

// Every layer's parameters, named "<layer index> <name>".
inline std::vector<Parameter> all_parameters(Layers& layers) {
  std::vector<Parameter> result;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    for (Parameter& parameter : layers[i]->parameters()) {
      parameter.name = fmt::format("{} {}", i, parameter.name);
      result.push_back(parameter);
    }
  }
  return result;
}

inline std::vector<Matrix> all_gradients(Layers& layers) {
  std::vector<Matrix> result;
  for (const Parameter& parameter : all_parameters(layers)) result.push_back(*parameter.gradient);
  return result;
}

}  // namespace pipeplan::profiler::layer_test
