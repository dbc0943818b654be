#include "profiler/cuda/device_linear.h"

#include <stdexcept>
#include <utility>

#include "profiler/cuda/column_sums.h"
#include "profiler/cuda/gemm.h"
#include "profiler/cuda/tensor_access.h"

namespace pipeplan::profiler {

DeviceLinear::DeviceLinear(std::shared_ptr<DeviceContext> context, std::string name, int in, int out, bool bias,
                           DType output)
    : context_(std::move(context)),
      name_(std::move(name)),
      in_(in),
      out_(out),
      output_(output),
      weight_(context_, out, in, DType::kBf16),
      weight_grad_(context_, out, in, DType::kF32),
      states_(name_) {
  if (output_ == DType::kI32 || (bias && output_ != DType::kBf16)) {
    throw std::invalid_argument(name_ + ": a linear layer's output is bf16, or fp32 without a bias");
  }
  weight_.set_zero();  // the builder copies the drawn weights in
  weight_grad_.set_zero();
  if (bias) {
    bias_ = DeviceTensor(context_, 1, out, DType::kBf16);
    bias_.set_zero();
    bias_grad_ = DeviceTensor(context_, 1, out, DType::kF32);
    bias_grad_.set_zero();
  }
}

DeviceTensor DeviceLinear::forward(int mb, DeviceTensor input) {
  check_tensor(name_, "the input", input, input.rows(), in_, DType::kBf16);
  State& state = states_.begin_forward(mb);
  const std::int64_t tokens = input.rows();
  DeviceTensor output(context_, tokens, out_, output_);
  gemm(*context_, {tokens, out_, in_}, 1.0f, {input.data(), DType::kBf16, in_},
       {weight_.data(), DType::kBf16, in_, true}, 0.0f, {output.data(), output_, out_});
  if (!bias_.empty()) kernels::add_bias(bf16_data(output), bf16_data(bias_), tokens, out_, context_->stream());
  state.input = std::move(input);
  return output;
}

DeviceTensor DeviceLinear::backward_input(int mb, DeviceTensor grad_output) {
  State& state = states_.for_input(mb);
  const std::int64_t tokens = state.input.rows();
  check_tensor(name_, "the output gradient", grad_output, tokens, out_, DType::kBf16);
  DeviceTensor grad_input(context_, tokens, in_, DType::kBf16);
  gemm(*context_, {tokens, in_, out_}, 1.0f, {grad_output.data(), DType::kBf16, out_},
       {weight_.data(), DType::kBf16, in_}, 0.0f, {grad_input.data(), DType::kBf16, in_});
  state.grad_output = std::move(grad_output);
  return grad_input;
}

void DeviceLinear::backward_weight(int mb) {
  State& state = states_.for_weight(mb);
  const std::int64_t tokens = state.input.rows();
  gemm(*context_, {out_, in_, tokens}, 1.0f, {state.grad_output.data(), DType::kBf16, out_, true},
       {state.input.data(), DType::kBf16, in_}, 1.0f, {weight_grad_.data(), DType::kF32, in_});
  if (!bias_.empty()) add_column_sums(state.grad_output, nullptr, bias_grad_);
  states_.release(mb);
}

std::vector<DeviceParameter> DeviceLinear::parameters() {
  std::vector<DeviceParameter> result{{"weight", &weight_, &weight_grad_}};
  if (!bias_.empty()) result.push_back({"bias", &bias_, &bias_grad_});
  return result;
}

}  // namespace pipeplan::profiler
