// Elementwise and gather/scatter kernels of the CUDA layers: random fill,
// residual and bias adds, column sums (bias and norm weight gradients),
// SwiGLU and GELU, rotary embeddings, embedding lookup and its gradient.
#include <stdexcept>

#include "profiler/cuda/block_reduce.cuh"
#include "profiler/cuda/cuda_check.h"
#include "profiler/cuda/kernels.h"

namespace pipeplan::profiler::kernels {
namespace {

constexpr int kThreads = 256;

__device__ float to_float(bf16 x) { return __bfloat162float(x); }
__device__ float to_float(float x) { return x; }

__device__ std::int64_t first_index() { return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

// splitmix64's finaliser: a well-mixed 64-bit hash of the index.
__device__ std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__global__ void fill_uniform_kernel(bf16* out, std::int64_t count, std::uint64_t seed) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    const std::uint64_t bits = mix(seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(i + 1));
    out[i] = __float2bfloat16(static_cast<float>(bits >> 40) * (2.0f / 16777216.0f) - 1.0f);
  }
}

__global__ void add_kernel(bf16* y, const bf16* x, std::int64_t count) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    y[i] = __float2bfloat16(to_float(y[i]) + to_float(x[i]));
  }
}

__global__ void add_bias_kernel(bf16* y, const bf16* bias, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = first_index(); i < rows * cols; i += grid_stride()) {
    y[i] = __float2bfloat16(to_float(y[i]) + to_float(bias[i % cols]));
  }
}

// Column sums, first pass: block (x, p) sums 64 columns over slice p of
// the rows, each thread two adjacent columns (a warp reads 128 contiguous
// bytes of a row) over every 8th row of the slice.
constexpr int kColumnLanes = 8;
constexpr int kColumnsPerBlock = 64;

__global__ void column_partial_sums_kernel(const bf16* a, const bf16* b, std::int64_t rows, std::int64_t cols,
                                           float* partials) {
  __shared__ float lanes[kColumnLanes][kColumnsPerBlock];
  const std::int64_t first_col = static_cast<std::int64_t>(blockIdx.x) * kColumnsPerBlock + 2 * threadIdx.x;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.y) * column_sum_slice;
  const std::int64_t end = begin + column_sum_slice < rows ? begin + column_sum_slice : rows;
  float sums[2] = {0.0f, 0.0f};
  for (std::int64_t row = begin + threadIdx.y; row < end; row += kColumnLanes) {
    for (int k = 0; k < 2; ++k) {
      const std::int64_t col = first_col + k;
      if (col >= cols) continue;
      const std::int64_t at = row * cols + col;
      sums[k] += to_float(a[at]) * (b == nullptr ? 1.0f : to_float(b[at]));
    }
  }
  lanes[threadIdx.y][2 * threadIdx.x] = sums[0];
  lanes[threadIdx.y][2 * threadIdx.x + 1] = sums[1];
  __syncthreads();
  if (threadIdx.y == 0) {
    for (int k = 0; k < 2; ++k) {
      const std::int64_t col = first_col + k;
      if (col >= cols) continue;
      float total = 0.0f;
      for (int lane = 0; lane < kColumnLanes; ++lane) total += lanes[lane][2 * threadIdx.x + k];
      partials[blockIdx.y * cols + col] = total;
    }
  }
}

// Second pass: each column's partial sums, in order.
__global__ void column_total_kernel(const float* partials, std::int64_t slices, std::int64_t cols, float* out) {
  for (std::int64_t col = first_index(); col < cols; col += grid_stride()) {
    float total = 0.0f;
    for (std::int64_t slice = 0; slice < slices; ++slice) total += partials[slice * cols + col];
    out[col] += total;
  }
}

__device__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__global__ void swiglu_forward_kernel(const bf16* in, bf16* out, std::int64_t rows, std::int64_t ffn) {
  for (std::int64_t i = first_index(); i < rows * ffn; i += grid_stride()) {
    const std::int64_t row = i / ffn, col = i % ffn;
    const float gate = to_float(in[row * 2 * ffn + col]);
    const float up = to_float(in[row * 2 * ffn + ffn + col]);
    out[i] = __float2bfloat16(gate * sigmoid(gate) * up);
  }
}

