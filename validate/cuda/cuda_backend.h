// The GPU backend of the stage runner (stage_runner.h): bf16 layers on one
// device (profiler/cuda), tensors between ranks over NCCL, memory as the
// device allocator counts it.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "models/model_config.h"
#include "models/training_shape.h"
#include "profiler/cuda/cuda_model_builder.h"
#include "profiler/cuda/device_context.h"
#include "profiler/cuda/device_layer.h"
#include "profiler/cuda/device_memory.h"
#include "profiler/cuda/device_tensor.h"
#include "validate/cuda/nccl_channel.h"
#include "validate/gradient_check.h"

namespace pipeplan::validate {

class CudaBackend {
 public:
  using Tensor = profiler::DeviceTensor;
  using Layer = profiler::DeviceLayer;
  using Parameter = profiler::DeviceParameter;
  using Channel = NcclChannel;
  using MemoryProbe = profiler::DeviceMemoryProbe;

  static constexpr double kGradientTolerance = kBf16GradientTolerance;
  static constexpr bool kBf16Weights = true;  // the reference uses the weights as the GPU holds them

  explicit CudaBackend(std::shared_ptr<profiler::DeviceContext> context) : context_(std::move(context)) {}

  std::vector<std::unique_ptr<Layer>> build(const models::ModelConfig& model, const models::TrainingShape& shape,
                                            int first, int end, std::uint64_t seed, int microbatches) const {
    return profiler::build_cuda_layers(context_, model, shape, first, end, {seed, microbatches});
  }
  Tensor tokens(const models::ModelConfig& model, const models::TrainingShape& shape, int mb,
                std::uint64_t seed) const {
    return profiler::sample_device_tokens(context_, model, shape, mb, seed);
  }
  void set_targets(Layer& output_layer, int mb, const std::vector<int>& targets) const {
    profiler::set_device_targets(output_layer, mb, targets);
  }
  // The output layer derives dL/d(logits) from its own softmax and ignores
  // the gradient it is given (device_edge_layers.h): nothing to upload.
  Tensor loss_gradient() const { return {}; }
  float loss(const Tensor& output) const { return profiler::to_host(output)(0, 0); }
  std::int64_t bytes(const Tensor& tensor) const { return tensor.bytes(); }
  profiler::Matrix host(const Tensor& tensor) const { return profiler::to_host(tensor); }
  void zero(Tensor& tensor) const { tensor.set_zero(); }
  // Passes only queue kernels on the layer stream: waiting for it at the
  // end of every action makes the action's record (host steady-clock times
  // around it) the action's real duration on the device.
  void finish_action() const { context_->synchronize(); }
  MemoryProbe memory_probe() const { return MemoryProbe(context_->device()); }
  const std::shared_ptr<profiler::DeviceContext>& context() const { return context_; }

 private:
  std::shared_ptr<profiler::DeviceContext> context_;
};

}  // namespace pipeplan::validate
