#include "profiler/cuda/cuda_model_builder.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "common/error.h"
#include "profiler/cpu/model_builder.h"
#include "profiler/cuda/device_edge_layers.h"
#include "profiler/cuda/device_transformer_block.h"

namespace pipeplan::profiler {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InputError(message);
}

// What the CUDA backend refuses in its own words; the rest (shapes, head
// counts) build_cpu_layers checks as it draws the weights.
void validate(const models::ModelConfig& model, const models::TrainingShape& shape) {
  require(shape.tp == 1, "the cuda backend runs without tensor parallelism; use --tp 1");
  require(!model.mla.enabled(), fmt::format("layer kind 'mla' (multi-head latent attention) of model '{}' is not "
                                            "run by the cuda backend; use a model with standard attention",
                                            model.name));
  require(!model.moe.enabled(), fmt::format("layer kind 'moe' (mixture of experts) of model '{}' is not run by the "
                                            "cuda backend; use a dense model",
                                            model.name));
}

std::unique_ptr<DeviceLayer> make_layer(const std::shared_ptr<DeviceContext>& context, const models::ModelConfig& model,
                                        int seq_len, int index, int microbatches) {
  if (index == 0) return std::make_unique<DeviceEmbedding>(context, model, seq_len);
  if (index <= model.layers) {
    return std::make_unique<DeviceTransformerBlock>(context, model, seq_len, fmt::format("layer {}", index - 1));
  }
  return std::make_unique<DeviceOutputLayer>(context, model, microbatches);
}

// Uploads each of the CPU layer's parameters into the device parameter of
// the same name; both layers are built from the same description, so a
// missing or extra name is a bug.
void copy_weights(Layer& cpu, DeviceLayer& device, int index) {
  std::vector<Parameter> drawn = cpu.parameters();
  std::vector<DeviceParameter> targets = device.parameters();
  if (drawn.size() != targets.size()) {
    throw std::logic_error(fmt::format("layer {}: the CPU layer has {} parameters, the CUDA layer {}", index,
                                       drawn.size(), targets.size()));
  }
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    if (drawn[i].name != targets[i].name) {
      throw std::logic_error(fmt::format("layer {}: parameter {} is '{}' on the CPU, '{}' on the GPU", index, i,
                                         drawn[i].name, targets[i].name));
    }
    upload(*drawn[i].value, *targets[i].value);
  }
}

}  // namespace

std::vector<std::unique_ptr<DeviceLayer>> build_cuda_layers(const std::shared_ptr<DeviceContext>& context,
                                                            const models::ModelConfig& model,
                                                            const models::TrainingShape& shape, int first, int end,
                                                            const CudaModelOptions& options) {
  validate(model, shape);
  const int count = model.layers + 2;
  require(0 <= first && first <= end && end <= count,
          fmt::format("layers [{}, {}) are outside model '{}', which has {} (embedding, {} blocks, output)", first, end,
                      model.name, count, model.layers));
  std::vector<std::unique_ptr<DeviceLayer>> layers;
  for (int index = first; index < end; ++index) {
    // One CPU layer at a time: its fp32 weights and gradients live on the
    // host only while they are copied.
    auto drawn = build_cpu_layers(model, shape, index, index + 1, {options.seed, options.microbatches});
    layers.push_back(make_layer(context, model, shape.seq_len, index, options.microbatches));
    copy_weights(*drawn.front(), *layers.back(), index);
  }
  return layers;
}

DeviceTensor sample_device_tokens(const std::shared_ptr<DeviceContext>& context, const models::ModelConfig& model,
                                  const models::TrainingShape& shape, int mb, std::uint64_t seed) {
  return to_device(context, sample_tokens(model, shape, mb, seed), DType::kF32);
}

void set_device_targets(DeviceLayer& output_layer, int mb, const std::vector<int>& targets) {
  auto* output = dynamic_cast<DeviceOutputLayer*>(&output_layer);
  if (output == nullptr) throw std::invalid_argument("set_device_targets: the layer is not the output layer");
  output->set_targets(mb, targets);
}

}  // namespace pipeplan::profiler
