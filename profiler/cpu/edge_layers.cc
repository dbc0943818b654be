#include "profiler/cpu/edge_layers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace pipeplan::profiler {
namespace {

// Adds grad's rows into target's rows index[row]. The rows of each target
// row are summed first and added once, so that the accumulated gradient
// does not depend on the order in which micro-batches run their W passes
// (a token repeated across micro-batches would otherwise be summed in a
// different order).
void scatter_add(Matrix& target, const std::vector<Eigen::Index>& index, const Matrix& grad) {
  std::vector<std::size_t> order(index.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return index[a] < index[b]; });
  Eigen::RowVectorXf sum(grad.cols());
  for (std::size_t i = 0; i < order.size();) {
    const Eigen::Index row = index[order[i]];
    sum = grad.row(static_cast<Eigen::Index>(order[i]));
    for (++i; i < order.size() && index[order[i]] == row; ++i) sum += grad.row(static_cast<Eigen::Index>(order[i]));
    target.row(row) += sum;
  }
}

}  // namespace

EmbeddingLayer::EmbeddingLayer(const models::ModelConfig& model, int seq_len, Rng& rng)
    : seq_len_(seq_len),
      learned_positions_(model.position == models::PositionEmbedding::kLearned),
      table_(model.vocab, model.hidden),
      table_grad_(Matrix::Zero(model.vocab, model.hidden)),
      states_("embedding") {
  rng.fill(table_, kInitScale);
  if (learned_positions_) {
    positions_.resize(model.context, model.hidden);
    rng.fill(positions_, kInitScale);
    positions_grad_ = Matrix::Zero(model.context, model.hidden);
  }
}

std::vector<Eigen::Index> EmbeddingLayer::token_rows(const Matrix& tokens) const {
  std::vector<Eigen::Index> rows(static_cast<std::size_t>(tokens.rows()));
  for (Eigen::Index row = 0; row < tokens.rows(); ++row) {
    const float id = tokens(row, 0);
    if (!(id >= 0 && id < static_cast<float>(table_.rows())) || id != std::floor(id)) {
      throw std::invalid_argument(
          fmt::format("embedding: token {} at row {} is not an id in [0, {})", id, row, table_.rows()));
    }
    rows[static_cast<std::size_t>(row)] = static_cast<Eigen::Index>(id);
  }
  return rows;
}

Matrix EmbeddingLayer::forward(int mb, const Matrix& input) {
  check_shape("embedding", "the token column", input, input.rows(), 1);
  const std::vector<Eigen::Index> ids = token_rows(input);  // validated before any state is kept
  State& state = states_.begin_forward(mb);
  state.tokens = input;
  Matrix output(input.rows(), table_.cols());
  for (Eigen::Index row = 0; row < input.rows(); ++row) {
    output.row(row) = table_.row(ids[static_cast<std::size_t>(row)]);
    if (learned_positions_) output.row(row) += positions_.row(row % seq_len_);
  }
  return output;
}

Matrix EmbeddingLayer::backward_input(int mb, const Matrix& grad_output) {
  State& state = states_.for_input(mb);
  check_shape("embedding", "the output gradient", grad_output, state.tokens.rows(), table_.cols());
  state.grad_output = grad_output;
  return Matrix(0, 0);
}

void EmbeddingLayer::backward_weight(int mb) {
  State& state = states_.for_weight(mb);
  scatter_add(table_grad_, token_rows(state.tokens), state.grad_output);
  if (learned_positions_) {
    std::vector<Eigen::Index> positions(static_cast<std::size_t>(state.tokens.rows()));
    for (std::size_t row = 0; row < positions.size(); ++row) positions[row] = static_cast<Eigen::Index>(row) % seq_len_;
    scatter_add(positions_grad_, positions, state.grad_output);
  }
  states_.release(mb);
}

std::vector<Parameter> EmbeddingLayer::parameters() {
  std::vector<Parameter> result{{"table", &table_, &table_grad_}};
  if (learned_positions_) result.push_back({"positions", &positions_, &positions_grad_});
  return result;
}

