// One GPU as the layers see it: the device, the stream every pass and every
// allocation of its tensors is ordered on, and a cuBLAS handle bound to that
// stream. Layers and tensors share it (std::shared_ptr), so it outlives them.
// The header names the CUDA types by their underlying structs, so that code
// using the layers compiles without the CUDA headers.
#pragma once

#include <cstdint>
#include <string>

struct CUstream_st;    // cudaStream_t is CUstream_st*
struct cublasContext;  // cublasHandle_t is cublasContext*

namespace pipeplan::profiler {

class DeviceContext {
 public:
  // Selects `device` for this thread, creates a non-blocking stream and a
  // cuBLAS handle, and lets the device's memory pool keep freed memory (so
  // the stream-ordered allocations inside timed passes stay cheap).
  explicit DeviceContext(int device = 0);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int device() const { return device_; }
  CUstream_st* stream() const { return stream_; }
  cublasContext* cublas() const { return cublas_; }
  // Waits for the stream; a kernel's fault surfaces here as an exception.
  void synchronize() const;
  // Hands the memory the pool keeps back to the device (after synchronising),
  // so that free_bytes() sees it.
  void release_cached_memory() const;
  std::int64_t free_bytes() const;

 private:
  int device_;
  CUstream_st* stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
};

// GPUs visible to this process; 0 when there is none or no usable driver.
int cuda_device_count() noexcept;
// Why cuda_device_count() is 0 ("no CUDA-capable device is detected", ...).
std::string cuda_unavailable_reason();
// "NVIDIA H200".
std::string cuda_device_name(int device);
// "CUDA driver 13.0, runtime 13.0, cuBLAS 13.0.2": the versions a
// measurement ran on (the driver's is the CUDA version it supports).
std::string cuda_software_versions();

}  // namespace pipeplan::profiler
