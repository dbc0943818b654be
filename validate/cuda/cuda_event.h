// A CUDA event without timing, owned: the marks by which the layer stream
// and the NCCL streams order their work on one tensor, and by which the
// host sees a transfer finish.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "profiler/cuda/cuda_check.h"

namespace pipeplan::validate {

class CudaEvent {
 public:
  CudaEvent() { PIPEPLAN_CUDA(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~CudaEvent() {
    if (event_ != nullptr) cudaEventDestroy(event_);  // released once its work is done; nothing to report
  }
  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&&) = delete;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) { PIPEPLAN_CUDA(cudaEventRecord(event_, stream)); }
  // True once the work recorded before it is done; throws on a device error.
  bool done() const {
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) return false;
    profiler::check_cuda(status, "cudaEventQuery", __FILE__, __LINE__);
    return true;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace pipeplan::validate
