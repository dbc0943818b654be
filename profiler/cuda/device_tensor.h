// A matrix in GPU memory: rows x cols, row-major, one element type. It owns
// its buffer (allocated through the counting allocator, device_memory.h,
// ordered on its context's stream) and is moved, never copied implicitly:
// clone() is the explicit copy. Activations are bf16 (one row per token),
// weight gradients and a few statistics fp32, targets int32.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/cpu/layer.h"
#include "profiler/cuda/device_context.h"

namespace pipeplan::profiler {

enum class DType { kBf16, kF32, kI32 };

std::int64_t dtype_bytes(DType dtype);
const char* dtype_name(DType dtype);

class DeviceTensor {
 public:
  DeviceTensor() = default;  // 0 x 0, no buffer
  // Uninitialised contents.
  DeviceTensor(std::shared_ptr<DeviceContext> context, std::int64_t rows, std::int64_t cols, DType dtype);
  ~DeviceTensor() { reset(); }
  DeviceTensor(DeviceTensor&& other) noexcept;
  DeviceTensor& operator=(DeviceTensor&& other) noexcept;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  std::int64_t rows() const { return rows_; }
  std::int64_t cols() const { return cols_; }
  std::int64_t size() const { return rows_ * cols_; }
  std::int64_t bytes() const { return size() * dtype_bytes(dtype_); }
  DType dtype() const { return dtype_; }
  bool empty() const { return size() == 0; }
  void* data() { return data_; }
  const void* data() const { return data_; }
  const std::shared_ptr<DeviceContext>& context() const { return context_; }

  // A new tensor with the same contents (a device-to-device copy).
  DeviceTensor clone() const;
  void set_zero();
  // Frees the buffer now (stream-ordered) and leaves an empty tensor.
  void reset() noexcept;

 private:
  std::shared_ptr<DeviceContext> context_;
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
  DType dtype_ = DType::kF32;
  void* data_ = nullptr;
};

// A host matrix on the device as `dtype` (bf16: rounded to nearest even;
// int32: the values must be integers, as token ids are).
DeviceTensor to_device(const std::shared_ptr<DeviceContext>& context, const Matrix& host, DType dtype);
// Integers as an int32 column (targets).
DeviceTensor to_device(const std::shared_ptr<DeviceContext>& context, const std::vector<int>& values);
// Overwrites `tensor` (same shape, its own dtype) with `host`.
void upload(const Matrix& host, DeviceTensor& tensor);
// The tensor as fp32 on the host; waits for the tensor's stream.
Matrix to_host(const DeviceTensor& tensor);

// A pass given a tensor of the wrong shape or type is a caller bug (a
// schedule feeding one layer's output into the wrong layer): it throws
// std::invalid_argument naming the layer.
void check_tensor(const std::string& layer, const char* what, const DeviceTensor& tensor, std::int64_t rows,
                  std::int64_t cols, DType dtype);

}  // namespace pipeplan::profiler
