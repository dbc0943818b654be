// SwiGLU (fused gate|up in, silu(gate) * up out) or GELU on the GPU, as
// the CPU backend's Activation: F keeps its input for I; no weights, so I
// frees everything.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/cpu/activations.h"
#include "profiler/cpu/micro_batch_state.h"
#include "profiler/cuda/device_layer.h"

namespace pipeplan::profiler {

class DeviceActivation : public DeviceLayer {
 public:
  DeviceActivation(std::shared_ptr<DeviceContext> context, std::string name, ActivationType type, int ffn);

  DeviceTensor forward(int mb, DeviceTensor input) override;
  DeviceTensor backward_input(int mb, DeviceTensor grad_output) override;
  void backward_weight(int) override {}
  std::vector<DeviceParameter> parameters() override { return {}; }
  std::int64_t held_bytes(int mb) const override { return states_.bytes(mb); }
  double forward_flops(int) const override { return 0; }
  double backward_input_flops(int) const override { return 0; }
  double backward_weight_flops(int) const override { return 0; }

 private:
  struct State {
    DeviceTensor input;
    std::int64_t bytes() const { return input.bytes(); }
  };

  int input_width() const { return type_ == ActivationType::kSwiglu ? 2 * ffn_ : ffn_; }

  std::shared_ptr<DeviceContext> context_;
  std::string name_;
  ActivationType type_;
  int ffn_;
  MicroBatchStates<State> states_;
};

}  // namespace pipeplan::profiler
