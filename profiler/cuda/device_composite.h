// Device layers made of device layers, as the CPU backend's composite.h: a
// chain run in order (its backward in reverse) and a residual connection
// around a chain. Neither keeps anything of its own per micro-batch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "profiler/cuda/device_layer.h"

namespace pipeplan::profiler {

class DeviceSequential : public DeviceLayer {
 public:
  // Parameters are reported as "<child name>.<parameter name>".
  void add(std::string name, std::unique_ptr<DeviceLayer> layer);

  DeviceTensor forward(int mb, DeviceTensor input) override;
  DeviceTensor backward_input(int mb, DeviceTensor grad_output) override;
  void backward_weight(int mb) override;
  std::vector<DeviceParameter> parameters() override;
  std::int64_t held_bytes(int mb) const override;
  double forward_flops(int tokens) const override;
  double backward_input_flops(int tokens) const override;
  double backward_weight_flops(int tokens) const override;

 private:
  std::vector<std::pair<std::string, std::unique_ptr<DeviceLayer>>> children_;
};

// y = x + inner(x): the inner chain gets a copy of x (it may keep it), and
// the gradient is dy plus the inner one.
class DeviceResidual : public DeviceLayer {
 public:
  explicit DeviceResidual(std::unique_ptr<DeviceLayer> inner) : inner_(std::move(inner)) {}

  DeviceTensor forward(int mb, DeviceTensor input) override;
  DeviceTensor backward_input(int mb, DeviceTensor grad_output) override;
  void backward_weight(int mb) override { inner_->backward_weight(mb); }
  std::vector<DeviceParameter> parameters() override { return inner_->parameters(); }
  std::int64_t held_bytes(int mb) const override { return inner_->held_bytes(mb); }
  double forward_flops(int tokens) const override { return inner_->forward_flops(tokens); }
  double backward_input_flops(int tokens) const override { return inner_->backward_input_flops(tokens); }
  double backward_weight_flops(int tokens) const override { return inner_->backward_weight_flops(tokens); }

 private:
  std::unique_ptr<DeviceLayer> inner_;
};

}  // namespace pipeplan::profiler
