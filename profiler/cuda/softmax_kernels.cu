// Row softmaxes, one thread block per row: the causal softmax of attention
// scores (forward and its Jacobian-vector product) and softmax
// cross-entropy over the vocabulary, all in fp32.
#include "profiler/cuda/block_reduce.cuh"
#include "profiler/cuda/cuda_check.h"
#include "profiler/cuda/kernels.h"

namespace pipeplan::profiler::kernels {
namespace {

// The row's statistics over its first `visible` values.
__device__ SoftmaxStats row_stats(const float* row, std::int64_t visible, float* shared) {
  SoftmaxStats stats;
  for (std::int64_t j = threadIdx.x; j < visible; j += blockDim.x) stats = add_value(stats, row[j]);
  return block_softmax_stats(stats, shared);
}

// Block (i, b): row i of matrix b.
__global__ void causal_softmax_forward_kernel(const float* scores, bf16* probs, SoftmaxShape shape) {
  __shared__ float shared[32];
  const std::int64_t i = blockIdx.x, s = shape.seq_len;
  const float* in = scores + blockIdx.y * shape.scores_stride + i * s;
  bf16* out = probs + blockIdx.y * shape.probs_stride + i * s;
  const SoftmaxStats stats = row_stats(in, i + 1, shared);
  const float inverse = 1.0f / stats.sum;
  for (std::int64_t j = threadIdx.x; j < s; j += blockDim.x) {
    out[j] = __float2bfloat16(j <= i ? __expf(in[j] - stats.max) * inverse : 0.0f);
  }
}

__global__ void causal_softmax_backward_kernel(const bf16* probs, const float* grad_probs, float scale,
                                               SoftmaxShape shape, bf16* grad_scores) {
  __shared__ float shared[32];
  const std::int64_t i = blockIdx.x, s = shape.seq_len;
  const bf16* p = probs + blockIdx.y * shape.probs_stride + i * s;
  const float* dp = grad_probs + blockIdx.y * shape.scores_stride + i * s;
  bf16* out = grad_scores + blockIdx.y * shape.scores_stride + i * s;
  float dot = 0.0f;
  for (std::int64_t j = threadIdx.x; j <= i; j += blockDim.x) dot += dp[j] * __bfloat162float(p[j]);
  dot = block_sum(dot, shared);
  for (std::int64_t j = threadIdx.x; j < s; j += blockDim.x) {
    out[j] = __float2bfloat16(j <= i ? scale * __bfloat162float(p[j]) * (dp[j] - dot) : 0.0f);
  }
}

// -log softmax(target) = log(sum exp(l - max)) - (l_target - max), taken
// before exponentiating so that an underflowing target stays finite.
__global__ void cross_entropy_forward_kernel(float* logits, const std::int32_t* targets, std::int64_t vocab,
                                             float* row_loss) {
  __shared__ float shared[32];
  float* row = logits + static_cast<std::int64_t>(blockIdx.x) * vocab;
  const SoftmaxStats stats = row_stats(row, vocab, shared);
  if (threadIdx.x == 0) row_loss[blockIdx.x] = logf(stats.sum) - (row[targets[blockIdx.x]] - stats.max);
  __syncthreads();  // the target logit is read before it is overwritten
  const float inverse = 1.0f / stats.sum;
  for (std::int64_t j = threadIdx.x; j < vocab; j += blockDim.x) row[j] = __expf(row[j] - stats.max) * inverse;
}

__global__ void mean_kernel(const float* values, std::int64_t count, float* out) {
  __shared__ float shared[32];
  float sum = 0.0f;
  for (std::int64_t i = threadIdx.x; i < count; i += blockDim.x) sum += values[i];
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) out[0] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
}

__global__ void cross_entropy_backward_kernel(const float* probs, const std::int32_t* targets, std::int64_t rows,
                                              std::int64_t vocab, float scale, bf16* grad) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * vocab;
       i += stride) {
    const std::int64_t row = i / vocab, col = i % vocab;
    grad[i] = __float2bfloat16((probs[i] - (col == targets[row] ? 1.0f : 0.0f)) * scale);
  }
}

dim3 row_grid(const SoftmaxShape& shape) {
  return dim3(static_cast<unsigned>(shape.seq_len), static_cast<unsigned>(shape.batch));
}

}  // namespace

void causal_softmax_forward(const float* scores, bf16* probs, const SoftmaxShape& shape, cudaStream_t stream) {
  if (shape.batch == 0 || shape.seq_len == 0) return;
  causal_softmax_forward_kernel<<<row_grid(shape), kRowThreads, 0, stream>>>(scores, probs, shape);
  PIPEPLAN_LAUNCHED("causal_softmax_forward");
}

void causal_softmax_backward(const bf16* probs, const float* grad_probs, float scale, const SoftmaxShape& shape,
                             bf16* grad_scores, cudaStream_t stream) {
  if (shape.batch == 0 || shape.seq_len == 0) return;
  causal_softmax_backward_kernel<<<row_grid(shape), kRowThreads, 0, stream>>>(probs, grad_probs, scale, shape,
                                                                              grad_scores);
  PIPEPLAN_LAUNCHED("causal_softmax_backward");
}

void cross_entropy_forward(float* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t vocab,
                           float* row_loss, cudaStream_t stream) {
  if (rows == 0) return;
  cross_entropy_forward_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(logits, targets, vocab,
                                                                                        row_loss);
  PIPEPLAN_LAUNCHED("cross_entropy_forward");
}

void mean(const float* values, std::int64_t count, float* out, cudaStream_t stream) {
  mean_kernel<<<1, 1024, 0, stream>>>(values, count, out);
  PIPEPLAN_LAUNCHED("mean");
}

void cross_entropy_backward(const float* probs, const std::int32_t* targets, std::int64_t rows, std::int64_t vocab,
                            float scale, bf16* grad, cudaStream_t stream) {
  const int threads = 256;
  cross_entropy_backward_kernel<<<elementwise_blocks(rows * vocab, threads), threads, 0, stream>>>(probs, targets, rows,
                                                                                                   vocab, scale, grad);
  PIPEPLAN_LAUNCHED("cross_entropy_backward");
}

}  // namespace pipeplan::profiler::kernels
