#include "profiler/cuda/device_tensor.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "profiler/cuda/bf16.h"
#include "profiler/cuda/cuda_check.h"
#include "profiler/cuda/device_memory.h"

namespace pipeplan::profiler {
namespace {

// Host staging in the tensor's element type.
std::vector<unsigned char> encode(const Matrix& host, DType dtype) {
  const auto count = static_cast<std::size_t>(host.size());
  std::vector<unsigned char> bytes(count * static_cast<std::size_t>(dtype_bytes(dtype)));
  const float* values = host.data();
  if (dtype == DType::kF32) {
    std::memcpy(bytes.data(), values, bytes.size());
  } else if (dtype == DType::kBf16) {
    auto* out = reinterpret_cast<std::uint16_t*>(bytes.data());
    for (std::size_t i = 0; i < count; ++i) out[i] = bf16_from_float(values[i]);
  } else {
    auto* out = reinterpret_cast<std::int32_t*>(bytes.data());
    for (std::size_t i = 0; i < count; ++i) {
      if (values[i] != std::floor(values[i])) {
        throw std::invalid_argument(fmt::format("{} is not an integer", values[i]));
      }
      out[i] = static_cast<std::int32_t>(values[i]);
    }
  }
  return bytes;
}

void copy_in(const void* host, DeviceTensor& tensor) {
  if (tensor.empty()) return;
  cudaStream_t stream = tensor.context()->stream();
  PIPEPLAN_CUDA(
      cudaMemcpyAsync(tensor.data(), host, static_cast<std::size_t>(tensor.bytes()), cudaMemcpyHostToDevice, stream));
  PIPEPLAN_CUDA(cudaStreamSynchronize(stream));  // the host buffer dies on return
}

}  // namespace

std::int64_t dtype_bytes(DType dtype) { return dtype == DType::kBf16 ? 2 : 4; }

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return "bf16";
    case DType::kF32:
      return "fp32";
    case DType::kI32:
      return "int32";
  }
  return "?";
}

DeviceTensor::DeviceTensor(std::shared_ptr<DeviceContext> context, std::int64_t rows, std::int64_t cols, DType dtype)
    : context_(std::move(context)), rows_(rows), cols_(cols), dtype_(dtype) {
  if (context_ == nullptr) throw std::invalid_argument("DeviceTensor: no device context");
  if (rows < 0 || cols < 0) throw std::invalid_argument(fmt::format("DeviceTensor: shape {}x{}", rows, cols));
  data_ = device_allocate(bytes(), context_->device(), context_->stream());
}

DeviceTensor::DeviceTensor(DeviceTensor&& other) noexcept
    : context_(std::move(other.context_)),
      rows_(std::exchange(other.rows_, 0)),
      cols_(std::exchange(other.cols_, 0)),
      dtype_(other.dtype_),
      data_(std::exchange(other.data_, nullptr)) {}

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& other) noexcept {
  if (this != &other) {
    reset();
    context_ = std::move(other.context_);
    rows_ = std::exchange(other.rows_, 0);
    cols_ = std::exchange(other.cols_, 0);
    dtype_ = other.dtype_;
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

void DeviceTensor::reset() noexcept {
  if (data_ != nullptr) device_free(data_, bytes(), context_->device(), context_->stream());
  data_ = nullptr;
  rows_ = cols_ = 0;
  context_.reset();
}

DeviceTensor DeviceTensor::clone() const {
  if (context_ == nullptr) return {};
  DeviceTensor copy(context_, rows_, cols_, dtype_);
  if (!empty()) {
    PIPEPLAN_CUDA(cudaMemcpyAsync(copy.data_, data_, static_cast<std::size_t>(bytes()), cudaMemcpyDeviceToDevice,
                                  context_->stream()));
  }
  return copy;
}

void DeviceTensor::set_zero() {
  if (!empty()) PIPEPLAN_CUDA(cudaMemsetAsync(data_, 0, static_cast<std::size_t>(bytes()), context_->stream()));
}

DeviceTensor to_device(const std::shared_ptr<DeviceContext>& context, const Matrix& host, DType dtype) {
  DeviceTensor tensor(context, host.rows(), host.cols(), dtype);
  upload(host, tensor);
  return tensor;
}

DeviceTensor to_device(const std::shared_ptr<DeviceContext>& context, const std::vector<int>& values) {
  DeviceTensor tensor(context, static_cast<std::int64_t>(values.size()), 1, DType::kI32);
  static_assert(sizeof(int) == 4);
  copy_in(values.data(), tensor);
  return tensor;
}

void upload(const Matrix& host, DeviceTensor& tensor) {
  if (host.rows() != tensor.rows() || host.cols() != tensor.cols()) {
    throw std::invalid_argument(fmt::format("upload: a {}x{} matrix into a {}x{} tensor", host.rows(), host.cols(),
                                            tensor.rows(), tensor.cols()));
  }
  const std::vector<unsigned char> bytes = encode(host, tensor.dtype());
  copy_in(bytes.data(), tensor);
}

Matrix to_host(const DeviceTensor& tensor) {
  Matrix host(tensor.rows(), tensor.cols());
  if (tensor.empty()) return host;
  std::vector<unsigned char> bytes(static_cast<std::size_t>(tensor.bytes()));
  cudaStream_t stream = tensor.context()->stream();
  PIPEPLAN_CUDA(cudaMemcpyAsync(bytes.data(), tensor.data(), bytes.size(), cudaMemcpyDeviceToHost, stream));
  PIPEPLAN_CUDA(cudaStreamSynchronize(stream));
  float* out = host.data();
  for (std::int64_t i = 0; i < tensor.size(); ++i) {
    const auto at = static_cast<std::size_t>(i);
    if (tensor.dtype() == DType::kBf16) {
      std::uint16_t value = 0;
      std::memcpy(&value, bytes.data() + 2 * at, 2);
      out[i] = float_from_bf16(value);
    } else if (tensor.dtype() == DType::kF32) {
      std::memcpy(out + i, bytes.data() + 4 * at, 4);
    } else {
      std::int32_t value = 0;
      std::memcpy(&value, bytes.data() + 4 * at, 4);
      out[i] = static_cast<float>(value);
    }
  }
  return host;
}

void check_tensor(const std::string& layer, const char* what, const DeviceTensor& tensor, std::int64_t rows,
                  std::int64_t cols, DType dtype) {
  if (tensor.rows() != rows || tensor.cols() != cols || tensor.dtype() != dtype || tensor.context() == nullptr) {
    throw std::invalid_argument(fmt::format("{}: {} is {}x{} {}, expected {}x{} {}", layer, what, tensor.rows(),
                                            tensor.cols(), dtype_name(tensor.dtype()), rows, cols, dtype_name(dtype)));
  }
}

}  // namespace pipeplan::profiler
