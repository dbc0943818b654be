#include "profiler/cpu/model_builder.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "common/error.h"
#include "profiler/cpu/edge_layers.h"
#include "profiler/cpu/random.h"
#include "profiler/cpu/transformer_block.h"

namespace pipeplan::profiler {
namespace {

// Token ids travel as floats; above 2^24 they would no longer be exact.
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
// Token streams are drawn apart from the layers' weight streams (a layer
// index never comes near this).
constexpr std::uint64_t kTokenStream = std::uint64_t{1} << 40;

void require(bool ok, const std::string& message) {
  if (!ok) throw InputError(message);
}

void validate_shape(const models::ModelConfig& model, const models::TrainingShape& shape) {
  const std::string& name = model.name;
  require(model.vocab >= 1 && model.vocab <= kMaxVocab,
          fmt::format("model '{}': vocab {} must be between 1 and {} for the cpu backend", name, model.vocab,
                      kMaxVocab));
  require(shape.micro_batch_size >= 1, "micro-batch size must be >= 1");
  require(shape.seq_len >= 1, "sequence length must be >= 1");
}

void validate_model(const models::ModelConfig& model, const models::TrainingShape& shape) {
  const std::string& name = model.name;
  require(shape.tp == 1, "the cpu backend runs without tensor parallelism; use --tp 1");
  require(!model.mla.enabled(), fmt::format("layer kind 'mla' (multi-head latent attention) of model '{}' is not "
                                            "run by the cpu backend; use a model with standard attention",
                                            name));
  require(!model.moe.enabled(), fmt::format("layer kind 'moe' (mixture of experts) of model '{}' is not run by the "
                                            "cpu backend; use a dense model",
                                            name));
  validate_shape(model, shape);
  require(model.layers >= 1 && model.hidden >= 1 && model.ffn >= 1,
          fmt::format("model '{}': layers, hidden and ffn must be positive", name));
  require(model.heads >= 1 && model.kv_heads >= 1 && model.head_dim >= 1,
          fmt::format("model '{}': heads, kv_heads and head_dim must be positive", name));
  require(model.heads % model.kv_heads == 0,
          fmt::format("model '{}': kv_heads ({}) must divide heads ({})", name, model.kv_heads, model.heads));
  require(model.position != models::PositionEmbedding::kRope || model.head_dim % 2 == 0,
          fmt::format("model '{}': rotary embeddings need an even head_dim, got {}", name, model.head_dim));
  require(model.position != models::PositionEmbedding::kLearned || shape.seq_len <= model.context,
          fmt::format("sequence length {} exceeds the {} learned positions of model '{}'; use --seq {} or less",
                      shape.seq_len, model.context, name, model.context));
}

// b sequences of s + 1 tokens: the inputs are the first s of each, the
// targets the last s, so each target is the next token of its sequence.
std::vector<int> draw_sequences(const models::ModelConfig& model, const models::TrainingShape& shape, int mb,
                                std::uint64_t seed) {
  validate_shape(model, shape);
  Rng rng(seed, kTokenStream + static_cast<std::uint32_t>(mb));
  std::vector<int> tokens(static_cast<std::size_t>(shape.micro_batch_size) * (shape.seq_len + 1));
  for (int& token : tokens) token = static_cast<int>(rng.below(model.vocab));
  return tokens;
}

}  // namespace

std::vector<std::unique_ptr<Layer>> build_cpu_layers(const models::ModelConfig& model,
                                                     const models::TrainingShape& shape, int first, int end,
                                                     const CpuModelOptions& options) {
  validate_model(model, shape);
  const int count = model.layers + 2;
  require(0 <= first && first <= end && end <= count,
          fmt::format("layers [{}, {}) are outside model '{}', which has {} (embedding, {} blocks, output)", first,
                      end, model.name, count, model.layers));
  require(options.microbatches >= 1, "the number of micro-batches must be >= 1");
  std::vector<std::unique_ptr<Layer>> layers;
  layers.reserve(static_cast<std::size_t>(end - first));
  for (int index = first; index < end; ++index) {
    Rng rng(options.seed, static_cast<std::uint64_t>(index));  // the same weights in every process
    if (index == 0) {
      layers.push_back(std::make_unique<EmbeddingLayer>(model, shape.seq_len, rng));
    } else if (index <= model.layers) {
      layers.push_back(
          std::make_unique<TransformerBlock>(model, shape.seq_len, fmt::format("layer {}", index - 1), rng));
    } else {
      layers.push_back(std::make_unique<OutputLayer>(model, options.microbatches, rng));
    }
  }
  return layers;
}

Matrix sample_tokens(const models::ModelConfig& model, const models::TrainingShape& shape, int mb,
                     std::uint64_t seed) {
  const std::vector<int> sequences = draw_sequences(model, shape, mb, seed);
  const int s = shape.seq_len;
  Matrix tokens(static_cast<Eigen::Index>(shape.micro_batch_size) * s, 1);
  for (int n = 0; n < shape.micro_batch_size; ++n) {
    for (int j = 0; j < s; ++j) {
      tokens(static_cast<Eigen::Index>(n) * s + j, 0) = static_cast<float>(sequences[n * (s + 1) + j]);
    }
  }
  return tokens;
}

std::vector<int> sample_targets(const models::ModelConfig& model, const models::TrainingShape& shape, int mb,
                                std::uint64_t seed) {
  const std::vector<int> sequences = draw_sequences(model, shape, mb, seed);
  const int s = shape.seq_len;
  std::vector<int> targets;
  targets.reserve(static_cast<std::size_t>(shape.micro_batch_size) * s);
  for (int n = 0; n < shape.micro_batch_size; ++n) {
    for (int j = 0; j < s; ++j) targets.push_back(sequences[n * (s + 1) + j + 1]);
  }
  return targets;
}

void set_targets(Layer& output_layer, int mb, std::vector<int> targets) {
  auto* output = dynamic_cast<OutputLayer*>(&output_layer);
  if (output == nullptr) throw std::invalid_argument("set_targets: the layer is not the output layer");
  output->set_targets(mb, std::move(targets));
}

}  // namespace pipeplan::profiler
