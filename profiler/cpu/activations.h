// The MLP's elementwise activations. SwiGLU takes the fused gate|up
// projection (tokens x 2 ffn) and returns silu(gate) * up; GELU (tanh
// approximation) maps tokens x ffn to the same. Both keep their input for
// the input-gradient pass only: no weights, so I frees everything.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/eigen_core.h"
#include "models/model_config.h"
#include "profiler/cpu/layer.h"
#include "profiler/cpu/micro_batch_state.h"

namespace pipeplan::profiler {

enum class ActivationType { kSwiglu, kGelu };

// The model's MLP activation; InputError for one neither backend has
// (squared ReLU), rather than measuring another in its place.
ActivationType activation_of(const models::ModelConfig& model);

class Activation : public Layer {
 public:
  Activation(std::string name, ActivationType type, int ffn);

  Matrix forward(int mb, const Matrix& input) override;
  Matrix backward_input(int mb, const Matrix& grad_output) override;
  void backward_weight(int) override {}
  std::vector<Parameter> parameters() override { return {}; }
  std::int64_t held_bytes(int mb) const override { return states_.bytes(mb); }
  double forward_flops(int) const override { return 0; }
  double backward_input_flops(int) const override { return 0; }
  double backward_weight_flops(int) const override { return 0; }

 private:
  struct State {
    Matrix input;
    std::int64_t bytes() const { return matrix_bytes(input); }
  };

  std::string name_;
  ActivationType type_;
  int ffn_;
  MicroBatchStates<State> states_;
};

}  // namespace pipeplan::profiler
