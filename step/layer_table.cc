#include "step/layer_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>

#include "common/error.h"
#include "models/time_model.h"

namespace pipeplan::step {
namespace {

void push_prefix(std::vector<double>& prefix, double value) { prefix.push_back(prefix.back() + value); }

// The ep x etp consecutive GPUs of an expert-parallel group lie inside a
// stage's t x c x d, which the pipeline's neighbours are apart: a group
// beyond its NVLink domain puts both on the network port.
double network_shared_with_experts(const models::HardwareConfig& hardware, const models::TrainingShape& shape) {
  const long long span = static_cast<long long>(shape.ep) * shape.expert_tp();
  const bool across = shape.ep > 1 && span > hardware.local_gpus();
  return across ? models::link_for_span(hardware, span).collective_bandwidth() : 0;
}

std::vector<models::LayerTimes> modelled_times(const models::ModelLayers& layers, const models::HardwareConfig& hardware,
                                               const models::TrainingShape& shape) {
  std::vector<models::LayerTimes> times;
  times.reserve(layers.layers.size());
  const models::LayerCost* previous = nullptr;
  for (const models::LayerCost& layer : layers.layers) {
    // A model's blocks are alike (only their names differ): cost a run of
    // equal ones once.
    const bool same = previous != nullptr && layer.forward == previous->forward &&
                      layer.backward_input == previous->backward_input &&
                      layer.backward_weight == previous->backward_weight && layer.recompute == previous->recompute;
    times.push_back(same ? times.back() : models::layer_times(layer, hardware, shape));
    previous = &layer;
  }
  return times;
}

const models::HardwareConfig& checked_precision(const models::HardwareConfig& hardware,
                                                const models::TrainingShape& shape) {
  if (shape.runtime.fp8 && hardware.gpu.peak_flops_fp8 <= 0) {
    throw InputError(fmt::format("--precision fp8: {} has no FP8 tensor cores (gpu.peak_flops.fp8 is 0); use "
                                 "--precision bf16",
                                 hardware.name));
  }
  return hardware;
}

}  // namespace

LayerTable::LayerTable(std::size_t layers) {
  for (std::vector<double>* prefix :
       {&forward_, &backward_input_, &backward_weight_, &forward_comm_, &backward_input_comm_, &forward_network_,
        &backward_input_network_, &forward_overhead_, &backward_overhead_, &params_, &expert_params_, &activation_,
        &weight_grad_, &logits_, &fp8_params_, &fp8_copies_, &recompute_, &recompute_bytes_, &dispatcher_layers_}) {
    prefix->reserve(layers + 1);
    prefix->push_back(0.0);
  }
  names_.reserve(layers);
  output_.reserve(layers);
  working_.reserve(layers);
}

LayerTable::LayerTable(const models::ModelLayers& layers, const models::HardwareConfig& hardware,
                       const models::TrainingShape& shape)
    : LayerTable(layers.layers.size()) {
  const std::vector<models::LayerTimes> times = modelled_times(layers, checked_precision(hardware, shape), shape);
  for (std::size_t index = 0; index < layers.layers.size(); ++index) {
    const models::LayerCost& layer = layers.layers[index];
    append(layer.name, layer, times[index], models::layer_overheads(layer, times[index], hardware, shape));
  }
  finish();
  pass_overhead_s_ = hardware.pass_overhead_s;
  hidden_comm_slowdown_ = models::contention_s(1.0, hardware.gpu);
  shared_network_bandwidth_ = network_shared_with_experts(hardware, shape);
}

LayerTable::LayerTable(const models::LayerKinds& layers, const models::HardwareConfig& hardware,
                       const models::TrainingShape& shape)
    : LayerTable(layers.kind_at.size()) {
  checked_precision(hardware, shape);
  std::vector<models::LayerTimes> times;
  std::vector<models::LayerOverheads> overheads;
  for (const models::LayerCost& kind : layers.kinds) {
    times.push_back(models::layer_times(kind, hardware, shape));
    overheads.push_back(models::layer_overheads(kind, times.back(), hardware, shape));
  }
  for (int position = 0; position < layers.positions(); ++position) {
    const auto kind = static_cast<std::size_t>(layers.kind_at[static_cast<std::size_t>(position)]);
    append(layers.names[static_cast<std::size_t>(position)], layers.kinds[kind], times[kind], overheads[kind]);
  }
  finish();
  pass_overhead_s_ = hardware.pass_overhead_s;
  hidden_comm_slowdown_ = models::contention_s(1.0, hardware.gpu);
  shared_network_bandwidth_ = network_shared_with_experts(hardware, shape);
}

LayerTable::LayerTable(const models::ModelLayers& layers, const std::vector<models::LayerTimes>& layer_times)
    : LayerTable(layers.layers.size()) {
  for (std::size_t index = 0; index < layers.layers.size(); ++index) {
    const models::LayerCost& layer = layers.layers[index];
    append(layer.name, layer, layer_times[index], {});
  }
  finish();
}

void LayerTable::append(const std::string& name, const models::LayerCost& layer, const models::LayerTimes& times,
                        const models::LayerOverheads& overheads) {
  names_.push_back(name);
  push_prefix(forward_, times.forward_s);
  push_prefix(backward_input_, times.backward_input_s);
  push_prefix(backward_weight_, times.backward_weight_s);
  push_prefix(forward_comm_, times.forward_comm_s);
  push_prefix(backward_input_comm_, times.backward_input_comm_s);
  push_prefix(forward_network_, times.forward_network_s);
  push_prefix(backward_input_network_, times.backward_input_network_s);
  push_prefix(forward_overhead_, overheads.forward_s);
  push_prefix(backward_overhead_, overheads.backward_s);
  push_prefix(params_, static_cast<double>(layer.params_per_rank));
  push_prefix(expert_params_, static_cast<double>(layer.expert_params_per_rank));
  push_prefix(fp8_params_, static_cast<double>(layer.fp8_params_per_rank));
  push_prefix(fp8_copies_, static_cast<double>(layer.fp8_weight_copy_bytes));
  push_prefix(activation_, static_cast<double>(layer.activation_bytes));
  push_prefix(weight_grad_, static_cast<double>(layer.weight_grad_bytes));
  push_prefix(logits_, static_cast<double>(layer.logits_bytes));
  push_prefix(recompute_, times.recompute_s);
  push_prefix(recompute_bytes_, static_cast<double>(layer.recompute_bytes));
  output_.push_back(static_cast<double>(layer.output_bytes));
  working_.push_back(static_cast<double>(layer.working_bytes));
  push_prefix(dispatcher_layers_, layer.dispatcher_buffer_bytes > 0 ? 1.0 : 0.0);
  dispatcher_buffer_ = std::max(dispatcher_buffer_, static_cast<double>(layer.dispatcher_buffer_bytes));
}

void LayerTable::finish() {
  const auto passes = [&](int k) {
    return std::array<double, 9>{forward_s(k, k + 1),
                                 backward_input_s(k, k + 1),
                                 backward_weight_s(k, k + 1),
                                 forward_comm_s(k, k + 1),
                                 backward_input_comm_s(k, k + 1),
                                 forward_network_s(k, k + 1),
                                 backward_input_network_s(k, k + 1),
                                 range(forward_overhead_, k, k + 1),
                                 range(backward_overhead_, k, k + 1)};
  };
  for (int k = 1; k + 1 < size(); ++k) {
    const bool seen = std::any_of(distinct_blocks_.begin(), distinct_blocks_.end(),
                                  [&](int other) { return passes(other) == passes(k); });
    if (!seen) distinct_blocks_.push_back(k);
  }
  // Sparse table for O(1) range maxima.
  working_max_.push_back(std::move(working_));
  working_ = {};
  for (std::size_t width = 2; width <= names_.size(); width *= 2) {
    const std::vector<double>& below = working_max_.back();
    std::vector<double> level(names_.size() - width + 1);
    for (std::size_t start = 0; start < level.size(); ++start) {
      level[start] = std::max(below[start], below[start + width / 2]);
    }
    working_max_.push_back(std::move(level));
  }
}

double LayerTable::working_bytes(int i, int j) const {
  if (j <= i) return 0;
  const auto length = static_cast<unsigned>(j - i);
  const int level = std::bit_width(length) - 1;
  const std::vector<double>& row = working_max_[static_cast<std::size_t>(level)];
  return std::max(row[static_cast<std::size_t>(i)], row[static_cast<std::size_t>(j - (1 << level))]);
}

}  // namespace pipeplan::step
