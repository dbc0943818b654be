#include "profiler/cuda/device_attention.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <utility>

#include "profiler/cuda/gemm.h"
#include "profiler/cuda/tensor_access.h"

namespace pipeplan::profiler {
namespace {

// The CPU backend's rotary convention: theta 10000, angles computed in
// double, pairs (i, i + head_dim / 2).
constexpr double kRopeTheta = 10000.0;

}  // namespace

// Query head h = g * group + j uses kv head g. Fixing the sequence n and
// the offset j, the heads g = 0..kv_heads-1 sit at equal strides in every
// operand (q columns group * d apart, k and v columns d apart, score
// matrices group * s^2 apart), so each product is one strided batch of
// kv_heads matrices, and b * group batches cover all heads.
struct DeviceAttentionCore::Slice {
  std::int64_t qkv_row;      // first element of the sequence's rows in q|k|v
  std::int64_t context_row;  // ... in the context (and its gradient)
  std::int64_t q_col, k_col, v_col;
  std::int64_t probs;  // first element of the (n, j) score matrix
};

DeviceAttentionCore::DeviceAttentionCore(std::shared_ptr<DeviceContext> context, std::string name,
                                         const AttentionShape& shape)
    : context_(std::move(context)),
      name_(std::move(name)),
      shape_(shape),
      scale_(1.0f / std::sqrt(static_cast<float>(shape.head_dim))),
      states_(name_) {
  if (!shape_.rope) return;
  const int half = shape_.head_dim / 2;
  Matrix cos(shape_.seq_len, half), sin(shape_.seq_len, half);
  for (int position = 0; position < shape_.seq_len; ++position) {
    for (int pair = 0; pair < half; ++pair) {
      const double frequency = std::pow(kRopeTheta, -2.0 * pair / shape_.head_dim);
      cos(position, pair) = static_cast<float>(std::cos(position * frequency));
      sin(position, pair) = static_cast<float>(std::sin(position * frequency));
    }
  }
  cos_ = to_device(context_, cos, DType::kF32);
  sin_ = to_device(context_, sin, DType::kF32);
}

DeviceTensor DeviceAttentionCore::rotate(const void* input, DType dtype, std::int64_t rows, bool inverse) const {
  DeviceTensor output(context_, rows, shape_.width(), DType::kBf16);
  const kernels::RopeShape rope{rows, shape_.width(),
                                shape_.rope ? (shape_.heads + shape_.kv_heads) * shape_.head_dim : 0, shape_.head_dim,
                                shape_.seq_len};
  const float* cos = shape_.rope ? f32_data(cos_) : nullptr;
  const float* sin = shape_.rope ? f32_data(sin_) : nullptr;
  if (dtype == DType::kBf16) {
    kernels::rope(static_cast<const kernels::bf16*>(input), bf16_data(output), rope, cos, sin, inverse,
                  context_->stream());
  } else {
    kernels::rope(static_cast<const float*>(input), bf16_data(output), rope, cos, sin, inverse, context_->stream());
  }
  return output;
}

DeviceAttentionCore::Slice DeviceAttentionCore::slice(std::int64_t n, std::int64_t j) const {
  const std::int64_t s = shape_.seq_len, d = shape_.head_dim, heads = shape_.heads;
  return {n * s * shape_.width(),        n * s * heads * d,      j * d, heads * d,
          (heads + shape_.kv_heads) * d, (n * heads + j) * s * s};
}

void DeviceAttentionCore::forward_slice(State& state, const Slice& slice, DeviceTensor& scores,
                                        DeviceTensor& context) const {
  constexpr DType kBf16 = DType::kBf16;
  const std::int64_t s = shape_.seq_len, d = shape_.head_dim, kv = shape_.kv_heads;
  const std::int64_t group = shape_.heads / kv, width = shape_.width();
  const void* qkv = state.qkv.data();
  // scores = scale q k^T, fp32.
  const GemmOperand q{element_at(qkv, kBf16, slice.qkv_row + slice.q_col), kBf16, width, false, group * d};
  const GemmOperand k{element_at(qkv, kBf16, slice.qkv_row + slice.k_col), kBf16, width, true, d};
  gemm(*context_, {s, s, d, kv}, scale_, q, k, 0.0f, {scores.data(), DType::kF32, s, s * s});
  void* probs = element_at(state.probs.data(), kBf16, slice.probs);
  kernels::causal_softmax_forward(f32_data(scores), static_cast<kernels::bf16*>(probs),
                                  {static_cast<int>(kv), static_cast<int>(s), s * s, group * s * s},
                                  context_->stream());
  // context = p v.
  const GemmOperand v{element_at(qkv, kBf16, slice.qkv_row + slice.v_col), kBf16, width, false, d};
  gemm(*context_, {s, d, s, kv}, 1.0f, {probs, kBf16, s, false, group * s * s}, v, 0.0f,
       {element_at(context.data(), kBf16, slice.context_row + slice.q_col), kBf16, shape_.heads * d, group * d});
}

DeviceTensor DeviceAttentionCore::forward(int mb, DeviceTensor input) {
  const std::int64_t s = shape_.seq_len;
  check_tensor(name_, "the input", input, input.rows(), shape_.width(), DType::kBf16);
  if (input.rows() % s != 0) {
    throw std::invalid_argument(
        fmt::format("{}: {} rows are not whole sequences of {} tokens", name_, input.rows(), s));
  }
  State& state = states_.begin_forward(mb);
  const std::int64_t rows = input.rows(), sequences = rows / s;
  state.qkv = shape_.rope ? rotate(input.data(), DType::kBf16, rows, false) : std::move(input);
  state.probs = DeviceTensor(context_, sequences * shape_.heads * s, s, DType::kBf16);
  DeviceTensor context(context_, rows, static_cast<std::int64_t>(shape_.heads) * shape_.head_dim, DType::kBf16);
  DeviceTensor scores(context_, shape_.kv_heads * s, s, DType::kF32);  // one slice's, reused
  for (std::int64_t n = 0; n < sequences; ++n) {
    for (std::int64_t j = 0; j < shape_.heads / shape_.kv_heads; ++j) {
      forward_slice(state, slice(n, j), scores, context);
    }
  }
  return context;
}

void DeviceAttentionCore::backward_slice(const State& state, const Slice& slice, const DeviceTensor& grad_context,
                                         DeviceTensor& grad_probs, DeviceTensor& grad_scores,
                                         DeviceTensor& grad_qkv) const {
  constexpr DType kBf16 = DType::kBf16, kF32 = DType::kF32;
  const std::int64_t s = shape_.seq_len, d = shape_.head_dim, kv = shape_.kv_heads;
  const std::int64_t group = shape_.heads / kv, width = shape_.width();
  const void* qkv = state.qkv.data();
  const void* probs = element_at(state.probs.data(), kBf16, slice.probs);
  const GemmOperand grad_out{element_at(grad_context.data(), kBf16, slice.context_row + slice.q_col), kBf16,
                             shape_.heads * d, false, group * d};
  const GemmOperand q{element_at(qkv, kBf16, slice.qkv_row + slice.q_col), kBf16, width, false, group * d};
  const GemmOperand k{element_at(qkv, kBf16, slice.qkv_row + slice.k_col), kBf16, width, false, d};
  const GemmOperand v_transposed{element_at(qkv, kBf16, slice.qkv_row + slice.v_col), kBf16, width, true, d};
  // A kv head's dk and dv sum over its group of query heads: the group's
  // first head (offset 0) writes them, the others add.
  const float accumulate = slice.q_col == 0 ? 0.0f : 1.0f;
  void* grad = grad_qkv.data();
  // dp = dO v^T, then ds = scale p (dp - rowsum(dp p)).
  gemm(*context_, {s, s, d, kv}, 1.0f, grad_out, v_transposed, 0.0f, {grad_probs.data(), kF32, s, s * s});
  kernels::causal_softmax_backward(static_cast<const kernels::bf16*>(probs), f32_data(grad_probs), scale_,
                                   {static_cast<int>(kv), static_cast<int>(s), s * s, group * s * s},
                                   bf16_data(grad_scores), context_->stream());
  // dv += p^T dO; dq = ds k; dk += ds^T q.
  gemm(*context_, {s, d, s, kv}, 1.0f, {probs, kBf16, s, true, group * s * s}, grad_out, accumulate,
       {element_at(grad, kF32, slice.qkv_row + slice.v_col), kF32, width, d});
  gemm(*context_, {s, d, s, kv}, 1.0f, {grad_scores.data(), kBf16, s, false, s * s}, k, 0.0f,
       {element_at(grad, kF32, slice.qkv_row + slice.q_col), kF32, width, group * d});
  gemm(*context_, {s, d, s, kv}, 1.0f, {grad_scores.data(), kBf16, s, true, s * s}, q, accumulate,
       {element_at(grad, kF32, slice.qkv_row + slice.k_col), kF32, width, d});
}

DeviceTensor DeviceAttentionCore::backward_input(int mb, DeviceTensor grad_output) {
  State& state = states_.for_input(mb);
  const std::int64_t s = shape_.seq_len, rows = state.qkv.rows(), sequences = rows / s;
  check_tensor(name_, "the output gradient", grad_output, rows,
               static_cast<std::int64_t>(shape_.heads) * shape_.head_dim, DType::kBf16);
  // fp32, so that a group's contributions to dk and dv add without rounding.
  DeviceTensor grad_qkv(context_, rows, shape_.width(), DType::kF32);
  DeviceTensor grad_probs(context_, shape_.kv_heads * s, s, DType::kF32);    // one slice's, reused
  DeviceTensor grad_scores(context_, shape_.kv_heads * s, s, DType::kBf16);  // likewise
  for (std::int64_t n = 0; n < sequences; ++n) {
    for (std::int64_t j = 0; j < shape_.heads / shape_.kv_heads; ++j) {
      backward_slice(state, slice(n, j), grad_output, grad_probs, grad_scores, grad_qkv);
    }
  }
  DeviceTensor grad_input = rotate(grad_qkv.data(), DType::kF32, rows, true);
  states_.release(mb);
  return grad_input;
}

}  // namespace pipeplan::profiler
