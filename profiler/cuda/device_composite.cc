#include "profiler/cuda/device_composite.h"

#include <fmt/format.h>

#include <stdexcept>

#include "profiler/cuda/tensor_access.h"

namespace pipeplan::profiler {

void DeviceSequential::add(std::string name, std::unique_ptr<DeviceLayer> layer) {
  children_.emplace_back(std::move(name), std::move(layer));
}

DeviceTensor DeviceSequential::forward(int mb, DeviceTensor input) {
  for (auto& [name, child] : children_) input = child->forward(mb, std::move(input));
  return input;
}

DeviceTensor DeviceSequential::backward_input(int mb, DeviceTensor grad_output) {
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
    grad_output = it->second->backward_input(mb, std::move(grad_output));
  }
  return grad_output;
}

void DeviceSequential::backward_weight(int mb) {
  for (auto& [name, child] : children_) child->backward_weight(mb);
}

std::vector<DeviceParameter> DeviceSequential::parameters() {
  std::vector<DeviceParameter> result;
  for (auto& [name, child] : children_) {
    for (DeviceParameter& parameter : child->parameters()) {
      parameter.name = fmt::format("{}.{}", name, parameter.name);
      result.push_back(parameter);
    }
  }
  return result;
}

std::int64_t DeviceSequential::held_bytes(int mb) const {
  std::int64_t total = 0;
  for (const auto& [name, child] : children_) total += child->held_bytes(mb);
  return total;
}

double DeviceSequential::forward_flops(int tokens) const {
  double total = 0;
  for (const auto& [name, child] : children_) total += child->forward_flops(tokens);
  return total;
}

double DeviceSequential::backward_input_flops(int tokens) const {
  double total = 0;
  for (const auto& [name, child] : children_) total += child->backward_input_flops(tokens);
  return total;
}

double DeviceSequential::backward_weight_flops(int tokens) const {
  double total = 0;
  for (const auto& [name, child] : children_) total += child->backward_weight_flops(tokens);
  return total;
}

namespace {

// sum += addend, elementwise; both bf16 and the same shape.
DeviceTensor add_into(DeviceTensor sum, const DeviceTensor& addend) {
  if (sum.rows() != addend.rows() || sum.cols() != addend.cols()) {
    throw std::invalid_argument(fmt::format("residual: the inner chain maps {}x{} to {}x{}", addend.rows(),
                                            addend.cols(), sum.rows(), sum.cols()));
  }
  kernels::add_inplace(bf16_data(sum), bf16_data(addend), sum.size(), sum.context()->stream());
  return sum;
}

}  // namespace

DeviceTensor DeviceResidual::forward(int mb, DeviceTensor input) {
  return add_into(inner_->forward(mb, input.clone()), input);
}

DeviceTensor DeviceResidual::backward_input(int mb, DeviceTensor grad_output) {
  return add_into(inner_->backward_input(mb, grad_output.clone()), grad_output);
}

}  // namespace pipeplan::profiler