// The LM head has its own weight even when the model ties it to the
// embedding: the two live on different pipeline stages, and keeping them
// equal would need a gradient all-reduce between those stages, which the
// CPU backend does not run. Per stage, time and memory are the same.
OutputLayer::OutputLayer(const models::ModelConfig& model, int microbatches, Rng& rng)
    : vocab_(model.vocab),
      microbatches_(microbatches),
      norm_("output.norm", model.norm == models::NormKind::kRmsNorm ? NormType::kRms : NormType::kLayer, model.hidden),
      head_("output.head", model.hidden, static_cast<int>(model.vocab), false, rng),
      states_("output") {}

void OutputLayer::set_targets(int mb, std::vector<int> targets) {
  for (const int target : targets) {
    if (target < 0 || target >= vocab_) {
      throw std::invalid_argument(fmt::format("output: target {} is not an id in [0, {})", target, vocab_));
    }
  }
  pending_targets_[mb] = std::move(targets);
}

Matrix OutputLayer::forward(int mb, const Matrix& input) {
  const auto pending = pending_targets_.find(mb);
  if (pending == pending_targets_.end() || pending->second.size() != static_cast<std::size_t>(input.rows())) {
    throw std::logic_error(fmt::format("output: forward of micro-batch {} needs set_targets with {} targets first",
                                       mb, input.rows()));
  }
  const Matrix normalized = norm_.forward(mb, input);
  Matrix probs = head_.forward(mb, normalized);  // the logits, turned into the softmax in place
  State& state = states_.begin_forward(mb);
  state.targets = std::move(pending->second);
  pending_targets_.erase(pending);
  double loss = 0;
  for (Eigen::Index row = 0; row < probs.rows(); ++row) {
    auto logits = probs.row(row).array();
    const float shift = logits.maxCoeff();
    // -log softmax = log(sum exp(l - shift)) - (l_target - shift), taken
    // before exponentiating so that an underflowing target stays finite.
    const double target_logit = logits(state.targets[static_cast<std::size_t>(row)]) - shift;
    logits = (logits - shift).exp();
    const double total = logits.cast<double>().sum();
    loss += std::log(total) - target_logit;
    logits /= static_cast<float>(total);
  }
  state.probs = std::move(probs);
  Matrix result(1, 1);
  result(0, 0) = static_cast<float>(loss / static_cast<double>(input.rows()));
  return result;
}

Matrix OutputLayer::backward_input(int mb, const Matrix&) {
  State& state = states_.for_input(mb);
  // dL/d(logits) = (softmax - onehot) / (tokens x microbatches).
  Matrix grad_logits = std::move(state.probs);
  for (Eigen::Index row = 0; row < grad_logits.rows(); ++row) {
    grad_logits(row, state.targets[static_cast<std::size_t>(row)]) -= 1.0f;
  }
  grad_logits *= static_cast<float>(1.0 / (static_cast<double>(grad_logits.rows()) * microbatches_));
  states_.release(mb);
  return norm_.backward_input(mb, head_.backward_input(mb, grad_logits));
}

void OutputLayer::backward_weight(int mb) {
  norm_.backward_weight(mb);
  head_.backward_weight(mb);
}

std::vector<Parameter> OutputLayer::parameters() {
  std::vector<Parameter> result;
  for (Parameter& parameter : norm_.parameters()) {
    parameter.name = fmt::format("norm.{}", parameter.name);
    result.push_back(parameter);
  }
  for (Parameter& parameter : head_.parameters()) {
    parameter.name = fmt::format("head.{}", parameter.name);
    result.push_back(parameter);
  }
  return result;
}

std::int64_t OutputLayer::held_bytes(int mb) const {
  const auto pending = pending_targets_.find(mb);
  const std::int64_t pending_bytes =
      pending == pending_targets_.end() ? 0 : static_cast<std::int64_t>(pending->second.size() * sizeof(int));
  return pending_bytes + states_.bytes(mb) + norm_.held_bytes(mb) + head_.held_bytes(mb);
}

}  // namespace pipeplan::profiler
