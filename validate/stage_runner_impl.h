// The definitions of BasicStageRunner, included only where a backend's
// runner is instantiated (stage_runner.cc, cuda/cuda_stage_runner.cc).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "profiler/cpu/model_builder.h"
#include "validate/stage_runner.h"

namespace pipeplan::validate {

template <class Backend>
BasicStageRunner<Backend>::BasicStageRunner(Backend backend, const models::ModelConfig& model,
                                            const models::TrainingShape& shape, const sim::Schedule& schedule,
                                            const step::StageSplit& split, int rank, const RunSettings& settings)
    : backend_(std::move(backend)),
      model_(model),
      shape_(shape),
      schedule_(schedule),
      rank_(rank),
      settings_(settings) {
  const int output_layer = split.layer_count() - 1;
  for (int stage = 0; stage < schedule.stages; ++stage) {
    if (schedule.rank_of(stage) != rank) continue;
    const int first = split.first_layer(stage), end = split.end_layer(stage);
    stages_[stage] = backend_.build(model, shape, first, end, settings.seed, schedule.microbatches);
    first_layer_[stage] = first;
    holds_output_[stage] = first <= output_layer && output_layer < end;
  }
}

// Each layer takes its input by value where the backend lets it keep the
// buffer (the GPU's); the CPU's layers copy what they keep.
template <class Backend>
auto BasicStageRunner<Backend>::run_forward(int stage, int mb, Tensor input) -> Tensor {
  auto& layers = stages_.at(stage);
  if (holds_output_.at(stage)) {
    backend_.set_targets(*layers.back(), mb, profiler::sample_targets(model_, shape_, mb, settings_.seed));
  }
  Tensor activation = std::move(input);
  for (auto& layer : layers) activation = layer->forward(mb, std::move(activation));
  return activation;
}

template <class Backend>
auto BasicStageRunner<Backend>::run_backward_input(int stage, int mb, Tensor grad) -> Tensor {
  auto& layers = stages_.at(stage);
  Tensor gradient = std::move(grad);
  for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer) {
    gradient = (*layer)->backward_input(mb, std::move(gradient));
  }
  return gradient;
}

template <class Backend>
void BasicStageRunner<Backend>::run_backward_weight(int stage, int mb) {
  for (auto& layer : stages_.at(stage)) layer->backward_weight(mb);
}

// The input of `stage` for mb: tokens for the first stage, else what the
// neighbour produced (locally, or received by an earlier RECV).
template <class Backend>
auto BasicStageRunner<Backend>::stage_input(int stage, int mb, int direction) -> Tensor {
  if (direction == kForwardTensor && stage == 0) return backend_.tokens(model_, shape_, mb, settings_.seed);
  if (direction == kBackwardTensor && holds_output_.at(stage)) return backend_.loss_gradient();
  const auto found = pending_.find(tensor_key(stage, mb, direction, schedule_.microbatches));
  if (found == pending_.end()) {
    throw InputError(fmt::format("rank {}: the input of stage {} micro-batch {} never arrived", rank_, stage, mb));
  }
  Tensor tensor = std::move(found->second);
  pending_.erase(found);
  return tensor;
}

template <class Backend>
void BasicStageRunner<Backend>::execute(const sim::Action& action, Channel& channel) {
  const int s = action.stage, mb = action.microbatch, m = schedule_.microbatches;
  const auto rows = static_cast<std::int64_t>(shape_.micro_batch_size) * shape_.seq_len;
  switch (action.kind) {
    case sim::OpKind::kForward: {
      Tensor output = run_forward(s, mb, stage_input(s, mb, kForwardTensor));
      if (holds_output_.at(s)) {
        losses_.push_back(std::move(output));
      } else {
        pending_[tensor_key(s + 1, mb, kForwardTensor, m)] = std::move(output);
      }
      break;
    }
    case sim::OpKind::kBackward:
    case sim::OpKind::kBackwardInput: {
      Tensor gradient = run_backward_input(s, mb, stage_input(s, mb, kBackwardTensor));
      if (s > 0) pending_[tensor_key(s - 1, mb, kBackwardTensor, m)] = std::move(gradient);
      if (action.kind == sim::OpKind::kBackward) run_backward_weight(s, mb);
      break;
    }
    case sim::OpKind::kBackwardWeight: run_backward_weight(s, mb); break;
    case sim::OpKind::kSendForward:
    case sim::OpKind::kSendBackward: {
      const bool forward = action.kind == sim::OpKind::kSendForward;
      const int peer_stage = forward ? s + 1 : s - 1;
      const std::int64_t key = tensor_key(peer_stage, mb, forward ? kForwardTensor : kBackwardTensor, m);
      channel.send(schedule_.rank_of(peer_stage), key, std::move(pending_.at(key)));
      pending_.erase(key);
      break;
    }
    case sim::OpKind::kRecvForward:
    case sim::OpKind::kRecvBackward: {
      const bool forward = action.kind == sim::OpKind::kRecvForward;
      const std::int64_t key = tensor_key(s, mb, forward ? kForwardTensor : kBackwardTensor, m);
      try {
        pending_[key] = channel.receive(schedule_.rank_of(forward ? s - 1 : s + 1), key, rows, model_.hidden);
      } catch (const RankFailure& failure) {
        throw RankFailure(failure.failed_rank(),
                          fmt::format("{} (waiting in {})", failure.what(), sim::to_string(action)));
      }
      break;
    }
    case sim::OpKind::kOffload:
    case sim::OpKind::kReload:
    case sim::OpKind::kRecompute:
      // Only the simulator places host copies and recomputations apart; plans carry none.
      throw std::logic_error("validate runs no activation offload and no recomputation apart");
  }
}

