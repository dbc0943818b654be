// The counting device allocator: every buffer of the CUDA layers is
// allocated here, stream-ordered (cudaMallocAsync from the device's pool),
// and counted per device, so that a profile reports the bytes a pass keeps
// and its peak working memory as measured, as the CPU backend does with
// malloc (memory_probe.h). Counts are the bytes asked for, in the order the
// host issues allocations; with one stream per device that is the order in
// which the device uses them.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

struct CUstream_st;

namespace pipeplan::profiler {

// cudaMallocAsync failed for want of memory; what() gives the size asked
// for and the bytes this allocator already had in use on the device.
class DeviceOutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws DeviceOutOfMemory or std::runtime_error. 0 bytes give nullptr.
void* device_allocate(std::int64_t bytes, int device, CUstream_st* stream);
// Ordered on `stream` after the work already queued there. Never throws:
// it runs in destructors (an error means the device is lost anyway).
void device_free(void* pointer, std::int64_t bytes, int device, CUstream_st* stream) noexcept;

// Bytes allocated through device_allocate on `device` and not yet freed.
std::int64_t device_bytes_in_use(int device);

// The high-water mark of device_bytes_in_use since the probe started; one
// probe per device at a time (starting one restarts the peak).
class DeviceMemoryProbe {
 public:
  explicit DeviceMemoryProbe(int device);
  std::int64_t start_bytes() const { return start_; }
  std::int64_t peak_above_start() const;
  std::int64_t now_above_start() const;

 private:
  int device_;
  std::int64_t start_;
};

}  // namespace pipeplan::profiler
