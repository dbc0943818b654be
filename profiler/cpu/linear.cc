#include "profiler/cpu/linear.h"

namespace pipeplan::profiler {

Linear::Linear(std::string name, int in, int out, bool bias, Rng& rng)
    : name_(std::move(name)),
      has_bias_(bias),
      weight_(out, in),
      weight_grad_(Matrix::Zero(out, in)),
      states_(name_) {
  rng.fill(weight_, kInitScale);
  if (has_bias_) {
    bias_ = Matrix::Zero(1, out);
    bias_grad_ = Matrix::Zero(1, out);
  }
}

Matrix Linear::forward(int mb, const Matrix& input) {
  check_shape(name_, "the input", input, input.rows(), weight_.cols());
  State& state = states_.begin_forward(mb);
  state.input = input;
  Matrix output(input.rows(), weight_.rows());
  output.noalias() = input * weight_.transpose();
  if (has_bias_) output.rowwise() += bias_.row(0);
  return output;
}

Matrix Linear::backward_input(int mb, const Matrix& grad_output) {
  State& state = states_.for_input(mb);
  check_shape(name_, "the output gradient", grad_output, state.input.rows(), weight_.rows());
  Matrix grad_input(grad_output.rows(), weight_.cols());
  grad_input.noalias() = grad_output * weight_;
  state.grad_output = grad_output;
  return grad_input;
}

void Linear::backward_weight(int mb) {
  State& state = states_.for_weight(mb);
  // Accumulated in place, as fused weight-gradient GEMMs do (Megatron's
  // gradient_accumulation_fusion): no weight-sized temporary. The sum then
  // depends on the order of W passes by rounding only (about 1e-7).
  weight_grad_.noalias() += state.grad_output.transpose() * state.input;
  if (has_bias_) bias_grad_ += state.grad_output.colwise().sum();
  states_.release(mb);
}

std::vector<Parameter> Linear::parameters() {
  std::vector<Parameter> result{{"weight", &weight_, &weight_grad_}};
  if (has_bias_) result.push_back({"bias", &bias_, &bias_grad_});
  return result;
}

}  // namespace pipeplan::profiler