// d gate = dy * up * silu'(gate), d up = dy * silu(gate).
__global__ void swiglu_backward_kernel(const bf16* in, const bf16* grad_out, bf16* grad_in, std::int64_t rows,
                                       std::int64_t ffn) {
  for (std::int64_t i = first_index(); i < rows * ffn; i += grid_stride()) {
    const std::int64_t row = i / ffn, col = i % ffn;
    const std::int64_t gate_at = row * 2 * ffn + col, up_at = gate_at + ffn;
    const float gate = to_float(in[gate_at]), up = to_float(in[up_at]), dy = to_float(grad_out[i]);
    const float s = sigmoid(gate);
    grad_in[gate_at] = __float2bfloat16(dy * up * s * (1.0f + gate * (1.0f - s)));
    grad_in[up_at] = __float2bfloat16(dy * gate * s);
  }
}

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;

__global__ void gelu_forward_kernel(const bf16* in, bf16* out, std::int64_t count) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    const float x = to_float(in[i]);
    out[i] = __float2bfloat16(0.5f * x * (1.0f + tanhf(kGeluC * (x + kGeluA * x * x * x))));
  }
}

__global__ void gelu_backward_kernel(const bf16* in, const bf16* grad_out, bf16* grad_in, std::int64_t count) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    const float x = to_float(in[i]);
    const float t = tanhf(kGeluC * (x + kGeluA * x * x * x));
    const float derivative = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * kGeluA * x * x);
    grad_in[i] = __float2bfloat16(to_float(grad_out[i]) * derivative);
  }
}

// One output element per thread: it reads its pair from the input.
template <typename In>
__global__ void rope_kernel(const In* in, bf16* out, RopeShape shape, const float* cos, const float* sin, float sign) {
  const int half = shape.head_dim / 2;
  for (std::int64_t i = first_index(); i < shape.rows * shape.width; i += grid_stride()) {
    const std::int64_t row = i / shape.width;
    const int col = static_cast<int>(i % shape.width);
    if (col >= shape.rotated_width) {
      out[i] = __float2bfloat16(to_float(in[i]));
      continue;
    }
    const int within = col % shape.head_dim;
    const int pair = within % half;
    const std::int64_t angle = (row % shape.seq_len) * half + pair;
    const float c = cos[angle], s = sign * sin[angle];
    const std::int64_t first = i - within + pair;
    const float x1 = to_float(in[first]), x2 = to_float(in[first + half]);
    out[i] = __float2bfloat16(within < half ? x1 * c - x2 * s : x1 * s + x2 * c);
  }
}

__device__ bool token_row(const float* ids, std::int64_t row, const EmbeddingShape& shape, std::int64_t& index) {
  if (ids == nullptr) {
    index = row % shape.seq_len;
    return true;
  }
  const float id = ids[row];
  index = static_cast<std::int64_t>(id);
  return id >= 0.0f && id < static_cast<float>(shape.vocab) && static_cast<float>(index) == id;
}

__global__ void embedding_forward_kernel(const float* ids, const bf16* table, const bf16* positions,
                                         EmbeddingShape shape, bf16* out) {
  for (std::int64_t i = first_index(); i < shape.rows * shape.hidden; i += grid_stride()) {
    const std::int64_t row = i / shape.hidden, col = i % shape.hidden;
    std::int64_t token = 0;
    float value = token_row(ids, row, shape, token) ? to_float(table[token * shape.hidden + col]) : 0.0f;
    if (positions != nullptr) value += to_float(positions[(row % shape.seq_len) * shape.hidden + col]);
    out[i] = __float2bfloat16(value);
  }
}

__global__ void embedding_backward_kernel(const float* ids, const bf16* grad, EmbeddingShape shape, float* grad_table) {
  for (std::int64_t i = first_index(); i < shape.rows * shape.hidden; i += grid_stride()) {
    const std::int64_t row = i / shape.hidden, col = i % shape.hidden;
    std::int64_t target = 0;
    if (token_row(ids, row, shape, target)) atomicAdd(grad_table + target * shape.hidden + col, to_float(grad[i]));
  }
}

unsigned blocks(std::int64_t count) { return elementwise_blocks(count, kThreads); }

}  // namespace

void fill_uniform(bf16* out, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  fill_uniform_kernel<<<blocks(count), kThreads, 0, stream>>>(out, count, seed);
  PIPEPLAN_LAUNCHED("fill_uniform");
}

