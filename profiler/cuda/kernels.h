// Host-side launchers of the CUDA layers' kernels (elementwise_kernels.cu,
// norm_kernels.cu, softmax_kernels.cu). Storage is bf16, arithmetic fp32;
// everything is queued on `stream` and checked at launch (cuda_check.h).
// Pointers are device pointers; matrices are row-major.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace pipeplan::profiler::kernels {

using bf16 = __nv_bfloat16;

// --- elementwise_kernels.cu ---------------------------------------------

// Uniform values in [-1, 1) from a hash of (seed, index): random
// activations drawn on the device, without a host round trip.
void fill_uniform(bf16* out, std::int64_t count, std::uint64_t seed, cudaStream_t stream);
// y += x.
void add_inplace(bf16* y, const bf16* x, std::int64_t count, cudaStream_t stream);
// y[r, c] += bias[c].
void add_bias(bf16* y, const bf16* bias, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// out[c] += sum over r of a[r, c] * b[r, c] (b null: of a[r, c]), in two
// passes: partial sums over slices of column_sum_slice rows into the
// workspace (column_sum_partials(rows) x cols floats), then their sums in
// order. No atomics: the sums are deterministic.
constexpr std::int64_t column_sum_slice = 128;
inline std::int64_t column_sum_partials(std::int64_t rows) { return (rows + column_sum_slice - 1) / column_sum_slice; }
void column_sums(const bf16* a, const bf16* b, std::int64_t rows, std::int64_t cols, float* workspace, float* out,
                 cudaStream_t stream);

// SwiGLU: in = gate|up (rows x 2 ffn), out = silu(gate) * up (rows x ffn).
void swiglu_forward(const bf16* in, bf16* out, std::int64_t rows, std::int64_t ffn, cudaStream_t stream);
void swiglu_backward(const bf16* in, const bf16* grad_out, bf16* grad_in, std::int64_t rows, std::int64_t ffn,
                     cudaStream_t stream);
// GELU, tanh approximation.
void gelu_forward(const bf16* in, bf16* out, std::int64_t count, cudaStream_t stream);
void gelu_backward(const bf16* in, const bf16* grad_out, bf16* grad_in, std::int64_t count, cudaStream_t stream);

// Rotary embeddings on a fused q|k|v matrix: in each head of the first
// rotated_width columns, the pairs (i, i + head_dim / 2) turn by the angles
// of the row's position (row % seq_len); `inverse` turns them back (the
// gradient's path). The other columns are copied. cos and sin are
// seq_len x head_dim / 2. rotated_width 0 makes it a plain conversion.
struct RopeShape {
  std::int64_t rows = 0;
  int width = 0;
  int rotated_width = 0;
  int head_dim = 0;
  int seq_len = 1;
};
void rope(const bf16* in, bf16* out, const RopeShape& shape, const float* cos, const float* sin, bool inverse,
          cudaStream_t stream);
void rope(const float* in, bf16* out, const RopeShape& shape, const float* cos, const float* sin, bool inverse,
          cudaStream_t stream);

// Token embedding: out[r] = table[ids[r]] (+ positions[r % seq_len] when
// positions is not null). Ids travel as floats, as in the CPU backend; an
// id outside [0, vocab) gives a zero row (and no gradient) rather than an
// out-of-bounds read.
struct EmbeddingShape {
  std::int64_t rows = 0;
  int hidden = 0;
  std::int64_t vocab = 0;
  int seq_len = 1;
};
void embedding_forward(const float* ids, const bf16* table, const bf16* positions, const EmbeddingShape& shape,
                       bf16* out, cudaStream_t stream);
// grad_table[ids[r]] += grad[r] (ids null: grad_table[r % seq_len], the
// learned positions), fp32 atomics.
void embedding_backward(const float* ids, const bf16* grad, const EmbeddingShape& shape, float* grad_table,
                        cudaStream_t stream);

// --- norm_kernels.cu -----------------------------------------------------

// RMSNorm (layer_norm false) or LayerNorm over each row, eps 1e-5. The
// forward writes the output, the normalised input and 1 / std per row.
struct NormShape {
  std::int64_t rows = 0;
  int width = 0;
  bool layer_norm = false;
};
void norm_forward(const bf16* x, const bf16* gamma, const bf16* beta, const NormShape& shape, bf16* y, bf16* normalized,
                  float* inv_std, cudaStream_t stream);
void norm_backward_input(const bf16* grad_out, const bf16* gamma, const bf16* normalized, const float* inv_std,
                         const NormShape& shape, bf16* grad_in, cudaStream_t stream);

// --- softmax_kernels.cu --------------------------------------------------

// `batch` s x s score matrices, at scores + i * scores_stride; the
// probabilities at probs + i * probs_stride.
struct SoftmaxShape {
  int batch = 0;
  int seq_len = 0;
  std::int64_t scores_stride = 0;
  std::int64_t probs_stride = 0;
};
// Causal softmax of each row i over columns 0..i; the masked columns
// become exact zeros, so the backward and p v need no mask.
void causal_softmax_forward(const float* scores, bf16* probs, const SoftmaxShape& shape, cudaStream_t stream);
// grad_scores = scale * p * (dp - rowsum(dp * p)), the softmax's Jacobian;
// grad_probs and grad_scores are laid out as the scores.
void causal_softmax_backward(const bf16* probs, const float* grad_probs, float scale, const SoftmaxShape& shape,
                             bf16* grad_scores, cudaStream_t stream);

// Cross-entropy of each row of fp32 logits against its target: turns the
// logits into the softmax in place and writes each row's loss.
void cross_entropy_forward(float* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t vocab,
                           float* row_loss, cudaStream_t stream);
// out[0] = the mean of values (one block: deterministic).
void mean(const float* values, std::int64_t count, float* out, cudaStream_t stream);
// grad = (probs - onehot(target)) * scale.
void cross_entropy_backward(const float* probs, const std::int32_t* targets, std::int64_t rows, std::int64_t vocab,
                            float scale, bf16* grad, cudaStream_t stream);

}  // namespace pipeplan::profiler::kernels
