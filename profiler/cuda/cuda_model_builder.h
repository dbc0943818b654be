// The real layers of a model on one GPU (bf16): the embedding, dense
// transformer blocks and the output layer, with the same weights as the
// CPU backend's build_cpu_layers for the same seed and layer index (drawn
// on the host by the CPU backend's own code, rounded to bf16, uploaded), so
// that every process building a layer builds the same one, on either
// backend.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/model_config.h"
#include "models/training_shape.h"
#include "profiler/cuda/device_context.h"
#include "profiler/cuda/device_layer.h"

namespace pipeplan::profiler {

struct CudaModelOptions {
  std::uint64_t seed = 1234;
  int microbatches = 1;  // the loss of each micro-batch is scaled by 1 / microbatches
};

// Layers [first, end) of the sequence models::expand_layers describes (0 the
// embedding, 1..L the blocks, L + 1 the output layer), on `context`'s GPU.
// Throws InputError for what the CUDA backend does not run: tensor
// parallelism (t > 1), mixture of experts, latent attention.
std::vector<std::unique_ptr<DeviceLayer>> build_cuda_layers(const std::shared_ptr<DeviceContext>& context,
                                                            const models::ModelConfig& model,
                                                            const models::TrainingShape& shape, int first, int end,
                                                            const CudaModelOptions& options = {});

// sample_tokens (the CPU backend's deterministic inputs) on the device: an
// fp32 column of token ids for the embedding.
DeviceTensor sample_device_tokens(const std::shared_ptr<DeviceContext>& context, const models::ModelConfig& model,
                                  const models::TrainingShape& shape, int mb, std::uint64_t seed);

// The output layer needs the targets (sample_targets) before its forward pass.
void set_device_targets(DeviceLayer& output_layer, int mb, const std::vector<int>& targets);

}  // namespace pipeplan::profiler
