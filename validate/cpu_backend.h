// The CPU backend of the stage runner: fp32 Eigen layers, tensors between
// ranks through a Transport (MPI, or threads in tests), memory as the heap
// allocator counts it.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "models/model_config.h"
#include "models/training_shape.h"
#include "profiler/cpu/micro_batch_state.h"
#include "profiler/cpu/model_builder.h"
#include "profiler/memory_probe.h"
#include "validate/gradient_check.h"
#include "validate/transport.h"

namespace pipeplan::validate {

struct CpuBackend {
  using Tensor = profiler::Matrix;
  using Layer = profiler::Layer;
  using Parameter = profiler::Parameter;
  using Channel = Transport;
  using MemoryProbe = profiler::MemoryProbe;

  static constexpr double kGradientTolerance = kFp32GradientTolerance;
  static constexpr bool kBf16Weights = false;  // the reference uses the weights as drawn

  std::vector<std::unique_ptr<Layer>> build(const models::ModelConfig& model, const models::TrainingShape& shape,
                                            int first, int end, std::uint64_t seed, int microbatches) const {
    return profiler::build_cpu_layers(model, shape, first, end, {seed, microbatches});
  }
  // The first stage's input: token ids as a column.
  Tensor tokens(const models::ModelConfig& model, const models::TrainingShape& shape, int mb,
                std::uint64_t seed) const {
    return profiler::sample_tokens(model, shape, mb, seed);
  }
  void set_targets(Layer& output_layer, int mb, std::vector<int> targets) const {
    profiler::set_targets(output_layer, mb, std::move(targets));
  }
  // dL/dL, what the output layer's backward starts from.
  Tensor loss_gradient() const { return Tensor::Ones(1, 1); }
  // The output layer's forward returns its micro-batch's loss as 1x1.
  float loss(const Tensor& output) const { return output(0, 0); }
  std::int64_t bytes(const Tensor& tensor) const { return profiler::matrix_bytes(tensor); }
  // A tensor as an fp32 host matrix (already one here: no copy).
  const profiler::Matrix& host(const Tensor& tensor) const { return tensor; }
  void zero(Tensor& tensor) const { tensor.setZero(); }
  // Every pass has finished when its call returns.
  void finish_action() const {}
  MemoryProbe memory_probe() const { return {}; }
};

}  // namespace pipeplan::validate
