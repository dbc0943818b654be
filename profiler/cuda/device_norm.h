// RMSNorm or LayerNorm on the GPU, as the CPU backend's Norm: F keeps the
// normalised input (bf16) and 1/std per row (fp32); I frees 1/std and
// stashes dy; W adds the gamma (and beta) gradients.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/cpu/micro_batch_state.h"
#include "profiler/cpu/norm.h"
#include "profiler/cuda/device_layer.h"

namespace pipeplan::profiler {

class DeviceNorm : public DeviceLayer {
 public:
  DeviceNorm(std::shared_ptr<DeviceContext> context, std::string name, NormType type, int width);

  DeviceTensor forward(int mb, DeviceTensor input) override;
  DeviceTensor backward_input(int mb, DeviceTensor grad_output) override;
  void backward_weight(int mb) override;
  std::vector<DeviceParameter> parameters() override;
  std::int64_t held_bytes(int mb) const override { return states_.bytes(mb); }
  double forward_flops(int) const override { return 0; }
  double backward_input_flops(int) const override { return 0; }
  double backward_weight_flops(int) const override { return 0; }

 private:
  struct State {
    DeviceTensor normalized;   // tokens x width, from F for I and W
    DeviceTensor inv_std;      // tokens x 1, from F for I
    DeviceTensor grad_output;  // from I, for W
    std::int64_t bytes() const { return normalized.bytes() + inv_std.bytes() + grad_output.bytes(); }
  };

  std::shared_ptr<DeviceContext> context_;
  std::string name_;
  NormType type_;
  int width_;
  DeviceTensor gamma_;  // 1 x width
  DeviceTensor gamma_grad_;
  DeviceTensor beta_;  // LayerNorm only
  DeviceTensor beta_grad_;
  MicroBatchStates<State> states_;
};

}  // namespace pipeplan::profiler
