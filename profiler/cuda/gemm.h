// Matrix products through cuBLAS in the layers' row-major terms: bf16 (or
// fp32) operands, fp32 accumulation (CUBLAS_COMPUTE_32F, on tensor cores
// for bf16), a bf16 or fp32 result. cuBLAS is column-major; a row-major
// C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so the
// operands are passed swapped and nothing is transposed in memory.
#pragma once

#include <cstdint>

#include "profiler/cuda/device_context.h"
#include "profiler/cuda/device_tensor.h"

namespace pipeplan::profiler {

// Element (r, c) at data[r * ld + c]; matrix i of a batch at
// data + i * batch_stride elements. `transposed`: the product uses it as
// op(X) = X^T.
struct GemmOperand {
  const void* data = nullptr;
  DType dtype = DType::kBf16;
  std::int64_t ld = 0;
  bool transposed = false;
  std::int64_t batch_stride = 0;
};

struct GemmResult {
  void* data = nullptr;
  DType dtype = DType::kBf16;
  std::int64_t ld = 0;
  std::int64_t batch_stride = 0;
};

// op(A) is m x k, op(B) k x n, C m x n.
struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
};

// C = alpha op(A) op(B) + beta C for each matrix of the batch, on the
// context's stream. With beta 0, C is not read (it may be uninitialised).
void gemm(const DeviceContext& context, const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b,
          float beta, const GemmResult& c);

// The element `offset` elements past `data`, for addressing blocks.
inline const void* element_at(const void* data, DType dtype, std::int64_t offset) {
  return static_cast<const char*>(data) + offset * dtype_bytes(dtype);
}
inline void* element_at(void* data, DType dtype, std::int64_t offset) {
  return static_cast<char*>(data) + offset * dtype_bytes(dtype);
}

}  // namespace pipeplan::profiler
