#include "validate/gradient_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "common/error.h"
#include "profiler/cpu/model_builder.h"
#include "profiler/cuda/bf16.h"

namespace pipeplan::validate {

namespace {

void round_weights_to_bf16(std::vector<std::unique_ptr<profiler::Layer>>& layers) {
  for (auto& layer : layers) {
    for (const profiler::Parameter& parameter : layer->parameters()) {
      float* values = parameter.value->data();
      std::transform(values, values + parameter.value->size(), values, profiler::round_to_bf16);
    }
  }
}

}  // namespace

ReferenceRun run_reference(const models::ModelConfig& model, const models::TrainingShape& shape, int microbatches,
                           std::uint64_t seed, bool bf16_weights) {
  ReferenceRun run;
  run.layers = profiler::build_cpu_layers(model, shape, 0, model.layers + 2, {seed, microbatches});
  if (bf16_weights) round_weights_to_bf16(run.layers);
  for (int mb = 0; mb < microbatches; ++mb) {
    profiler::set_targets(*run.layers.back(), mb, profiler::sample_targets(model, shape, mb, seed));
    profiler::Matrix activation = profiler::sample_tokens(model, shape, mb, seed);
    for (auto& layer : run.layers) activation = layer->forward(mb, activation);
    run.loss += activation(0, 0) / microbatches;
    profiler::Matrix gradient = profiler::Matrix::Ones(1, 1);
    for (auto layer = run.layers.rbegin(); layer != run.layers.rend(); ++layer) {
      gradient = (*layer)->backward_input(mb, gradient);
      (*layer)->backward_weight(mb);
    }
  }
  return run;
}

void compare_gradient(int layer, const std::string& name, const profiler::Matrix& gradient, ReferenceRun& reference,
                      GradientCheck& check) {
  if (layer < 0 || layer >= static_cast<int>(reference.layers.size())) {
    throw InputError(fmt::format("parameter {} of layer {}: the reference has no such layer", name, layer));
  }
  const auto expected = reference.layers[static_cast<std::size_t>(layer)]->parameters();
  const auto match =
      std::find_if(expected.begin(), expected.end(), [&](const profiler::Parameter& p) { return p.name == name; });
  if (match == expected.end()) {
    throw InputError(fmt::format("parameter {} of layer {}: the reference has no such parameter", name, layer));
  }
  if (gradient.rows() != match->gradient->rows() || gradient.cols() != match->gradient->cols()) {
    throw InputError(fmt::format("parameter {} of layer {}: shape differs from the reference's", name, layer));
  }
  const double scale = std::max(static_cast<double>(match->gradient->norm()), std::numeric_limits<double>::min());
  const double error = static_cast<double>((gradient - *match->gradient).norm()) / scale;
  ++check.parameters;
  if (error >= check.max_relative_error) {
    check.max_relative_error = error;
    check.worst_parameter = fmt::format("layer {} {}", layer, name);
    check.worst_layer = layer;
  }
}

}  // namespace pipeplan::validate
