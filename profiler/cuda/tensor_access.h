// Typed views of a DeviceTensor's buffer for the kernel launchers, checked
// against its element type (a mismatch is a bug in the calling layer).
#pragma once

#include <stdexcept>

#include "profiler/cuda/device_tensor.h"
#include "profiler/cuda/kernels.h"

namespace pipeplan::profiler {

namespace detail {
inline void expect_dtype(const DeviceTensor& tensor, DType dtype) {
  if (tensor.dtype() != dtype && !tensor.empty()) {
    throw std::logic_error(std::string("a ") + dtype_name(tensor.dtype()) + " tensor used as " + dtype_name(dtype));
  }
}
}  // namespace detail

inline kernels::bf16* bf16_data(DeviceTensor& t) {
  detail::expect_dtype(t, DType::kBf16);
  return static_cast<kernels::bf16*>(t.data());
}
inline const kernels::bf16* bf16_data(const DeviceTensor& t) {
  detail::expect_dtype(t, DType::kBf16);
  return static_cast<const kernels::bf16*>(t.data());
}
inline float* f32_data(DeviceTensor& t) {
  detail::expect_dtype(t, DType::kF32);
  return static_cast<float*>(t.data());
}
inline const float* f32_data(const DeviceTensor& t) {
  detail::expect_dtype(t, DType::kF32);
  return static_cast<const float*>(t.data());
}
inline const std::int32_t* i32_data(const DeviceTensor& t) {
  detail::expect_dtype(t, DType::kI32);
  return static_cast<const std::int32_t*>(t.data());
}

}  // namespace pipeplan::profiler
