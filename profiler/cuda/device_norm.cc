#include "profiler/cuda/device_norm.h"

#include <utility>

#include "profiler/cuda/column_sums.h"
#include "profiler/cuda/tensor_access.h"

namespace pipeplan::profiler {

DeviceNorm::DeviceNorm(std::shared_ptr<DeviceContext> context, std::string name, NormType type, int width)
    : context_(std::move(context)),
      name_(std::move(name)),
      type_(type),
      width_(width),
      gamma_(context_, 1, width, DType::kBf16),
      gamma_grad_(context_, 1, width, DType::kF32),
      states_(name_) {
  upload(Matrix::Ones(1, width), gamma_);  // the CPU backend's initial values
  gamma_grad_.set_zero();
  if (type_ == NormType::kLayer) {
    beta_ = DeviceTensor(context_, 1, width, DType::kBf16);
    beta_.set_zero();
    beta_grad_ = DeviceTensor(context_, 1, width, DType::kF32);
    beta_grad_.set_zero();
  }
}

DeviceTensor DeviceNorm::forward(int mb, DeviceTensor input) {
  check_tensor(name_, "the input", input, input.rows(), width_, DType::kBf16);
  State& state = states_.begin_forward(mb);
  const std::int64_t tokens = input.rows();
  state.normalized = DeviceTensor(context_, tokens, width_, DType::kBf16);
  state.inv_std = DeviceTensor(context_, tokens, 1, DType::kF32);
  DeviceTensor output(context_, tokens, width_, DType::kBf16);
  const kernels::bf16* beta = beta_.empty() ? nullptr : bf16_data(beta_);
  kernels::norm_forward(bf16_data(input), bf16_data(gamma_), beta, {tokens, width_, type_ == NormType::kLayer},
                        bf16_data(output), bf16_data(state.normalized), f32_data(state.inv_std), context_->stream());
  return output;
}

DeviceTensor DeviceNorm::backward_input(int mb, DeviceTensor grad_output) {
  State& state = states_.for_input(mb);
  const std::int64_t tokens = state.normalized.rows();
  check_tensor(name_, "the output gradient", grad_output, tokens, width_, DType::kBf16);
  DeviceTensor grad_input(context_, tokens, width_, DType::kBf16);
  kernels::norm_backward_input(bf16_data(grad_output), bf16_data(gamma_), bf16_data(state.normalized),
                               f32_data(state.inv_std), {tokens, width_, type_ == NormType::kLayer},
                               bf16_data(grad_input), context_->stream());
  state.inv_std.reset();
  state.grad_output = std::move(grad_output);
  return grad_input;
}

void DeviceNorm::backward_weight(int mb) {
  State& state = states_.for_weight(mb);
  add_column_sums(state.grad_output, &state.normalized, gamma_grad_);
  if (!beta_.empty()) add_column_sums(state.grad_output, nullptr, beta_grad_);
  states_.release(mb);
}

std::vector<DeviceParameter> DeviceNorm::parameters() {
  std::vector<DeviceParameter> result{{"gamma", &gamma_, &gamma_grad_}};
  if (!beta_.empty()) result.push_back({"beta", &beta_, &beta_grad_});
  return result;
}

}  // namespace pipeplan::profiler
