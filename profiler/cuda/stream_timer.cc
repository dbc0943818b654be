#include "profiler/cuda/stream_timer.h"

#include <cuda_runtime_api.h>

#include "profiler/cuda/cuda_check.h"

namespace pipeplan::profiler {

StreamTimer::StreamTimer(const DeviceContext& context) : stream_(context.stream()) {
  PIPEPLAN_CUDA(cudaEventCreate(&start_));
  try {
    PIPEPLAN_CUDA(cudaEventCreate(&stop_));
  } catch (...) {
    cudaEventDestroy(start_);
    throw;
  }
}

StreamTimer::~StreamTimer() {
  cudaEventDestroy(stop_);
  cudaEventDestroy(start_);
}

void StreamTimer::start() { PIPEPLAN_CUDA(cudaEventRecord(start_, stream_)); }

double StreamTimer::stop_seconds() {
  PIPEPLAN_CUDA(cudaEventRecord(stop_, stream_));
  PIPEPLAN_CUDA(cudaEventSynchronize(stop_));
  float milliseconds = 0;
  PIPEPLAN_CUDA(cudaEventElapsedTime(&milliseconds, start_, stop_));
  return milliseconds * 1e-3;
}

}  // namespace pipeplan::profiler
