// A model layer on one GPU (bf16 activations, fp32 accumulation), with the
// backward split as Zero Bubble splits it, like the CPU backend's Layer
// (profiler/cpu/layer.h): the input-gradient pass (I) returns the gradient
// for the previous layer and keeps what the weight-gradient pass (W) needs;
// W adds the parameter gradients (fp32) and frees the rest. Every pass is
// keyed by micro-batch, so a pipeline schedule can hold many micro-batches
// in flight and run their passes in any order valid per micro-batch.
//
// Passes take their tensor by value: a layer that keeps its input (or its
// output gradient) for a later pass keeps that buffer rather than a copy,
// as autograd does. A caller that still needs the tensor passes clone().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/cuda/device_tensor.h"

namespace pipeplan::profiler {

// A parameter (bf16) and its accumulated gradient (fp32, same shape).
struct DeviceParameter {
  std::string name;  // as the CPU layer names it ("attention.qkv.weight")
  DeviceTensor* value;
  DeviceTensor* gradient;
};

class DeviceLayer {
 public:
  virtual ~DeviceLayer() = default;
  // Runs the forward pass of micro-batch `mb` and keeps what its backward needs.
  virtual DeviceTensor forward(int mb, DeviceTensor input) = 0;
  // Input-gradient pass: takes dL/d(output), returns dL/d(input); frees what
  // only it needed and keeps what W needs.
  virtual DeviceTensor backward_input(int mb, DeviceTensor grad_output) = 0;
  // Weight-gradient pass: adds mb's parameter gradients and frees the rest.
  virtual void backward_weight(int mb) = 0;
  virtual std::vector<DeviceParameter> parameters() = 0;
  // Bytes currently kept for micro-batch mb (activations, stashed inputs).
  virtual std::int64_t held_bytes(int mb) const = 0;
  // FLOPs of each pass for a micro-batch of `tokens` rows (matrix products),
  // counted as the CPU backend counts them.
  virtual double forward_flops(int tokens) const = 0;
  virtual double backward_input_flops(int tokens) const = 0;
  virtual double backward_weight_flops(int tokens) const = 0;
};

}  // namespace pipeplan::profiler
