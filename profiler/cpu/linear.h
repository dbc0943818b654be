// y = x W^T + b. The input-gradient pass computes dx = dy W and stashes
// (x, dy) for the weight-gradient pass, which adds dy^T x and sum(dy).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/eigen_core.h"
#include "profiler/cpu/layer.h"
#include "profiler/cpu/micro_batch_state.h"
#include "profiler/cpu/random.h"

namespace pipeplan::profiler {

class Linear : public Layer {
 public:
  Linear(std::string name, int in, int out, bool bias, Rng& rng);

  Matrix forward(int mb, const Matrix& input) override;
  Matrix backward_input(int mb, const Matrix& grad_output) override;
  void backward_weight(int mb) override;
  std::vector<Parameter> parameters() override;
  std::int64_t held_bytes(int mb) const override { return states_.bytes(mb); }
  double forward_flops(int tokens) const override { return product_flops(tokens); }
  double backward_input_flops(int tokens) const override { return product_flops(tokens); }
  double backward_weight_flops(int tokens) const override { return product_flops(tokens); }

 private:
  struct State {
    Matrix input;        // from F, for W
    Matrix grad_output;  // from I, for W
    std::int64_t bytes() const { return matrix_bytes(input) + matrix_bytes(grad_output); }
  };

  double product_flops(int tokens) const { return 2.0 * tokens * weight_.rows() * weight_.cols(); }

  std::string name_;
  bool has_bias_;
  Matrix weight_;  // out x in
  Matrix weight_grad_;
  Matrix bias_;  // 1 x out (0 x 0 without a bias)
  Matrix bias_grad_;
  MicroBatchStates<State> states_;
};

}  // namespace pipeplan::profiler
