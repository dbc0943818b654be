#include "profiler/cuda/device_context.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "profiler/cuda/cuda_check.h"

namespace pipeplan::profiler {

DeviceContext::DeviceContext(int device) : device_(device) {
  PIPEPLAN_CUDA(cudaSetDevice(device_));
  cudaMemPool_t pool = nullptr;
  PIPEPLAN_CUDA(cudaDeviceGetDefaultMemPool(&pool, device_));
  // Without this the pool returns freed memory at every synchronisation and
  // the next pass pays for fresh allocations inside its timing.
  std::uint64_t keep_all = std::numeric_limits<std::uint64_t>::max();
  PIPEPLAN_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  PIPEPLAN_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  try {
    PIPEPLAN_CUBLAS(cublasCreate(&cublas_));
    PIPEPLAN_CUBLAS(cublasSetStream(cublas_, stream_));
  } catch (...) {
    if (cublas_ != nullptr) cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
    throw;
  }
}

// Destructors cannot throw: errors here (a device already lost) are dropped.
DeviceContext::~DeviceContext() {
  cudaSetDevice(device_);
  cudaStreamSynchronize(stream_);
  cublasDestroy(cublas_);
  cudaStreamDestroy(stream_);
}

void DeviceContext::synchronize() const { PIPEPLAN_CUDA(cudaStreamSynchronize(stream_)); }

void DeviceContext::release_cached_memory() const {
  synchronize();
  cudaMemPool_t pool = nullptr;
  PIPEPLAN_CUDA(cudaDeviceGetDefaultMemPool(&pool, device_));
  PIPEPLAN_CUDA(cudaMemPoolTrimTo(pool, 0));
}

std::int64_t DeviceContext::free_bytes() const {
  PIPEPLAN_CUDA(cudaSetDevice(device_));
  std::size_t free = 0, total = 0;
  PIPEPLAN_CUDA(cudaMemGetInfo(&free, &total));
  return static_cast<std::int64_t>(free);
}

int cuda_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear it: the caller only asked whether there is a GPU
    return 0;
  }
  return count;
}

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (status != cudaSuccess) return cudaGetErrorString(status);
  return count == 0 ? "no CUDA-capable device is detected" : "";
}

std::string cuda_software_versions() {
  int driver = 0, runtime = 0, cublas = 0;
  PIPEPLAN_CUDA(cudaDriverGetVersion(&driver));
  PIPEPLAN_CUDA(cudaRuntimeGetVersion(&runtime));
  PIPEPLAN_CUBLAS(cublasGetProperty(MAJOR_VERSION, &cublas));
  int minor = 0, patch = 0;
  PIPEPLAN_CUBLAS(cublasGetProperty(MINOR_VERSION, &minor));
  PIPEPLAN_CUBLAS(cublasGetProperty(PATCH_LEVEL, &patch));
  // CUDA versions are 1000 x major + 10 x minor.
  return fmt::format("CUDA driver {}.{}, runtime {}.{}, cuBLAS {}.{}.{}", driver / 1000, driver % 1000 / 10,
                     runtime / 1000, runtime % 1000 / 10, cublas, minor, patch);
}

std::string cuda_device_name(int device) {
  cudaDeviceProp properties{};
  PIPEPLAN_CUDA(cudaGetDeviceProperties(&properties, device));
  return properties.name;
}

}  // namespace pipeplan::profiler
