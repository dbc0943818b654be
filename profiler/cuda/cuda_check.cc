#include "profiler/cuda/cuda_check.h"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

namespace pipeplan::profiler {
namespace {

[[noreturn]] void fail(const char* call, const char* error, const char* file, int line) {
  throw std::runtime_error(
      fmt::format("{} failed: {} ({}:{})", call, error, std::filesystem::path(file).filename().string(), line));
}

}  // namespace

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) fail(call, cudaGetErrorString(status), file, line);
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) fail(call, cublasGetStatusString(status), file, line);
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) fail(kernel, cudaGetErrorString(status), file, line);
}

}  // namespace pipeplan::profiler
