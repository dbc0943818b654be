// Reductions across a thread block (blockDim.x a multiple of 32, at most
// 1024): warp shuffles, then one value per warp through shared memory.
// Every thread gets the result.
#pragma once

#include <cstdint>

namespace pipeplan::profiler::kernels {

constexpr unsigned kFullMask = 0xffffffffu;

// Threads per block of the row kernels (one block per row).
constexpr int kRowThreads = 256;

// Elementwise kernels: grid-stride loops over at most this many blocks.
inline unsigned elementwise_blocks(std::int64_t count, int threads) {
  const std::int64_t wanted = (count + threads - 1) / threads;
  return static_cast<unsigned>(wanted < 1 ? 1 : (wanted > 65536 ? 65536 : wanted));
}

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};

template <typename Op>
__device__ float warp_reduce(float value, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) value = op(value, __shfl_xor_sync(kFullMask, value, offset));
  return value;
}

// `shared` holds 32 floats; it may be reused by the next call.
template <typename Op>
__device__ float block_reduce(float value, Op op, float identity, float* shared) {
  value = warp_reduce(value, op);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // a previous call's readers are done with `shared`
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  value = lane < (blockDim.x + 31) / 32 ? shared[lane] : identity;
  return warp_reduce(value, op);
}

__device__ inline float block_sum(float value, float* shared) { return block_reduce(value, SumOp{}, 0.0f, shared); }
__device__ inline float block_max(float value, float* shared) {
  return block_reduce(value, MaxOp{}, -INFINITY, shared);
}

// A running softmax denominator: sum of exp(x - max) over the values seen.
struct SoftmaxStats {
  float max = -INFINITY;
  float sum = 0.0f;
};

__device__ inline SoftmaxStats combine(SoftmaxStats a, SoftmaxStats b) {
  const float max = a.max > b.max ? a.max : b.max;
  if (max == -INFINITY) return a;
  return {max, a.sum * __expf(a.max - max) + b.sum * __expf(b.max - max)};
}

__device__ inline SoftmaxStats add_value(SoftmaxStats s, float x) {
  if (x <= s.max) return {s.max, s.sum + __expf(x - s.max)};
  return {x, s.sum * __expf(s.max - x) + 1.0f};  // exp(-inf) is 0 for the first value
}

// The statistics of a whole row, from each thread's partial ones.
__device__ inline SoftmaxStats block_softmax_stats(SoftmaxStats s, float* shared) {
  const float max = block_max(s.max, shared);
  const float sum = block_sum(s.max == -INFINITY ? 0.0f : s.sum * __expf(s.max - max), shared);
  return {max, sum};
}

}  // namespace pipeplan::profiler::kernels
