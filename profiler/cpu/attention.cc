#include "profiler/cpu/attention.h"

#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <stdexcept>

namespace pipeplan::profiler {
namespace {

constexpr double kRopeTheta = 10000.0;

// Softmax of each row over its first row + 1 entries (the causal mask);
// the masked entries become exact zeros, so the backward needs no mask.
template <typename Block>
void causal_softmax(Block&& scores) {
  for (Eigen::Index row = 0; row < scores.rows(); ++row) {
    auto visible = scores.row(row).head(row + 1).array();
    visible = (visible - visible.maxCoeff()).exp();
    visible /= visible.sum();
    scores.row(row).tail(scores.cols() - row - 1).setZero();
  }
}

}  // namespace

AttentionCore::AttentionCore(std::string name, const AttentionShape& shape)
    : name_(std::move(name)), shape_(shape), states_(name_) {
  if (!shape_.rope) return;
  const int half = shape_.head_dim / 2;
  cos_.resize(shape_.seq_len, half);
  sin_.resize(shape_.seq_len, half);
  for (int position = 0; position < shape_.seq_len; ++position) {
    for (int pair = 0; pair < half; ++pair) {
      const double frequency = std::pow(kRopeTheta, -2.0 * pair / shape_.head_dim);
      cos_(position, pair) = static_cast<float>(std::cos(position * frequency));
      sin_(position, pair) = static_cast<float>(std::sin(position * frequency));
    }
  }
}

void AttentionCore::rotate(Matrix& qkv, bool inverse) const {
  const int half = shape_.head_dim / 2;
  const float sign = inverse ? -1.0f : 1.0f;
  const int rotated_heads = shape_.heads + shape_.kv_heads;  // q heads, then k heads
  for (Eigen::Index row = 0; row < qkv.rows(); ++row) {
    const Eigen::Index position = row % shape_.seq_len;
    float* values = qkv.row(row).data();  // row-major: the row is contiguous
    for (int head = 0; head < rotated_heads; ++head) {
      float* first = values + static_cast<std::ptrdiff_t>(head) * shape_.head_dim;
      float* second = first + half;
      for (int pair = 0; pair < half; ++pair) {
        const float cos = cos_(position, pair);
        const float sin = sign * sin_(position, pair);
        const float x1 = first[pair];
        const float x2 = second[pair];
        first[pair] = x1 * cos - x2 * sin;
        second[pair] = x1 * sin + x2 * cos;
      }
    }
  }
}

Matrix AttentionCore::forward(int mb, const Matrix& input) {
  const Eigen::Index s = shape_.seq_len;
  check_shape(name_, "the input", input, input.rows(), shape_.width());
  if (input.rows() % s != 0) {
    throw std::invalid_argument(
        fmt::format("{}: {} rows are not whole sequences of {} tokens", name_, input.rows(), s));
  }
  State& state = states_.begin_forward(mb);
  state.qkv = input;
  if (shape_.rope) rotate(state.qkv, false);
  const int sequences = static_cast<int>(input.rows() / s);
  const int d = shape_.head_dim;
  const int group = shape_.heads / shape_.kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  state.probs.resize(sequences * shape_.heads * s, s);
  Matrix context(input.rows(), shape_.heads * d);
  for (int n = 0; n < sequences; ++n) {
    for (int h = 0; h < shape_.heads; ++h) {
      const int kv = h / group;
      const auto q = state.qkv.block(n * s, h * d, s, d);
      const auto k = state.qkv.block(n * s, (shape_.heads + kv) * d, s, d);
      const auto v = state.qkv.block(n * s, (shape_.heads + shape_.kv_heads + kv) * d, s, d);
      auto probs = state.probs.block((n * shape_.heads + h) * s, 0, s, s);
      probs.noalias() = scale * (q * k.transpose());
      causal_softmax(probs);
      context.block(n * s, h * d, s, d).noalias() = probs * v;
    }
  }
  return context;
}

void AttentionCore::backward_head(const State& state, const Matrix& grad_context, int n, int h,
                                  Matrix& grad_qkv) const {
  const Eigen::Index s = shape_.seq_len;
  const int d = shape_.head_dim;
  const int kv = h / (shape_.heads / shape_.kv_heads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const Eigen::Index q_col = h * d;
  const Eigen::Index k_col = (shape_.heads + kv) * d;
  const Eigen::Index v_col = (shape_.heads + shape_.kv_heads + kv) * d;
  const auto probs = state.probs.block((n * shape_.heads + h) * s, 0, s, s);
  const auto grad_out = grad_context.block(n * s, h * d, s, d);
  // dp = dO v^T; ds = p * (dp - rowsum(dp * p)), the softmax's Jacobian.
  Matrix grad_scores = grad_out * state.qkv.block(n * s, v_col, s, d).transpose();
  const Eigen::VectorXf row_dot = grad_scores.cwiseProduct(probs).rowwise().sum();
  grad_scores = (probs.array() * (grad_scores.colwise() - row_dot).array()) * scale;
  grad_qkv.block(n * s, v_col, s, d).noalias() += probs.transpose() * grad_out;
  grad_qkv.block(n * s, q_col, s, d).noalias() += grad_scores * state.qkv.block(n * s, k_col, s, d);
  grad_qkv.block(n * s, k_col, s, d).noalias() += grad_scores.transpose() * state.qkv.block(n * s, q_col, s, d);
}

Matrix AttentionCore::backward_input(int mb, const Matrix& grad_output) {
  State& state = states_.for_input(mb);
  check_shape(name_, "the output gradient", grad_output, state.qkv.rows(), shape_.heads * shape_.head_dim);
  const int sequences = static_cast<int>(state.qkv.rows() / shape_.seq_len);
  Matrix grad_qkv = Matrix::Zero(state.qkv.rows(), shape_.width());
  for (int n = 0; n < sequences; ++n) {
    for (int h = 0; h < shape_.heads; ++h) backward_head(state, grad_output, n, h, grad_qkv);
  }
  if (shape_.rope) rotate(grad_qkv, true);
  states_.release(mb);
  return grad_qkv;
}

}  // namespace pipeplan::profiler
