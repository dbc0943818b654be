#include "profiler/cpu/norm.h"

#include <cmath>

namespace pipeplan::profiler {
namespace {

constexpr double kEps = 1e-5;

}  // namespace

Norm::Norm(std::string name, NormType type, int width)
    : name_(std::move(name)),
      type_(type),
      gamma_(Matrix::Ones(1, width)),
      gamma_grad_(Matrix::Zero(1, width)),
      states_(name_) {
  if (type_ == NormType::kLayer) {
    beta_ = Matrix::Zero(1, width);
    beta_grad_ = Matrix::Zero(1, width);
  }
}

Matrix Norm::forward(int mb, const Matrix& input) {
  check_shape(name_, "the input", input, input.rows(), gamma_.cols());
  State& state = states_.begin_forward(mb);
  const Eigen::Index rows = input.rows();
  const double width = static_cast<double>(input.cols());
  state.normalized.resize(rows, input.cols());
  state.inv_std.resize(rows, 1);
  for (Eigen::Index row = 0; row < rows; ++row) {
    // Row statistics in double: they are cheap and keep the fp32 output
    // free of cancellation in the variance.
    const auto x = input.row(row).cast<double>();
    const double mean = type_ == NormType::kLayer ? x.mean() : 0.0;
    const double variance = (x.array() - mean).square().sum() / width;
    const double inv_std = 1.0 / std::sqrt(variance + kEps);
    state.normalized.row(row) = ((x.array() - mean) * inv_std).cast<float>();
    state.inv_std(row, 0) = static_cast<float>(inv_std);
  }
  Matrix output = state.normalized.array().rowwise() * gamma_.row(0).array();
  if (type_ == NormType::kLayer) output.rowwise() += beta_.row(0);
  return output;
}

Matrix Norm::backward_input(int mb, const Matrix& grad_output) {
  State& state = states_.for_input(mb);
  check_shape(name_, "the output gradient", grad_output, state.normalized.rows(), gamma_.cols());
  const Matrix scaled = grad_output.array().rowwise() * gamma_.row(0).array();  // dL/d(normalized)
  Matrix grad_input(scaled.rows(), scaled.cols());
  const float inv_width = 1.0f / static_cast<float>(scaled.cols());
  for (Eigen::Index row = 0; row < scaled.rows(); ++row) {
    const auto g = scaled.row(row).array();
    const auto n = state.normalized.row(row).array();
    const float projection = (g * n).sum() * inv_width;
    const float mean = type_ == NormType::kLayer ? g.sum() * inv_width : 0.0f;
    grad_input.row(row) = state.inv_std(row, 0) * (g - mean - n * projection);
  }
  free_matrix(state.inv_std);
  state.grad_output = grad_output;
  return grad_input;
}

void Norm::backward_weight(int mb) {
  State& state = states_.for_weight(mb);
  gamma_grad_ += state.grad_output.cwiseProduct(state.normalized).colwise().sum();
  if (type_ == NormType::kLayer) beta_grad_ += state.grad_output.colwise().sum();
  states_.release(mb);
}

std::vector<Parameter> Norm::parameters() {
  std::vector<Parameter> result{{"gamma", &gamma_, &gamma_grad_}};
  if (type_ == NormType::kLayer) result.push_back({"beta", &beta_, &beta_grad_});
  return result;
}

}  // namespace pipeplan::profiler
