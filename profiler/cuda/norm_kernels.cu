// RMSNorm and LayerNorm, one thread block per row: row statistics in fp32,
// two passes over the row (mean, then the variance about it, which keeps
// the variance free of cancellation).
#include "profiler/cuda/block_reduce.cuh"
#include "profiler/cuda/cuda_check.h"
#include "profiler/cuda/kernels.h"

namespace pipeplan::profiler::kernels {
namespace {

constexpr float kEps = 1e-5f;

__global__ void norm_forward_kernel(const bf16* x, const bf16* gamma, const bf16* beta, NormShape shape, bf16* y,
                                    bf16* normalized, float* inv_std) {
  __shared__ float shared[32];
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * shape.width;
  float mean = 0.0f;
  if (shape.layer_norm) {
    float sum = 0.0f;
    for (int c = threadIdx.x; c < shape.width; c += blockDim.x) sum += __bfloat162float(x[base + c]);
    mean = block_sum(sum, shared) / static_cast<float>(shape.width);
  }
  float squares = 0.0f;
  for (int c = threadIdx.x; c < shape.width; c += blockDim.x) {
    const float centred = __bfloat162float(x[base + c]) - mean;
    squares += centred * centred;
  }
  const float scale = 1.0f / sqrtf(block_sum(squares, shared) / static_cast<float>(shape.width) + kEps);
  for (int c = threadIdx.x; c < shape.width; c += blockDim.x) {
    const float n = (__bfloat162float(x[base + c]) - mean) * scale;
    normalized[base + c] = __float2bfloat16(n);
    const float shift = beta == nullptr ? 0.0f : __bfloat162float(beta[c]);
    y[base + c] = __float2bfloat16(n * __bfloat162float(gamma[c]) + shift);
  }
  if (threadIdx.x == 0) inv_std[blockIdx.x] = scale;
}

// With g = dy * gamma: dx = (g - mean(g) - n * mean(g * n)) / std, the
// mean(g) term for LayerNorm only.
__global__ void norm_backward_input_kernel(const bf16* grad_out, const bf16* gamma, const bf16* normalized,
                                           const float* inv_std, NormShape shape, bf16* grad_in) {
  __shared__ float shared[32];
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * shape.width;
  float projection = 0.0f, total = 0.0f;
  for (int c = threadIdx.x; c < shape.width; c += blockDim.x) {
    const float g = __bfloat162float(grad_out[base + c]) * __bfloat162float(gamma[c]);
    projection += g * __bfloat162float(normalized[base + c]);
    total += g;
  }
  const float width = static_cast<float>(shape.width);
  projection = block_sum(projection, shared) / width;
  const float mean = shape.layer_norm ? block_sum(total, shared) / width : 0.0f;
  const float scale = inv_std[blockIdx.x];
  for (int c = threadIdx.x; c < shape.width; c += blockDim.x) {
    const float g = __bfloat162float(grad_out[base + c]) * __bfloat162float(gamma[c]);
    const float n = __bfloat162float(normalized[base + c]);
    grad_in[base + c] = __float2bfloat16(scale * (g - mean - n * projection));
  }
}

}  // namespace

void norm_forward(const bf16* x, const bf16* gamma, const bf16* beta, const NormShape& shape, bf16* y, bf16* normalized,
                  float* inv_std, cudaStream_t stream) {
  if (shape.rows == 0) return;
  norm_forward_kernel<<<static_cast<unsigned>(shape.rows), kRowThreads, 0, stream>>>(x, gamma, beta, shape, y,
                                                                                     normalized, inv_std);
  PIPEPLAN_LAUNCHED("norm_forward");
}

void norm_backward_input(const bf16* grad_out, const bf16* gamma, const bf16* normalized, const float* inv_std,
                         const NormShape& shape, bf16* grad_in, cudaStream_t stream) {
  if (shape.rows == 0) return;
  norm_backward_input_kernel<<<static_cast<unsigned>(shape.rows), kRowThreads, 0, stream>>>(grad_out, gamma, normalized,
                                                                                            inv_std, shape, grad_in);
  PIPEPLAN_LAUNCHED("norm_backward_input");
}

}  // namespace pipeplan::profiler::kernels
