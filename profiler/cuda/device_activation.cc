#include "profiler/cuda/device_activation.h"

#include <utility>

#include "profiler/cuda/tensor_access.h"

namespace pipeplan::profiler {

DeviceActivation::DeviceActivation(std::shared_ptr<DeviceContext> context, std::string name, ActivationType type,
                                   int ffn)
    : context_(std::move(context)), name_(std::move(name)), type_(type), ffn_(ffn), states_(name_) {}

DeviceTensor DeviceActivation::forward(int mb, DeviceTensor input) {
  check_tensor(name_, "the input", input, input.rows(), input_width(), DType::kBf16);
  State& state = states_.begin_forward(mb);
  const std::int64_t tokens = input.rows();
  DeviceTensor output(context_, tokens, ffn_, DType::kBf16);
  if (type_ == ActivationType::kSwiglu) {
    kernels::swiglu_forward(bf16_data(input), bf16_data(output), tokens, ffn_, context_->stream());
  } else {
    kernels::gelu_forward(bf16_data(input), bf16_data(output), output.size(), context_->stream());
  }
  state.input = std::move(input);
  return output;
}

DeviceTensor DeviceActivation::backward_input(int mb, DeviceTensor grad_output) {
  State& state = states_.for_input(mb);
  const std::int64_t tokens = state.input.rows();
  check_tensor(name_, "the output gradient", grad_output, tokens, ffn_, DType::kBf16);
  DeviceTensor grad_input(context_, tokens, input_width(), DType::kBf16);
  if (type_ == ActivationType::kSwiglu) {
    kernels::swiglu_backward(bf16_data(state.input), bf16_data(grad_output), bf16_data(grad_input), tokens, ffn_,
                             context_->stream());
  } else {
    kernels::gelu_backward(bf16_data(state.input), bf16_data(grad_output), bf16_data(grad_input), grad_input.size(),
                           context_->stream());
  }
  states_.release(mb);
  return grad_input;
}

}  // namespace pipeplan::profiler
