// The real layers of a model, for the CPU backend: the embedding, dense
// transformer blocks and the output layer (final norm, LM head, loss),
// with weights drawn from a seed and the layer's global index, so that
// every process building a layer builds the same one.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/model_config.h"
#include "models/training_shape.h"
#include "profiler/cpu/layer.h"

namespace pipeplan::profiler {

struct CpuModelOptions {
  std::uint64_t seed = 1234;
  int microbatches = 1;  // the loss of each micro-batch is scaled by 1 / microbatches
};

// Layers [first, end) of the sequence models::expand_layers describes (0 the
// embedding, 1..L the blocks, L + 1 the output layer). Throws InputError for
// what the CPU backend does not run: tensor parallelism (t > 1), mixture of
// experts, latent attention.
std::vector<std::unique_ptr<Layer>> build_cpu_layers(const models::ModelConfig& model,
                                                     const models::TrainingShape& shape, int first, int end,
                                                     const CpuModelOptions& options = {});

// Deterministic inputs for micro-batch mb: token ids (a column, as floats)
// and the next-token targets.
Matrix sample_tokens(const models::ModelConfig& model, const models::TrainingShape& shape, int mb,
                     std::uint64_t seed);
std::vector<int> sample_targets(const models::ModelConfig& model, const models::TrainingShape& shape, int mb,
                                std::uint64_t seed);

// The output layer needs the targets before its forward pass.
void set_targets(Layer& output_layer, int mb, std::vector<int> targets);

}  // namespace pipeplan::profiler
