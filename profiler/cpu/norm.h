// RMSNorm (y = x / rms(x) * gamma) and LayerNorm (y = (x - mean) / std *
// gamma + beta), eps 1e-5, over each row. The input-gradient pass needs the
// normalised input and 1/std; the weight-gradient pass needs the normalised
// input and dy, so I frees 1/std and stashes dy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/eigen_core.h"
#include "profiler/cpu/layer.h"
#include "profiler/cpu/micro_batch_state.h"

namespace pipeplan::profiler {

enum class NormType { kRms, kLayer };

class Norm : public Layer {
 public:
  Norm(std::string name, NormType type, int width);

  Matrix forward(int mb, const Matrix& input) override;
  Matrix backward_input(int mb, const Matrix& grad_output) override;
  void backward_weight(int mb) override;
  std::vector<Parameter> parameters() override;
  std::int64_t held_bytes(int mb) const override { return states_.bytes(mb); }
  // Elementwise work only: no matrix products.
  double forward_flops(int) const override { return 0; }
  double backward_input_flops(int) const override { return 0; }
  double backward_weight_flops(int) const override { return 0; }

 private:
  struct State {
    Matrix normalized;   // tokens x width, from F for I and W
    Matrix inv_std;      // tokens x 1, from F for I
    Matrix grad_output;  // from I, for W
    std::int64_t bytes() const {
      return matrix_bytes(normalized) + matrix_bytes(inv_std) + matrix_bytes(grad_output);
    }
  };

  std::string name_;
  NormType type_;
  Matrix gamma_;  // 1 x width
  Matrix gamma_grad_;
  Matrix beta_;  // 1 x width, LayerNorm only
  Matrix beta_grad_;
  MicroBatchStates<State> states_;
};

}  // namespace pipeplan::profiler
