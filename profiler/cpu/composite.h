// Layers made of layers: a chain run in order (its backward in reverse),
// and a residual connection around a chain. Neither keeps anything of its
// own per micro-batch: a residual's gradient is dy plus the inner one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/eigen_core.h"
#include "profiler/cpu/layer.h"

namespace pipeplan::profiler {

class Sequential : public Layer {
 public:
  // Parameters are reported as "<child name>.<parameter name>".
  void add(std::string name, std::unique_ptr<Layer> layer);

  Matrix forward(int mb, const Matrix& input) override;
  Matrix backward_input(int mb, const Matrix& grad_output) override;
  void backward_weight(int mb) override;
  std::vector<Parameter> parameters() override;
  std::int64_t held_bytes(int mb) const override;
  double forward_flops(int tokens) const override;
  double backward_input_flops(int tokens) const override;
  double backward_weight_flops(int tokens) const override;

 private:
  std::vector<std::pair<std::string, std::unique_ptr<Layer>>> children_;
};

// y = x + inner(x).
class Residual : public Layer {
 public:
  explicit Residual(std::unique_ptr<Layer> inner) : inner_(std::move(inner)) {}

  Matrix forward(int mb, const Matrix& input) override { return input + inner_->forward(mb, input); }
  Matrix backward_input(int mb, const Matrix& grad_output) override {
    return grad_output + inner_->backward_input(mb, grad_output);
  }
  void backward_weight(int mb) override { inner_->backward_weight(mb); }
  std::vector<Parameter> parameters() override { return inner_->parameters(); }
  std::int64_t held_bytes(int mb) const override { return inner_->held_bytes(mb); }
  double forward_flops(int tokens) const override { return inner_->forward_flops(tokens); }
  double backward_input_flops(int tokens) const override { return inner_->backward_input_flops(tokens); }
  double backward_weight_flops(int tokens) const override { return inner_->backward_weight_flops(tokens); }

 private:
  std::unique_ptr<Layer> inner_;
};

}  // namespace pipeplan::profiler