void add_inplace(bf16* y, const bf16* x, std::int64_t count, cudaStream_t stream) {
  add_kernel<<<blocks(count), kThreads, 0, stream>>>(y, x, count);
  PIPEPLAN_LAUNCHED("add_inplace");
}

void add_bias(bf16* y, const bf16* bias, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  add_bias_kernel<<<blocks(rows * cols), kThreads, 0, stream>>>(y, bias, rows, cols);
  PIPEPLAN_LAUNCHED("add_bias");
}

void column_sums(const bf16* a, const bf16* b, std::int64_t rows, std::int64_t cols, float* workspace, float* out,
                 cudaStream_t stream) {
  const std::int64_t slices = column_sum_partials(rows);
  if (cols == 0 || slices == 0) return;
  if (slices > 65535) throw std::invalid_argument("column_sums: more rows than one grid column of slices holds");
  const dim3 grid(static_cast<unsigned>((cols + kColumnsPerBlock - 1) / kColumnsPerBlock),
                  static_cast<unsigned>(slices));
  column_partial_sums_kernel<<<grid, dim3(kColumnsPerBlock / 2, kColumnLanes), 0, stream>>>(a, b, rows, cols,
                                                                                            workspace);
  PIPEPLAN_LAUNCHED("column_partial_sums");
  column_total_kernel<<<blocks(cols), kThreads, 0, stream>>>(workspace, slices, cols, out);
  PIPEPLAN_LAUNCHED("column_total");
}

void swiglu_forward(const bf16* in, bf16* out, std::int64_t rows, std::int64_t ffn, cudaStream_t stream) {
  swiglu_forward_kernel<<<blocks(rows * ffn), kThreads, 0, stream>>>(in, out, rows, ffn);
  PIPEPLAN_LAUNCHED("swiglu_forward");
}

void swiglu_backward(const bf16* in, const bf16* grad_out, bf16* grad_in, std::int64_t rows, std::int64_t ffn,
                     cudaStream_t stream) {
  swiglu_backward_kernel<<<blocks(rows * ffn), kThreads, 0, stream>>>(in, grad_out, grad_in, rows, ffn);
  PIPEPLAN_LAUNCHED("swiglu_backward");
}

void gelu_forward(const bf16* in, bf16* out, std::int64_t count, cudaStream_t stream) {
  gelu_forward_kernel<<<blocks(count), kThreads, 0, stream>>>(in, out, count);
  PIPEPLAN_LAUNCHED("gelu_forward");
}

void gelu_backward(const bf16* in, const bf16* grad_out, bf16* grad_in, std::int64_t count, cudaStream_t stream) {
  gelu_backward_kernel<<<blocks(count), kThreads, 0, stream>>>(in, grad_out, grad_in, count);
  PIPEPLAN_LAUNCHED("gelu_backward");
}

void rope(const bf16* in, bf16* out, const RopeShape& shape, const float* cos, const float* sin, bool inverse,
          cudaStream_t stream) {
  rope_kernel<<<blocks(shape.rows * shape.width), kThreads, 0, stream>>>(in, out, shape, cos, sin,
                                                                         inverse ? -1.0f : 1.0f);
  PIPEPLAN_LAUNCHED("rope");
}

void rope(const float* in, bf16* out, const RopeShape& shape, const float* cos, const float* sin, bool inverse,
          cudaStream_t stream) {
  rope_kernel<<<blocks(shape.rows * shape.width), kThreads, 0, stream>>>(in, out, shape, cos, sin,
                                                                         inverse ? -1.0f : 1.0f);
  PIPEPLAN_LAUNCHED("rope");
}

void embedding_forward(const float* ids, const bf16* table, const bf16* positions, const EmbeddingShape& shape,
                       bf16* out, cudaStream_t stream) {
  embedding_forward_kernel<<<blocks(shape.rows * shape.hidden), kThreads, 0, stream>>>(ids, table, positions, shape,
                                                                                       out);
  PIPEPLAN_LAUNCHED("embedding_forward");
}

void embedding_backward(const float* ids, const bf16* grad, const EmbeddingShape& shape, float* grad_table,
                        cudaStream_t stream) {
  embedding_backward_kernel<<<blocks(shape.rows * shape.hidden), kThreads, 0, stream>>>(ids, grad, shape, grad_table);
  PIPEPLAN_LAUNCHED("embedding_backward");
}

}  // namespace pipeplan::profiler::kernels
