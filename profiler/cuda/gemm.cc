#include "profiler/cuda/gemm.h"

#include <cublas_v2.h>
#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "profiler/cuda/cuda_check.h"

namespace pipeplan::profiler {
namespace {

cudaDataType cuda_type(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return CUDA_R_16BF;
    case DType::kF32:
      return CUDA_R_32F;
    case DType::kI32:
      break;
  }
  throw std::invalid_argument("gemm: int32 operands are not supported");
}

// cuBLAS takes sizes and leading dimensions as int.
int as_int(std::int64_t value, const char* what) {
  if (value < 0 || value > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(fmt::format("gemm: {} = {} is outside cuBLAS's int range", what, value));
  }
  return static_cast<int>(value);
}

cublasOperation_t op(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

void gemm(const DeviceContext& context, const GemmShape& shape, float alpha, const GemmOperand& a, const GemmOperand& b,
          float beta, const GemmResult& c) {
  if (shape.m == 0 || shape.n == 0 || shape.batch == 0) return;
  // Column-major C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m).
  const int m = as_int(shape.n, "n"), n = as_int(shape.m, "m"), k = as_int(shape.k, "k");
  const int lda = as_int(b.ld, "ldb"), ldb = as_int(a.ld, "lda"), ldc = as_int(c.ld, "ldc");
  const int batch = as_int(shape.batch, "batch");
  cublasHandle_t handle = context.cublas();
  if (batch == 1) {
    PIPEPLAN_CUBLAS(cublasGemmEx(handle, op(b.transposed), op(a.transposed), m, n, k, &alpha, b.data,
                                 cuda_type(b.dtype), lda, a.data, cuda_type(a.dtype), ldb, &beta, c.data,
                                 cuda_type(c.dtype), ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  PIPEPLAN_CUBLAS(cublasGemmStridedBatchedEx(handle, op(b.transposed), op(a.transposed), m, n, k, &alpha, b.data,
                                             cuda_type(b.dtype), lda, b.batch_stride, a.data, cuda_type(a.dtype), ldb,
                                             a.batch_stride, &beta, c.data, cuda_type(c.dtype), ldc, c.batch_stride,
                                             batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace pipeplan::profiler
