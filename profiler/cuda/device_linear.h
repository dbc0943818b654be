// y = x W^T + b on the GPU. The input-gradient pass computes dx = dy W and
// keeps (x, dy) for the weight-gradient pass, which adds dy^T x (and the
// column sums of dy) into the fp32 gradients with one accumulating GEMM.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/cpu/micro_batch_state.h"
#include "profiler/cuda/device_layer.h"

namespace pipeplan::profiler {

class DeviceLinear : public DeviceLayer {
 public:
  // `output` is bf16, or fp32 for the LM head, whose logits feed the fp32
  // cross-entropy (no bias then). The weights are left for the builder to
  // fill (they start at zero); the gradients start at zero.
  DeviceLinear(std::shared_ptr<DeviceContext> context, std::string name, int in, int out, bool bias,
               DType output = DType::kBf16);

  DeviceTensor forward(int mb, DeviceTensor input) override;
  DeviceTensor backward_input(int mb, DeviceTensor grad_output) override;
  void backward_weight(int mb) override;
  std::vector<DeviceParameter> parameters() override;
  std::int64_t held_bytes(int mb) const override { return states_.bytes(mb); }
  double forward_flops(int tokens) const override { return product_flops(tokens); }
  double backward_input_flops(int tokens) const override { return product_flops(tokens); }
  double backward_weight_flops(int tokens) const override { return product_flops(tokens); }

 private:
  struct State {
    DeviceTensor input;        // from F, for W
    DeviceTensor grad_output;  // from I, for W
    std::int64_t bytes() const { return input.bytes() + grad_output.bytes(); }
  };

  double product_flops(int tokens) const { return 2.0 * tokens * static_cast<double>(in_) * out_; }

  std::shared_ptr<DeviceContext> context_;
  std::string name_;
  int in_;
  int out_;
  DType output_;
  DeviceTensor weight_;  // out x in, bf16
  DeviceTensor weight_grad_;
  DeviceTensor bias_;  // 1 x out (empty without a bias)
  DeviceTensor bias_grad_;
  MicroBatchStates<State> states_;
};

}  // namespace pipeplan::profiler
