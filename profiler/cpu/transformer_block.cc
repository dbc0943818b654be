#include "profiler/cpu/transformer_block.h"

#include <fmt/format.h>

#include <memory>

#include "profiler/cpu/activations.h"
#include "profiler/cpu/attention.h"
#include "profiler/cpu/linear.h"
#include "profiler/cpu/norm.h"

namespace pipeplan::profiler {
namespace {

NormType norm_type(const models::ModelConfig& model) {
  return model.norm == models::NormKind::kRmsNorm ? NormType::kRms : NormType::kLayer;
}

std::unique_ptr<Layer> make_attention(const models::ModelConfig& model, int seq_len, const std::string& name,
                                      Rng& rng) {
  AttentionShape shape;
  shape.heads = model.heads;
  shape.kv_heads = model.kv_heads;
  shape.head_dim = model.head_dim;
  shape.seq_len = seq_len;
  shape.rope = model.position == models::PositionEmbedding::kRope;
  const int context_width = model.heads * model.head_dim;
  auto chain = std::make_unique<Sequential>();
  chain->add("norm", std::make_unique<Norm>(fmt::format("{} attention.norm", name), norm_type(model), model.hidden));
  chain->add("qkv", std::make_unique<Linear>(fmt::format("{} attention.qkv", name), model.hidden, shape.width(),
                                              model.biases, rng));
  chain->add("core", std::make_unique<AttentionCore>(fmt::format("{} attention.core", name), shape));
  chain->add("proj", std::make_unique<Linear>(fmt::format("{} attention.proj", name), context_width, model.hidden,
                                               model.biases, rng));
  return std::make_unique<Residual>(std::move(chain));
}

std::unique_ptr<Layer> make_mlp(const models::ModelConfig& model, const std::string& name, Rng& rng) {
  const ActivationType activation = activation_of(model);
  const bool gated = activation == ActivationType::kSwiglu;
  const int up_width = gated ? 2 * model.ffn : model.ffn;
  auto chain = std::make_unique<Sequential>();
  chain->add("norm", std::make_unique<Norm>(fmt::format("{} mlp.norm", name), norm_type(model), model.hidden));
  chain->add("fc1", std::make_unique<Linear>(fmt::format("{} mlp.fc1", name), model.hidden, up_width, model.biases,
                                              rng));
  chain->add("act", std::make_unique<Activation>(fmt::format("{} mlp.act", name), activation, model.ffn));
  chain->add("fc2", std::make_unique<Linear>(fmt::format("{} mlp.fc2", name), model.ffn, model.hidden, model.biases,
                                              rng));
  return std::make_unique<Residual>(std::move(chain));
}

}  // namespace

TransformerBlock::TransformerBlock(const models::ModelConfig& model, int seq_len, const std::string& name,
                                   Rng& rng) {
  layers_.add("attention", make_attention(model, seq_len, name, rng));
  layers_.add("mlp", make_mlp(model, name, rng));
}

}  // namespace pipeplan::profiler
