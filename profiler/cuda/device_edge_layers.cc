#include "profiler/cuda/device_edge_layers.h"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "profiler/cuda/tensor_access.h"

namespace pipeplan::profiler {

DeviceEmbedding::DeviceEmbedding(std::shared_ptr<DeviceContext> context, const models::ModelConfig& model, int seq_len)
    : context_(std::move(context)),
      seq_len_(seq_len),
      hidden_(model.hidden),
      table_(context_, model.vocab, model.hidden, DType::kBf16),
      table_grad_(context_, model.vocab, model.hidden, DType::kF32),
      states_("embedding") {
  table_.set_zero();  // the builder copies the drawn table in
  table_grad_.set_zero();
  if (model.position == models::PositionEmbedding::kLearned) {
    positions_ = DeviceTensor(context_, model.context, model.hidden, DType::kBf16);
    positions_.set_zero();
    positions_grad_ = DeviceTensor(context_, model.context, model.hidden, DType::kF32);
    positions_grad_.set_zero();
  }
}

DeviceTensor DeviceEmbedding::forward(int mb, DeviceTensor input) {
  check_tensor("embedding", "the token column", input, input.rows(), 1, DType::kF32);
  if (!positions_.empty() && seq_len_ > positions_.rows()) {
    throw std::invalid_argument(
        fmt::format("embedding: {} tokens per sequence, {} learned positions", seq_len_, positions_.rows()));
  }
  State& state = states_.begin_forward(mb);
  DeviceTensor output(context_, input.rows(), hidden_, DType::kBf16);
  const kernels::EmbeddingShape shape{input.rows(), hidden_, table_.rows(), seq_len_};
  kernels::embedding_forward(f32_data(input), bf16_data(table_), positions_.empty() ? nullptr : bf16_data(positions_),
                             shape, bf16_data(output), context_->stream());
  state.tokens = std::move(input);
  return output;
}

DeviceTensor DeviceEmbedding::backward_input(int mb, DeviceTensor grad_output) {
  State& state = states_.for_input(mb);
  check_tensor("embedding", "the output gradient", grad_output, state.tokens.rows(), hidden_, DType::kBf16);
  state.grad_output = std::move(grad_output);
  return {};
}

void DeviceEmbedding::backward_weight(int mb) {
  State& state = states_.for_weight(mb);
  const kernels::EmbeddingShape shape{state.tokens.rows(), hidden_, table_.rows(), seq_len_};
  kernels::embedding_backward(f32_data(state.tokens), bf16_data(state.grad_output), shape, f32_data(table_grad_),
                              context_->stream());
  if (!positions_.empty()) {
    kernels::embedding_backward(nullptr, bf16_data(state.grad_output), shape, f32_data(positions_grad_),
                                context_->stream());
  }
  states_.release(mb);
}

std::vector<DeviceParameter> DeviceEmbedding::parameters() {
  std::vector<DeviceParameter> result{{"table", &table_, &table_grad_}};
  if (!positions_.empty()) result.push_back({"positions", &positions_, &positions_grad_});
  return result;
}

// The LM head has its own weight even when the model ties it to the
// embedding, as in the CPU backend (the two live on different stages).
DeviceOutputLayer::DeviceOutputLayer(const std::shared_ptr<DeviceContext>& context, const models::ModelConfig& model,
                                     int microbatches)
    : context_(context),
      vocab_(model.vocab),
      microbatches_(microbatches),
      norm_(context, "output.norm", model.norm == models::NormKind::kRmsNorm ? NormType::kRms : NormType::kLayer,
            model.hidden),
      head_(context, "output.head", model.hidden, static_cast<int>(model.vocab), false, DType::kF32),
      states_("output") {}

void DeviceOutputLayer::set_targets(int mb, const std::vector<int>& targets) {
  for (const int target : targets) {
    if (target < 0 || target >= vocab_) {
      throw std::invalid_argument(fmt::format("output: target {} is not an id in [0, {})", target, vocab_));
    }
  }
  pending_targets_[mb] = to_device(context_, targets);
}

DeviceTensor DeviceOutputLayer::forward(int mb, DeviceTensor input) {
  const auto pending = pending_targets_.find(mb);
  if (pending == pending_targets_.end() || pending->second.rows() != input.rows()) {
    throw std::logic_error(
        fmt::format("output: forward of micro-batch {} needs set_targets with {} targets first", mb, input.rows()));
  }
  const std::int64_t tokens = input.rows();
  DeviceTensor probs = head_.forward(mb, norm_.forward(mb, std::move(input)));  // logits, softmax in place
  State& state = states_.begin_forward(mb);
  state.targets = std::move(pending->second);
  pending_targets_.erase(pending);
  DeviceTensor row_loss(context_, tokens, 1, DType::kF32);
  kernels::cross_entropy_forward(f32_data(probs), i32_data(state.targets), tokens, vocab_, f32_data(row_loss),
                                 context_->stream());
  DeviceTensor loss(context_, 1, 1, DType::kF32);
  kernels::mean(f32_data(row_loss), tokens, f32_data(loss), context_->stream());
  state.probs = std::move(probs);
  return loss;
}

DeviceTensor DeviceOutputLayer::backward_input(int mb, DeviceTensor) {
  State& state = states_.for_input(mb);
  // dL/d(logits) = (softmax - onehot) / (tokens x microbatches).
  const std::int64_t tokens = state.probs.rows();
  DeviceTensor grad_logits(context_, tokens, vocab_, DType::kBf16);
  const double scale = 1.0 / (static_cast<double>(tokens) * microbatches_);
  kernels::cross_entropy_backward(f32_data(state.probs), i32_data(state.targets), tokens, vocab_,
                                  static_cast<float>(scale), bf16_data(grad_logits), context_->stream());
  states_.release(mb);
  return norm_.backward_input(mb, head_.backward_input(mb, std::move(grad_logits)));
}

void DeviceOutputLayer::backward_weight(int mb) {
  norm_.backward_weight(mb);
  head_.backward_weight(mb);
}

std::vector<DeviceParameter> DeviceOutputLayer::parameters() {
  std::vector<DeviceParameter> result;
  for (DeviceParameter& parameter : norm_.parameters()) {
    parameter.name = fmt::format("norm.{}", parameter.name);
    result.push_back(parameter);
  }
  for (DeviceParameter& parameter : head_.parameters()) {
    parameter.name = fmt::format("head.{}", parameter.name);
    result.push_back(parameter);
  }
  return result;
}

std::int64_t DeviceOutputLayer::held_bytes(int mb) const {
  const auto pending = pending_targets_.find(mb);
  const std::int64_t pending_bytes = pending == pending_targets_.end() ? 0 : pending->second.bytes();
  return pending_bytes + states_.bytes(mb) + norm_.held_bytes(mb) + head_.held_bytes(mb);
}

}  // namespace pipeplan::profiler
