#include "sim/costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/error.h"

namespace pipeplan::sim {
namespace {

template <typename T>
T rank_value(const std::vector<T>& values, int rank, int ranks, std::string_view option) {
  if (values.size() == 1) return values.front();
  if (values.size() != static_cast<std::size_t>(ranks)) {
    throw InputError(fmt::format("--{} lists {} values but there are {} ranks: give one value or {}", option,
                                 values.size(), ranks, ranks));
  }
  return values[static_cast<std::size_t>(rank)];
}

std::int64_t scale_bytes(std::int64_t bytes, double factor) {
  return static_cast<std::int64_t>(std::llround(static_cast<double>(bytes) * factor));
}

}  // namespace

PipelineCosts expand_rank_costs(const RankCosts& costs, const Schedule& schedule) {
  PipelineCosts expanded;
  const int ranks = schedule.ranks;
  const double chunks = schedule.virtual_stages();
  const double scale = schedule.microbatch_scale;
  expanded.stages.resize(static_cast<std::size_t>(schedule.stages));
  for (int stage = 0; stage < schedule.stages; ++stage) {
    const int rank = schedule.rank_of(stage);
    StageCost& cost = expanded.stages[static_cast<std::size_t>(stage)];
    cost.forward_s = rank_value(costs.forward_s, rank, ranks, "tf") * scale / chunks;
    cost.backward_input_s = rank_value(costs.backward_input_s, rank, ranks, "tb") * scale / chunks;
    cost.backward_weight_s = rank_value(costs.backward_weight_s, rank, ranks, "tw") * scale / chunks;
    const std::int64_t activation = rank_value(costs.activation_bytes, rank, ranks, "act-bytes");
    const std::int64_t weight_grad = rank_value(costs.weight_grad_bytes, rank, ranks, "wgrad-bytes");
    if (weight_grad > activation) {
      throw InputError(fmt::format("--wgrad-bytes ({}) exceeds --act-bytes ({}) on rank {}: M_W is the part of "
                                   "M_B kept until W, so it cannot be larger",
                                   weight_grad, activation, rank));
    }
    cost.activation_bytes = scale_bytes(activation, scale / chunks);
    cost.weight_grad_bytes = scale_bytes(weight_grad, scale / chunks);
    cost.send_bytes = scale_bytes(rank_value(costs.send_bytes, rank, ranks, "p2p-bytes"), scale);
    const double recompute = rank_value(costs.recompute_s, rank, ranks, "tr");
    if (recompute > rank_value(costs.backward_input_s, rank, ranks, "tb")) {
      throw InputError(fmt::format("--tr ({} ms) exceeds --tb on rank {}: the recomputed forward is part of the "
                                   "input-gradient backward's time; give --tb with it included",
                                   recompute * 1e3, rank));
    }
    cost.recompute_s = recompute * scale / chunks;
    cost.recompute_bytes = scale_bytes(rank_value(costs.recompute_bytes, rank, ranks, "recompute-bytes"), scale / chunks);
  }
  expanded.static_bytes.resize(static_cast<std::size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) {
    expanded.static_bytes[static_cast<std::size_t>(rank)] = rank_value(costs.static_bytes, rank, ranks, "static-bytes");
  }
  return expanded;
}

double action_duration_s(const StageCost& cost, OpKind kind) {
  switch (kind) {
    case OpKind::kForward: return cost.forward_s;
    case OpKind::kBackward: return cost.backward_input_s + cost.backward_weight_s;
    case OpKind::kBackwardInput: return cost.backward_input_s;
    case OpKind::kBackwardWeight: return cost.backward_weight_s;
    case OpKind::kRecompute: return cost.recompute_s;
    default: return 0.0;
  }
}

double action_comm_s(const StageCost& cost, OpKind kind) {
  switch (kind) {
    case OpKind::kForward: return cost.forward_comm_s;
    case OpKind::kBackward:
    case OpKind::kBackwardInput: return cost.backward_input_comm_s;
    default: return 0.0;
  }
}

PairSaving pair_saving(const PipelineCosts& costs, const Action& first, const Action& second) {
  const StageCost& a = costs.stages[static_cast<std::size_t>(first.stage)];
  const StageCost& b = costs.stages[static_cast<std::size_t>(second.stage)];
  const double comm_a = action_comm_s(a, first.kind), comm_b = action_comm_s(b, second.kind);
  if (comm_a <= 0 && comm_b <= 0) return {};
  const double compute_a = std::max(0.0, action_duration_s(a, first.kind) - comm_a);
  const double compute_b = std::max(0.0, action_duration_s(b, second.kind) - comm_b);
  const double kept = 1 - costs.hidden_comm_slowdown;
  const double hidden_a = std::min(comm_a, compute_b), hidden_b = std::min(comm_b, compute_a);
  const double saved = (hidden_a + hidden_b) * kept;
  // The port carries both passes' communication and their messages one
  // after another: what it needs beyond the pair's time is saved no more.
  const double port = comm_a + comm_b + a.network_message_s + b.network_message_s;
  const double pair = action_duration_s(a, first.kind) + action_duration_s(b, second.kind) - saved;
  const double share = saved > 0 ? std::max(0.0, 1 - std::max(0.0, port - pair) / saved) : 0;
  return {hidden_a * kept * share, hidden_b * kept * share, hidden_a * share, hidden_b * share};
}

namespace {

// The action at `step`'s half of its pair: {time saved, communication hidden}.
std::pair<double, double> paired_half(const PipelineCosts& costs, const std::vector<Action>& actions,
                                      std::size_t step) {
  const Action& action = actions[step];
  if (!is_compute(action.kind)) return {0, 0};
  if (action.overlapped && step + 1 < actions.size() && is_compute(actions[step + 1].kind)) {
    const PairSaving pair = pair_saving(costs, action, actions[step + 1]);
    return {pair.first_s, pair.first_hidden_s};
  }
  if (step > 0 && actions[step - 1].overlapped) {
    const PairSaving pair = pair_saving(costs, actions[step - 1], action);
    return {pair.second_s, pair.second_hidden_s};
  }
  return {0, 0};
}

}  // namespace

double paired_saving_s(const PipelineCosts& costs, const std::vector<Action>& actions, std::size_t step) {
  return paired_half(costs, actions, step).first;
}

double paired_hidden_s(const PipelineCosts& costs, const std::vector<Action>& actions, std::size_t step) {
  return paired_half(costs, actions, step).second;
}

}  // namespace pipeplan::sim