// A record spans the action's real duration: the backend's finish_action
// waits for the work the action queued (on a GPU, for its stream) before
// the end time is taken.
template <class Backend>
std::vector<RunRecord> BasicStageRunner<Backend>::run_iteration(const sim::Schedule& lowered, Channel& channel,
                                                                const std::function<double()>& clock) {
  std::vector<RunRecord> records;
  loss_ = 0;
  peak_held_ = held_bytes();
  for (const sim::Action& action : lowered.actions[static_cast<std::size_t>(rank_)]) {
    const double start = clock();
    execute(action, channel);
    backend_.finish_action();
    const bool recorded = sim::is_compute(action.kind) || action.kind == sim::OpKind::kRecvForward ||
                          action.kind == sim::OpKind::kRecvBackward;
    if (recorded) records.push_back({action, start, clock()});
    peak_held_ = std::max(peak_held_, held_bytes());
  }
  channel.finish_sends();
  // Read after the timed actions (on a GPU each read is a copy to the host).
  for (const Tensor& output : losses_) loss_ += backend_.loss(output) / schedule_.microbatches;
  losses_.clear();
  return records;
}

template <class Backend>
bool BasicStageRunner<Backend>::holds_loss() const {
  return std::any_of(holds_output_.begin(), holds_output_.end(), [](const auto& entry) { return entry.second; });
}

template <class Backend>
void BasicStageRunner<Backend>::zero_gradients() {
  for (auto& [index, parameter] : parameters()) backend_.zero(*parameter.gradient);
}

template <class Backend>
auto BasicStageRunner<Backend>::parameters() -> std::vector<std::pair<int, Parameter>> {
  std::vector<std::pair<int, Parameter>> all;
  for (auto& [stage, layers] : stages_) {
    for (std::size_t i = 0; i < layers.size(); ++i) {
      for (const Parameter& parameter : layers[i]->parameters()) {
        all.emplace_back(first_layer_.at(stage) + static_cast<int>(i), parameter);
      }
    }
  }
  return all;
}

template <class Backend>
GradientCheck BasicStageRunner<Backend>::compare_gradients(ReferenceRun& reference) {
  GradientCheck check;
  check.tolerance = Backend::kGradientTolerance;
  for (const auto& [layer, parameter] : parameters()) {
    const profiler::Matrix& gradient = backend_.host(*parameter.gradient);  // a copy only off the host
    compare_gradient(layer, parameter.name, gradient, reference, check);
  }
  return check;
}

template <class Backend>
std::int64_t BasicStageRunner<Backend>::held_bytes() const {
  std::int64_t bytes = 0;
  for (const auto& [stage, layers] : stages_) {
    for (int mb = 0; mb < schedule_.microbatches; ++mb) {
      for (const auto& layer : layers) bytes += layer->held_bytes(mb);
    }
  }
  for (const auto& [key, tensor] : pending_) bytes += backend_.bytes(tensor);
  return bytes;
}

template <class Backend>
std::int64_t BasicStageRunner<Backend>::parameter_bytes() {
  std::int64_t bytes = 0;
  for (const auto& [layer, parameter] : parameters()) {
    bytes += backend_.bytes(*parameter.value) + backend_.bytes(*parameter.gradient);
  }
  return bytes;
}

}  // namespace pipeplan::validate
