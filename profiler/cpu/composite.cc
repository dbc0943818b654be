#include "profiler/cpu/composite.h"

#include <fmt/format.h>

namespace pipeplan::profiler {

void Sequential::add(std::string name, std::unique_ptr<Layer> layer) {
  children_.emplace_back(std::move(name), std::move(layer));
}

Matrix Sequential::forward(int mb, const Matrix& input) {
  Matrix activation = input;
  for (auto& [name, child] : children_) activation = child->forward(mb, activation);
  return activation;
}

Matrix Sequential::backward_input(int mb, const Matrix& grad_output) {
  Matrix gradient = grad_output;
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) gradient = it->second->backward_input(mb, gradient);
  return gradient;
}

void Sequential::backward_weight(int mb) {
  for (auto& [name, child] : children_) child->backward_weight(mb);
}

std::vector<Parameter> Sequential::parameters() {
  std::vector<Parameter> result;
  for (auto& [name, child] : children_) {
    for (Parameter& parameter : child->parameters()) {
      parameter.name = fmt::format("{}.{}", name, parameter.name);
      result.push_back(parameter);
    }
  }
  return result;
}

std::int64_t Sequential::held_bytes(int mb) const {
  std::int64_t total = 0;
  for (const auto& [name, child] : children_) total += child->held_bytes(mb);
  return total;
}

double Sequential::forward_flops(int tokens) const {
  double total = 0;
  for (const auto& [name, child] : children_) total += child->forward_flops(tokens);
  return total;
}

double Sequential::backward_input_flops(int tokens) const {
  double total = 0;
  for (const auto& [name, child] : children_) total += child->backward_input_flops(tokens);
  return total;
}

double Sequential::backward_weight_flops(int tokens) const {
  double total = 0;
  for (const auto& [name, child] : children_) total += child->backward_weight_flops(tokens);
  return total;
}

}  // namespace pipeplan::profiler
