// A pre-norm transformer block on the GPU, built as the CPU backend's
// TransformerBlock is (the same sub-layers, names and parameter order):
// h = x + proj(core(qkv(norm(x)))); out = h + fc2(act(fc1(norm(h)))).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/model_config.h"
#include "profiler/cuda/device_composite.h"
#include "profiler/cuda/device_layer.h"

namespace pipeplan::profiler {

class DeviceTransformerBlock : public DeviceLayer {
 public:
  // `name` ("layer 3") prefixes the sub-layers' names in error messages.
  DeviceTransformerBlock(const std::shared_ptr<DeviceContext>& context, const models::ModelConfig& model, int seq_len,
                         const std::string& name);

  DeviceTensor forward(int mb, DeviceTensor input) override { return layers_.forward(mb, std::move(input)); }
  DeviceTensor backward_input(int mb, DeviceTensor grad_output) override {
    return layers_.backward_input(mb, std::move(grad_output));
  }
  void backward_weight(int mb) override { layers_.backward_weight(mb); }
  std::vector<DeviceParameter> parameters() override { return layers_.parameters(); }
  std::int64_t held_bytes(int mb) const override { return layers_.held_bytes(mb); }
  double forward_flops(int tokens) const override { return layers_.forward_flops(tokens); }
  double backward_input_flops(int tokens) const override { return layers_.backward_input_flops(tokens); }
  double backward_weight_flops(int tokens) const override { return layers_.backward_weight_flops(tokens); }

 private:
  DeviceSequential layers_;
};

}  // namespace pipeplan::profiler
