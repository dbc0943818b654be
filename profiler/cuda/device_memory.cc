#include "profiler/cuda/device_memory.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <array>
#include <atomic>

#include "common/units.h"
#include "profiler/cuda/cuda_check.h"

namespace pipeplan::profiler {
namespace {

// More devices than any node has; an index beyond it is a caller bug.
constexpr int kMaxDevices = 64;

struct Counter {
  std::atomic<std::int64_t> in_use{0};
  std::atomic<std::int64_t> peak{0};
};

std::array<Counter, kMaxDevices> g_counters;

Counter& counter(int device) {
  if (device < 0 || device >= kMaxDevices) {
    throw std::out_of_range(fmt::format("device {} is outside 0..{}", device, kMaxDevices - 1));
  }
  return g_counters[static_cast<std::size_t>(device)];
}

void count(Counter& c, std::int64_t delta) {
  const std::int64_t now = c.in_use.fetch_add(delta, std::memory_order_relaxed) + delta;
  std::int64_t peak = c.peak.load(std::memory_order_relaxed);
  while (now > peak && !c.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

}  // namespace

void* device_allocate(std::int64_t bytes, int device, CUstream_st* stream) {
  if (bytes < 0) throw std::invalid_argument(fmt::format("device_allocate: {} bytes", bytes));
  Counter& c = counter(device);
  if (bytes == 0) return nullptr;
  void* pointer = nullptr;
  cudaError_t status = cudaMallocAsync(&pointer, static_cast<std::size_t>(bytes), stream);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    // The pool keeps freed blocks (see DeviceContext): once the stream is
    // done with them, hand them back to the device and try once more.
    cudaMemPool_t pool = nullptr;
    PIPEPLAN_CUDA(cudaStreamSynchronize(stream));
    PIPEPLAN_CUDA(cudaDeviceGetDefaultMemPool(&pool, device));
    PIPEPLAN_CUDA(cudaMemPoolTrimTo(pool, 0));
    status = cudaMallocAsync(&pointer, static_cast<std::size_t>(bytes), stream);
  }
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw DeviceOutOfMemory(fmt::format("GPU {} is out of memory allocating {} ({} already in use by the layers)",
                                        device, format_bytes(bytes), format_bytes(device_bytes_in_use(device))));
  }
  check_cuda(status, "cudaMallocAsync", __FILE__, __LINE__);
  count(c, bytes);
  return pointer;
}

void device_free(void* pointer, std::int64_t bytes, int device, CUstream_st* stream) noexcept {
  if (pointer == nullptr) return;
  cudaFreeAsync(pointer, stream);
  count(g_counters[static_cast<std::size_t>(device)], -bytes);
}

std::int64_t device_bytes_in_use(int device) { return counter(device).in_use.load(std::memory_order_relaxed); }

DeviceMemoryProbe::DeviceMemoryProbe(int device) : device_(device), start_(device_bytes_in_use(device)) {
  counter(device_).peak.store(start_, std::memory_order_relaxed);
}

std::int64_t DeviceMemoryProbe::peak_above_start() const {
  return counter(device_).peak.load(std::memory_order_relaxed) - start_;
}

std::int64_t DeviceMemoryProbe::now_above_start() const { return device_bytes_in_use(device_) - start_; }

}  // namespace pipeplan::profiler
