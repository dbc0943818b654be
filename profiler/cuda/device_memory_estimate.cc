#include "profiler/cuda/device_memory_estimate.h"

#include <algorithm>

namespace pipeplan::profiler {
namespace {

constexpr double kBf16 = 2, kF32 = 4;
constexpr double kParameter = kBf16 + kF32;  // value and gradient

}  // namespace

std::int64_t estimated_device_bytes(const models::ModelConfig& model, const models::TrainingShape& shape) {
  const double b = shape.micro_batch_size, s = shape.seq_len, t = b * s;
  const double h = model.hidden, ffn = model.ffn, vocab = static_cast<double>(model.vocab);
  const double heads = model.heads, kv = model.kv_heads, d = model.head_dim;
  const double qkv = (heads + 2 * kv) * d, context = heads * d;
  const double up = model.mlp == models::MlpKind::kSwiglu ? 2 * ffn : ffn;

  const double positions = model.position == models::PositionEmbedding::kLearned ? model.context * h : 0;
  const double embedding = kParameter * (vocab * h + positions) + t * (3 * kBf16 * h + kF32);

  const double block_parameters = h * qkv + context * h + h * up + ffn * h + 4 * h;
  // Kept after F: two normalised inputs, the inputs of the four linears and
  // the activation, the rotated q|k|v and the probabilities.
  const double kept = kBf16 * t * (4 * h + qkv + context + up + ffn) + kBf16 * b * heads * s * s + 2 * kF32 * t;
  // The attention backward's fp32 dq|dk|dv and one slice's dp and ds, the
  // residuals' copies.
  const double transient = kF32 * t * qkv + kBf16 * t * qkv + (kF32 + kBf16) * kv * s * s + 3 * kBf16 * t * h;
  const double block = kParameter * block_parameters + kept + transient;

  const double output = kParameter * vocab * h + t * vocab * (kF32 + kBf16) + 6 * kBf16 * t * h + 2 * kF32 * t;

  return static_cast<std::int64_t>(1.2 * std::max({embedding, block, output}));
}

}  // namespace pipeplan::profiler
