#include "profiler/cuda/device_transformer_block.h"

#include <fmt/format.h>

#include "profiler/cuda/device_activation.h"
#include "profiler/cuda/device_attention.h"
#include "profiler/cuda/device_linear.h"
#include "profiler/cuda/device_norm.h"

namespace pipeplan::profiler {
namespace {

using Context = std::shared_ptr<DeviceContext>;

NormType norm_type(const models::ModelConfig& model) {
  return model.norm == models::NormKind::kRmsNorm ? NormType::kRms : NormType::kLayer;
}

std::unique_ptr<DeviceLayer> make_attention(const Context& context, const models::ModelConfig& model, int seq_len,
                                            const std::string& name) {
  AttentionShape shape;
  shape.heads = model.heads;
  shape.kv_heads = model.kv_heads;
  shape.head_dim = model.head_dim;
  shape.seq_len = seq_len;
  shape.rope = model.position == models::PositionEmbedding::kRope;
  auto chain = std::make_unique<DeviceSequential>();
  chain->add("norm", std::make_unique<DeviceNorm>(context, fmt::format("{} attention.norm", name), norm_type(model),
                                                  model.hidden));
  chain->add("qkv", std::make_unique<DeviceLinear>(context, fmt::format("{} attention.qkv", name), model.hidden,
                                                   shape.width(), model.biases));
  chain->add("core", std::make_unique<DeviceAttentionCore>(context, fmt::format("{} attention.core", name), shape));
  chain->add("proj", std::make_unique<DeviceLinear>(context, fmt::format("{} attention.proj", name),
                                                    model.heads * model.head_dim, model.hidden, model.biases));
  return std::make_unique<DeviceResidual>(std::move(chain));
}

std::unique_ptr<DeviceLayer> make_mlp(const Context& context, const models::ModelConfig& model,
                                      const std::string& name) {
  const ActivationType activation = activation_of(model);
  const bool gated = activation == ActivationType::kSwiglu;
  auto chain = std::make_unique<DeviceSequential>();
  chain->add("norm",
             std::make_unique<DeviceNorm>(context, fmt::format("{} mlp.norm", name), norm_type(model), model.hidden));
  chain->add("fc1", std::make_unique<DeviceLinear>(context, fmt::format("{} mlp.fc1", name), model.hidden,
                                                   gated ? 2 * model.ffn : model.ffn, model.biases));
  chain->add("act",
             std::make_unique<DeviceActivation>(context, fmt::format("{} mlp.act", name),
                                                activation, model.ffn));
  chain->add("fc2", std::make_unique<DeviceLinear>(context, fmt::format("{} mlp.fc2", name), model.ffn, model.hidden,
                                                   model.biases));
  return std::make_unique<DeviceResidual>(std::move(chain));
}

}  // namespace

DeviceTransformerBlock::DeviceTransformerBlock(const std::shared_ptr<DeviceContext>& context,
                                               const models::ModelConfig& model, int seq_len, const std::string& name) {
  layers_.add("attention", make_attention(context, model, seq_len, name));
  layers_.add("mlp", make_mlp(context, model, name));
}

}  // namespace pipeplan::profiler
