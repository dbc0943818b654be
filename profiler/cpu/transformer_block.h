// A pre-norm transformer block: h = x + Attention(Norm1(x)); out = h +
// MLP(Norm2(h)). Attention is a fused q|k|v projection, the attention core
// and the output projection; the MLP a fused gate|up (SwiGLU) or single
// (GELU) up projection, the activation and the down projection. Dropout is
// not run: the CPU backend measures and checks the deterministic path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_config.h"
#include "profiler/cpu/composite.h"
#include "common/eigen_core.h"
#include "profiler/cpu/layer.h"
#include "profiler/cpu/random.h"

namespace pipeplan::profiler {

class TransformerBlock : public Layer {
 public:
  // Parameters, in the order they are drawn from `rng`: attention.norm,
  // attention.qkv, attention.proj, mlp.norm, mlp.fc1, mlp.fc2.
  // `name` ("layer 3") prefixes the sub-layers' names in error messages.
  TransformerBlock(const models::ModelConfig& model, int seq_len, const std::string& name, Rng& rng);

  Matrix forward(int mb, const Matrix& input) override { return layers_.forward(mb, input); }
  Matrix backward_input(int mb, const Matrix& grad_output) override {
    return layers_.backward_input(mb, grad_output);
  }
  void backward_weight(int mb) override { layers_.backward_weight(mb); }
  std::vector<Parameter> parameters() override { return layers_.parameters(); }
  std::int64_t held_bytes(int mb) const override { return layers_.held_bytes(mb); }
  double forward_flops(int tokens) const override { return layers_.forward_flops(tokens); }
  double backward_input_flops(int tokens) const override { return layers_.backward_input_flops(tokens); }
  double backward_weight_flops(int tokens) const override { return layers_.backward_weight_flops(tokens); }

 private:
  Sequential layers_;
};

}  // namespace pipeplan::profiler
