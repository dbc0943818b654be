#include "profiler/cpu/activations.h"

#include <cmath>

#include <fmt/format.h>

#include "common/error.h"

namespace pipeplan::profiler {
namespace {

// Functors rather than functions, so that Eigen inlines them.
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

struct Silu {
  float operator()(float x) const { return x * sigmoid(x); }
};
struct SiluDerivative {
  float operator()(float x) const {
    const float s = sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
  }
};

// GELU, tanh approximation: 0.5 x (1 + tanh(c (x + 0.044715 x^3))).
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;

struct Gelu {
  float operator()(float x) const { return 0.5f * x * (1.0f + std::tanh(kGeluC * (x + kGeluA * x * x * x))); }
};
struct GeluDerivative {
  float operator()(float x) const {
    const float t = std::tanh(kGeluC * (x + kGeluA * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * kGeluA * x * x);
  }
};

}  // namespace

ActivationType activation_of(const models::ModelConfig& model) {
  switch (model.mlp) {
    case models::MlpKind::kSwiglu:
      return ActivationType::kSwiglu;
    case models::MlpKind::kGelu:
      return ActivationType::kGelu;
    case models::MlpKind::kSquaredRelu:
      break;
  }
  throw InputError(fmt::format("{}: its squared-ReLU MLP has no measured layer yet (gelu and swiglu do); the cost "
                               "model (simulate, plan) covers it",
                               model.name));
}

Activation::Activation(std::string name, ActivationType type, int ffn)
    : name_(std::move(name)), type_(type), ffn_(ffn), states_(name_) {}

Matrix Activation::forward(int mb, const Matrix& input) {
  const Eigen::Index width = type_ == ActivationType::kSwiglu ? 2 * ffn_ : ffn_;
  check_shape(name_, "the input", input, input.rows(), width);
  State& state = states_.begin_forward(mb);
  state.input = input;
  if (type_ == ActivationType::kGelu) return input.unaryExpr(Gelu{});
  return input.leftCols(ffn_).unaryExpr(Silu{}).cwiseProduct(input.rightCols(ffn_));
}

Matrix Activation::backward_input(int mb, const Matrix& grad_output) {
  State& state = states_.for_input(mb);
  check_shape(name_, "the output gradient", grad_output, state.input.rows(), ffn_);
  Matrix grad_input(state.input.rows(), state.input.cols());
  if (type_ == ActivationType::kGelu) {
    grad_input = grad_output.cwiseProduct(state.input.unaryExpr(GeluDerivative{}));
  } else {
    // out = silu(gate) * up: d gate = dy * up * silu'(gate), d up = dy * silu(gate).
    const auto gate = state.input.leftCols(ffn_);
    const auto up = state.input.rightCols(ffn_);
    grad_input.leftCols(ffn_) = grad_output.cwiseProduct(up).cwiseProduct(gate.unaryExpr(SiluDerivative{}));
    grad_input.rightCols(ffn_) = grad_output.cwiseProduct(gate.unaryExpr(Silu{}));
  }
  states_.release(mb);
  return grad_input;
}

}  // namespace pipeplan::profiler
